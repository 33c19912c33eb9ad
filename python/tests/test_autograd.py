"""Training from Python: gradients of hal's ops against torch.autograd, grad mode scopes, the
optimizers of hal.optim against torch.optim step by step, and refusals by code and message."""

import threading

import numpy as np
import pytest

import hal
import hal.optim
from hal.optim import SGD, AdamW

from conftest import assert_close


def leaf(array, device="cpu:0"):
    return hal.tensor(np.asarray(array, dtype=np.float32), device=device).requires_grad_()


def torch_leaf(torch, array):
    return torch.tensor(np.asarray(array, dtype=np.float32), requires_grad=True)


def mlp_loss(lib, x, w1, b1, w2, b2, targets):
    """The same two-layer classifier in hal and in torch: gelu, tanh, cross-entropy."""
    if lib is hal:
        hidden = hal.gelu(x @ w1 + b1)
        logits = hal.tanh(hidden) @ w2 + b2
        return hal.cross_entropy(logits, targets)
    import torch.nn.functional as F

    hidden = F.gelu(x @ w1 + b1)
    logits = lib.tanh(hidden) @ w2 + b2
    return F.cross_entropy(logits, targets)


def mlp_data(rng):
    return dict(
        x=rng.standard_normal((8, 5)), w1=rng.standard_normal((5, 6)) * 0.5,
        b1=rng.standard_normal(6) * 0.1, w2=rng.standard_normal((6, 3)) * 0.5,
        b2=rng.standard_normal(3) * 0.1, targets=rng.integers(0, 3, 8))


def test_gradients_of_a_classifier_match_torch(torch, rng):
    data = mlp_data(rng)
    names = ("w1", "b1", "w2", "b2")
    ours = {n: leaf(data[n]) for n in names}
    theirs = {n: torch_leaf(torch, data[n]) for n in names}
    x = hal.tensor(data["x"].astype(np.float32), device="cpu:0")
    loss = mlp_loss(hal, x, **ours, targets=hal.tensor(data["targets"], device="cpu:0"))
    expected = mlp_loss(torch, torch.tensor(data["x"], dtype=torch.float32), **theirs,
                        targets=torch.tensor(data["targets"]))
    assert loss.grad_fn == "cross_entropy" and not loss.is_leaf
    loss.backward()
    expected.backward()
    assert_close(loss.numpy(), expected.detach().numpy())
    for n in names:
        assert ours[n].grad.shape == tuple(theirs[n].grad.shape), n
        assert_close(ours[n].grad.numpy(), theirs[n].grad.numpy())


@pytest.mark.parametrize("op", ["relu", "sigmoid", "exp", "sqrt", "softmax", "log_softmax"])
def test_an_explicit_gradient_flows_as_in_torch(torch, rng, op):
    values = rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
    upstream = rng.standard_normal((3, 4)).astype(np.float32)
    x, tx = leaf(values), torch_leaf(torch, values)
    y = getattr(hal, op)(x)
    ty = getattr(torch, op)(tx, -1) if "softmax" in op else getattr(torch, op)(tx)
    y.backward(hal.tensor(upstream, device="cpu:0"))
    ty.backward(torch.tensor(upstream))
    assert_close(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("shape,normalized,x_grad", [
    ((4, 37), (37,), True), ((2, 3, 8), (3, 8), True), ((301, 45), (45,), True),
    ((301, 45), (45,), False)])
def test_layer_norm_gradients_match_torch(torch, rng, shape, normalized, x_grad):
    """x's gradient, and the weight's and bias's summed over the leading dimensions in the same
    pass (the CPU's row kernel, rows in parts: 301 rows make several a part, 45 columns a vector
    tail), each against torch.autograd; with x frozen, the parameters' alone."""
    values = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    upstream = rng.standard_normal(shape).astype(np.float32)
    weight = rng.uniform(0.5, 2.0, normalized).astype(np.float32)
    bias = rng.standard_normal(normalized).astype(np.float32)
    ours = [leaf(v) for v in (values, weight, bias)]
    theirs = [torch_leaf(torch, v) for v in (values, weight, bias)]
    if not x_grad:
        ours[0] = hal.tensor(values, device="cpu:0")
        theirs[0] = torch.tensor(values)
    y = hal.layer_norm(ours[0], list(normalized), weight=ours[1], bias=ours[2])
    assert y.grad_fn == "layer_norm"
    y.backward(hal.tensor(upstream, device="cpu:0"))
    torch.layer_norm(theirs[0], normalized, theirs[1], theirs[2]).backward(
        torch.tensor(upstream))
    for name, a, b in zip(("x", "weight", "bias"), ours, theirs):
        if name == "x" and not x_grad:
            assert a.grad is None
            continue
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4,
                                   err_msg=name)


@pytest.mark.parametrize("stride,dilation,padding,groups", [
    (1, 1, 1, 1), (2, 1, 0, 1), (2, 2, 3, 2), (1, 1, 2, 4)])
def test_conv_gradients_match_torch(torch, rng, stride, dilation, padding, groups):
    """x's gradient as a transposed convolution (oneDNN's deconvolution on cpu:0 in f32), the
    weight's as a convolution (groups: per kernel offset), the bias's as a sum, each against
    torch.autograd's conv2d."""
    values = rng.standard_normal((2, 4, 11, 10)).astype(np.float32)
    weight = (rng.standard_normal((8, 4 // groups, 3, 3)) * 0.3).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    ours = [leaf(v) for v in (values, weight, bias)]
    theirs = [torch_leaf(torch, v) for v in (values, weight, bias)]
    expected = torch.nn.functional.conv2d(*theirs, stride=stride, padding=padding,
                                          dilation=dilation, groups=groups)
    y = hal.conv(*ours, strides=[stride] * 2, dilations=[dilation] * 2,
                 pads_before=[padding] * 2, pads_after=[padding] * 2, groups=groups)
    assert y.shape == tuple(expected.shape)
    upstream = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(hal.tensor(upstream, device="cpu:0"))
    expected.backward(torch.tensor(upstream))
    for name, a, b in zip(("x", "weight", "bias"), ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4,
                                   err_msg=name)


def test_conv_gradients_of_mixed_dtypes_and_strides_past_the_kernel(torch, rng):
    """x in f32, the weight in f64 (the result f64), a 1 x 1 kernel at stride 3: the phases of
    x's gradient that no tap reaches are zeros of the promoted dtype, as the others are (a
    concatenation of f32 zeros with f64 phases was refused)."""
    values = rng.standard_normal((2, 4, 8, 7)).astype(np.float32)
    weight = rng.standard_normal((5, 4, 1, 1))
    ours = [hal.tensor(a, device="cpu:0").requires_grad_() for a in (values, weight)]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (values, weight)]
    y = hal.conv(*ours, strides=[3, 3])
    expected = torch.nn.functional.conv2d(*theirs, stride=3)
    assert y.dtype == hal.f64 and y.shape == tuple(expected.shape)
    upstream = rng.standard_normal(y.shape)
    y.backward(hal.tensor(upstream, device="cpu:0"))
    expected.backward(torch.tensor(upstream))
    assert ours[0].grad.dtype == hal.f32 and ours[1].grad.dtype == hal.f64
    for name, a, b in zip(("x", "weight"), ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def test_gradients_accumulate_and_clear(rng):
    w = leaf([1.0, 2.0, 3.0])
    for _ in range(2):
        (w * w).sum().backward()
    assert_close(w.grad.numpy(), [4.0, 8.0, 12.0])  # 2 * (2w)
    w.grad = None
    assert w.grad is None
    w.grad = hal.full([3], 0.5, device="cpu:0")
    (w * 2.0).sum().backward()
    assert_close(w.grad.numpy(), [2.5, 2.5, 2.5])


def test_a_second_backward_needs_retain_graph():
    w = leaf([1.0, 2.0])
    y = (w.exp() * 3.0).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert_close(w.grad.numpy(), 6.0 * np.exp([1.0, 2.0], dtype=np.float32))
    with pytest.raises(hal.InvalidState, match="a second time: its saved tensors were released"):
        y.backward()


def test_backward_refusals_name_the_tensor():
    w = leaf([[1.0, 2.0]])
    with pytest.raises(hal.InvalidArgument, match=r"without a gradient: only a single-element"):
        (w * 2.0).backward()
    with pytest.raises(hal.InvalidArgument, match="which does not require grad"):
        hal.ones([1], device="cpu:0").backward()
    with pytest.raises(hal.InvalidArgument, match="gradient must be a hal.Tensor, not 3"):
        (w * 2.0).backward(3)
    with pytest.raises(hal.InvalidArgument, match="gradient"):
        (w * 2.0).backward(hal.ones([2, 1], device="cpu:0"))
    with pytest.raises(hal.InvalidArgument, match="floating"):
        hal.arange(3, device="cpu:0").requires_grad_()
    with pytest.raises(hal.InvalidArgument, match="detach"):
        (w * 2.0).requires_grad = False
    with pytest.raises(hal.InvalidArgument, match="must be a hal.Tensor or None"):
        w.grad = [1.0, 2.0]
    with pytest.raises(hal.InvalidArgument, match="shape"):
        w.grad = hal.ones([3], device="cpu:0")


def test_detach_and_requires_grad():
    w = leaf([1.0, 2.0])
    assert w.requires_grad and w.is_leaf and w.grad_fn is None
    y = w * 2.0
    assert y.requires_grad and y.grad_fn == "mul"
    d = y.detach()
    assert not d.requires_grad and d.is_leaf
    assert_close(d.numpy(), [2.0, 4.0])
    plain = hal.ones([2], device="cpu:0")
    plain.requires_grad = True
    assert plain.requires_grad
    plain.requires_grad = False
    assert not plain.requires_grad and not (plain * 2.0).requires_grad


def test_no_grad_scopes_nest_and_decorate():
    w = leaf([1.0])
    assert hal.is_grad_enabled()
    with hal.no_grad():
        assert not hal.is_grad_enabled()
        assert not (w * 2.0).requires_grad
        with hal.enable_grad():
            assert (w * 2.0).requires_grad
        assert not hal.is_grad_enabled()
    assert hal.is_grad_enabled()

    @hal.no_grad()
    def inference(t):
        return t * 2.0, hal.is_grad_enabled()

    result, enabled = inference(w)
    assert not enabled and not result.requires_grad and hal.is_grad_enabled()
    assert inference.__name__ == "inference" and inference.__wrapped__ is not None

    class Module:
        @hal.no_grad()
        def forward(self, t):
            """Doubles t."""
            return t * 2.0

    assert not Module().forward(w).requires_grad  # a method gets its self
    assert Module.forward.__doc__ == "Doubles t."

    @hal.no_grad()
    def steps(t):
        received = yield (t * 2.0).requires_grad
        yield received, hal.is_grad_enabled()

    walk = steps(w)
    assert next(walk) is False and hal.is_grad_enabled()  # the body ran without grad
    assert walk.send("sent") == ("sent", False)
    with pytest.raises(ValueError, match="into the generator"):
        walk.throw(ValueError("into the generator"))
    assert hal.is_grad_enabled()
    # set_grad_enabled: at once as a call, until set again; as a with-block, undone at its end.
    hal.set_grad_enabled(False)
    assert not hal.is_grad_enabled() and not (w * 2.0).requires_grad
    seen = []
    thread = threading.Thread(target=lambda: seen.append(hal.is_grad_enabled()))
    thread.start()
    thread.join()
    assert seen == [True]  # per thread
    with hal.set_grad_enabled(True):
        assert (w * 2.0).requires_grad
    assert not hal.is_grad_enabled()
    hal.set_grad_enabled(True)
    with hal.set_grad_enabled(False):
        assert not hal.is_grad_enabled()
    assert hal.is_grad_enabled()
    scope = hal.no_grad()
    assert isinstance(scope, hal.GradMode) and isinstance(hal.enable_grad(), hal.GradMode)
    with scope:
        with pytest.raises(hal.InvalidState, match=r"hal.no_grad\(\) is already entered"):
            scope.__enter__()
    assert hal.is_grad_enabled()


def test_grad_mode_is_per_thread():
    seen = []
    inside, leave = threading.Event(), threading.Event()

    def other():
        with hal.no_grad():
            inside.set()
            leave.wait(10)
            seen.append(hal.is_grad_enabled())

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(10)
    assert hal.is_grad_enabled()  # the other thread's scope is its own
    assert (leaf([1.0]) * 2.0).requires_grad
    leave.set()
    thread.join()
    assert seen == [False]


def test_many_threads_accumulate_into_one_leaf():
    w = leaf(np.arange(4))
    threads, errors = 8, []

    def work():
        try:
            stream = hal.Stream(w.device)
            with stream:  # forward and backward on this thread's own stream
                for _ in range(10):
                    (w * 3.0).sum().backward()
            stream.synchronize()
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert not errors
    assert_close(w.grad.numpy(), np.full(4, 3.0 * 10 * threads))


def test_a_step_between_forward_and_backward_is_refused():
    w = leaf([1.0, 2.0])
    opt = SGD([w], lr=0.1)
    (w * w).sum().backward()
    y = (w * w).sum()
    version = w.version
    opt.step()
    assert w.version == version + 1
    with pytest.raises(hal.InvalidState, match="'mul': its saved input 0.*modified by an in-place"):
        y.backward()


def test_sgd_and_adamw_follow_torch_optim_step_by_step(torch, rng):
    data = mlp_data(rng)
    names = ("w1", "b1", "w2", "b2")
    x, tx = hal.tensor(data["x"].astype(np.float32), device="cpu:0"), torch.tensor(
        data["x"], dtype=torch.float32)
    targets, ttargets = hal.tensor(data["targets"], device="cpu:0"), torch.tensor(data["targets"])
    for make, make_torch in [
        (lambda p: SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-3, nesterov=True),
         lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-3, nesterov=True)),
        (lambda p: AdamW(p, lr=0.01, betas=(0.8, 0.99), weight_decay=0.05),
         lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.8, 0.99), weight_decay=0.05)),
    ]:
        ours = {n: leaf(data[n]) for n in names}
        theirs = {n: torch_leaf(torch, data[n]) for n in names}
        opt, topt = make(ours), make_torch(list(theirs.values()))
        assert [name for name, _ in opt.parameters] == list(names)
        for step in range(8):
            opt.zero_grad()
            topt.zero_grad()
            loss = mlp_loss(hal, x, **ours, targets=targets)
            tloss = mlp_loss(torch, tx, **theirs, targets=ttargets)
            loss.backward()
            tloss.backward()
            opt.step()
            topt.step()
            assert_close(loss.numpy(), tloss.detach().numpy())
        assert opt.steps == 8
        for n in names:
            np.testing.assert_allclose(ours[n].numpy(), theirs[n].detach().numpy(), rtol=1e-4,
                                       atol=1e-5)
        assert loss.item() < mlp_loss(hal, x, **{n: leaf(data[n]) for n in names},
                                      targets=targets).item()


def test_clip_grad_norm_matches_torch(torch, rng):
    values = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    ours = [leaf(v) for v in values]
    theirs = [torch_leaf(torch, v) for v in values]
    for p, tp in zip(ours, theirs):
        (p * p).sum().backward()
        (tp * tp).sum().backward()
    norm = hal.optim.clip_grad_norm_(ours, max_norm=1.5)
    tnorm = torch.nn.utils.clip_grad_norm_(theirs, max_norm=1.5)
    assert_close(norm.numpy(), tnorm.numpy())
    for p, tp in zip(ours, theirs):
        assert_close(p.grad.numpy(), tp.grad.numpy())


def test_a_frozen_parameter_trains_again_when_thawed():
    w = leaf([1.0, 2.0])
    opt = SGD([w], lr=1.0)
    (w * w).sum().backward()
    w.requires_grad = False  # frozen, as torch's: nothing records, .grad stays
    assert not (w * 2.0).requires_grad
    assert_close(w.grad.numpy(), [2.0, 4.0])
    opt.zero_grad()
    assert w.grad is None
    w.requires_grad = True
    (w * w).sum().backward()
    opt.step()
    assert_close(w.numpy(), [-1.0, -2.0])
    b = leaf([1.0])
    b.requires_grad = False
    assert SGD([w, b]).parameters[1][0] == "1"  # an optimizer takes a frozen leaf
    b2 = leaf([5.0])
    loss2 = (b2 * 3.0).sum()
    b2.requires_grad = False  # frozen after forward: backward gives it nothing
    loss2.backward()
    assert b2.grad is None


def test_parameters_come_as_a_list_pairs_or_a_dict():
    a, b = leaf([1.0]), leaf([2.0])
    assert [n for n, _ in SGD([a, b]).parameters] == ["0", "1"]
    assert [n for n, _ in SGD([("first", a), ("second", b)]).parameters] == ["first", "second"]
    assert [n for n, _ in AdamW({"x": a}).parameters] == ["x"]
    opt = SGD([a])
    assert isinstance(opt, hal.optim.Optimizer) and opt.steps == 0
    opt.lr = 0.5
    assert opt.lr == 0.5


def test_optimizer_refusals_name_what_was_wrong():
    a = leaf([1.0])
    with pytest.raises(hal.InvalidArgument, match="hal.optim.SGD: the parameter list is empty"):
        SGD([])
    with pytest.raises(hal.InvalidArgument, match="not one tensor f32"):
        SGD(a)
    with pytest.raises(hal.InvalidArgument, match=r"AdamW: a parameter must be a hal.Tensor .* not 3"):
        AdamW([a, 3])
    with pytest.raises(hal.InvalidArgument, match=r"a \(name, hal.Tensor\) pair, not \(hal.Tensor"):
        SGD([(a, leaf([2.0]))])  # two tensors, not a name and a tensor
    with pytest.raises(hal.InvalidArgument, match="'0' and '1' are the same tensor"):
        SGD([a, a])
    with pytest.raises(hal.InvalidArgument, match="must be a contiguous leaf that requires grad"):
        SGD([a * 2.0])
    with pytest.raises(hal.InvalidArgument, match="learning rate"):
        SGD([a]).lr = -1.0
    with pytest.raises(hal.InvalidArgument, match="max_norm"):
        hal.optim.clip_grad_norm_([a], max_norm=0.0)


def other_devices():
    return [d for d in hal.devices() if not d.id.startswith("cpu") and hal.supports_op(d, "mul", "f32")]


def test_gradients_and_clipping_across_devices():
    if not other_devices():
        pytest.skip("no device besides cpu:0 runs mul here")
    there = other_devices()[0]
    x = leaf(np.ones(1 << 16), device=there.id)
    (x.cpu() * 3.0).sum().backward()
    # Read at once on the device's current stream: backward has finished its work there.
    np.testing.assert_array_equal(x.grad.numpy(), np.full(1 << 16, 3.0, np.float32))
    a, b = leaf([0.0, 0.0]), leaf([0.0, 0.0], device=there.id)
    a.grad = hal.tensor(np.array([3.0, 0.0], np.float32), device="cpu:0")
    b.grad = hal.tensor(np.array([0.0, 4.0], np.float32), device=there.id)
    assert_close(hal.optim.clip_grad_norm_([a, b], max_norm=1.0).numpy(), 5.0)
    assert_close(b.grad.numpy(), [0.0, 4.0 / 5.0])
    with pytest.raises(hal.InvalidArgument, match=f"parameters on cpu:0 and {there.id}.*one optimizer per device"):
        SGD([a, b]).step()


def test_training_on_another_device_matches_cpu(device, rng):
    if device.id.startswith("cpu") or not all(
            hal.supports_op(device, op, "f32") for op in ("gelu", "cross_entropy")):
        pytest.skip(f"{device.id}: the cpu reference itself, or no gelu or cross_entropy there")
    data = mlp_data(rng)
    names = ("w1", "b1", "w2", "b2")
    losses = {}
    for where in ("cpu:0", device.id):
        params = {n: leaf(data[n], where) for n in names}
        opt = SGD(params, lr=0.2, momentum=0.5)
        x = hal.tensor(data["x"].astype(np.float32), device=where)
        targets = hal.tensor(data["targets"], device=where)
        for _ in range(3):
            opt.zero_grad()
            loss = mlp_loss(hal, x, **params, targets=targets)
            loss.backward()
            opt.step()
        losses[where] = (loss.item(), params["w1"].numpy())
    np.testing.assert_allclose(losses[device.id][0], losses["cpu:0"][0], rtol=1e-3)
    np.testing.assert_allclose(losses[device.id][1], losses["cpu:0"][1], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("x_shape,w_shape,stride,padding,output_padding,groups,dilation", [
    ((2, 8, 7, 6), (8, 4, 4, 4), 2, 1, 0, 1, 1),    # a decoder's upsampling (oneDNN on cpu:0)
    ((1, 6, 5, 4), (6, 2, 3, 3), 2, 1, 1, 3, 1),    # groups, output_padding within the stride
    ((2, 3, 9), (3, 2, 3), 1, 2, 2, 1, 3),          # output_padding past the stride, dilated
    ((1, 4, 3, 4, 3), (4, 2, 2, 3, 2), (2, 1, 2), (1, 1, 1), (1, 0, 0), 2, 1),
])
def test_conv_transpose_matches_torch(torch, rng, x_shape, w_shape, stride, padding,
                                      output_padding, groups, dilation):
    """conv_transpose against torch's conv_transposeNd: the result and the gradients of x, the
    weight and the bias for one upstream gradient."""
    spatial = len(x_shape) - 2
    per_dim = (lambda v: list(v) if isinstance(v, tuple) else [v] * spatial)
    values = [rng.standard_normal(x_shape), rng.standard_normal(w_shape) * 0.5,
              rng.standard_normal(w_shape[1] * groups)]
    ours = [leaf(v) for v in values]
    theirs = [torch_leaf(torch, v) for v in values]
    y = hal.conv_transpose(ours[0], ours[1], ours[2], strides=per_dim(stride),
                           dilations=per_dim(dilation), pads_before=per_dim(padding),
                           pads_after=per_dim(padding), output_padding=per_dim(output_padding),
                           groups=groups)
    torch_op = getattr(torch.nn.functional, f"conv_transpose{spatial}d")
    ty = torch_op(*theirs, stride=stride, padding=padding, output_padding=output_padding,
                  groups=groups, dilation=dilation)
    assert y.shape == tuple(ty.shape) and y.grad_fn == "conv_transpose"
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    upstream = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    y.backward(hal.tensor(upstream, device="cpu:0"))
    ty.backward(torch.tensor(upstream))
    for name, a, b in zip(("x", "weight", "bias"), ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4,
                                   err_msg=name)


def test_conv_transpose_refuses_what_does_not_fit():
    x = hal.zeros((1, 4, 5, 5), device="cpu:0")
    with pytest.raises(hal.InvalidArgument, match=r"conv_transpose of .*\[C, M/groups"):
        hal.conv_transpose(x, hal.zeros((3, 2, 3, 3), device="cpu:0"))
    with pytest.raises(hal.InvalidArgument, match="output_padding .* below the stride"):
        hal.conv_transpose(x, hal.zeros((4, 2, 3, 3), device="cpu:0"), strides=[2, 2],
                           output_padding=[0, 2])
