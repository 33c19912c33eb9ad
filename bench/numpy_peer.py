#!/usr/bin/python3
"""hal's CPU kernels against NumPy and PyTorch on the same data in the same run (issue #23).

Each figure is the median over repetitions of one call that waits for its result: hal's op then
a synchronize, NumPy's expression, PyTorch's function (torch.set_num_threads given hal's thread
count on cpu:0). Runs alternate hal and its peers, so all see the same machine. The ratio is hal's
time over the peer's (lower is better). A memory read (the faster of NumPy's and
PyTorch's sums of all of x, each streaming it once) is timed too, as the bandwidth the
reductions are set against.

Prints a table, or with --json (or --output FILE) a hal.bench/1 document.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/numpy_peer.py [--json]
"""

import argparse
import os
import statistics
import sys
import time

# PyTorch's OpenMP threads spin for a while after each call; in runs that alternate with hal's
# they would take the cores from hal's pool. Passive threads sleep instead (set before the
# import that starts them).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

import bench_document  # noqa: E402
import hal  # noqa: E402

N = 4096  # the square f32 matrices: 64 MiB each


def once(call, finish):
    start = time.perf_counter_ns()
    call()
    finish()
    return time.perf_counter_ns() - start


def medians(rounds, repeats):
    """Median nanoseconds per entry of `rounds` (name -> (call, finish)), runs alternating."""
    samples = {name: [] for name in rounds}
    for _ in range(repeats):
        for name, (call, finish) in rounds.items():
            samples[name].append(once(call, finish))
    return {name: statistics.median(times) for name, times in samples.items()}


def numpy_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    e /= e.sum(axis=1, keepdims=True)
    return e


def numpy_layer_norm(x, eps=1e-5):
    centred = x - x.mean(axis=1, keepdims=True)
    return centred / np.sqrt((centred * centred).mean(axis=1, keepdims=True) + eps)


def signal_models():
    """One-node ONNX models (python3-onnx): an STFT of 400-point Hann frames every 160 samples
    (an audio model's front end) and a DFT along axis 1."""
    from onnx import TensorProto, helper

    def build(node, inputs, rank, initializers=()):
        graph = helper.make_graph(
            [node], node.op_type, inputs,
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [f"y{d}" for d in range(rank)])],
            initializer=list(initializers))
        proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        return hal.load_onnx_bytes(proto.SerializeToString(), name=node.op_type)

    floats = lambda name, rank: helper.make_tensor_value_info(  # noqa: E731
        name, TensorProto.FLOAT, [f"{name}{d}" for d in range(rank)])
    stft = build(helper.make_node("STFT", ["x", "step", "w"], ["y"], onesided=1),
                 [floats("x", 3), floats("w", 1)], 4,
                 [helper.make_tensor("step", TensorProto.INT64, [], [160])])
    dft = build(helper.make_node("DFT", ["x"], ["y"], axis=1), [floats("x", 3)], 3)
    return stft, dft


def conv_transpose_model(weight, bias):
    """A one-node ONNX ConvTranspose of stride 2 and pads 1 (a generator's or decoder's
    upsampling layer), its weight and bias as initializers."""
    from onnx import TensorProto, helper

    value = lambda name: helper.make_tensor_value_info(  # noqa: E731
        name, TensorProto.FLOAT, [f"{name}{d}" for d in range(4)])
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2],
                            pads=[1, 1, 1, 1])
    graph = helper.make_graph(
        [node], "conv_transpose", [value("x")], [value("y")],
        initializer=[helper.make_tensor("w", TensorProto.FLOAT, weight.shape, weight.ravel()),
                     helper.make_tensor("b", TensorProto.FLOAT, bias.shape, bias)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return hal.load_onnx_bytes(proto.SerializeToString(), name="conv_transpose")


def training_step(leaves, forward, upstream):
    """A training step to time: the leaves' gradients cleared, forward(*leaves), its backward
    from `upstream` (hal's or PyTorch's tensors alike)."""
    def step():
        for leaf in leaves:
            leaf.grad = None
        forward(*leaves).backward(upstream)
    return step


def check(name, ours, theirs, rtol, atol):
    if not np.allclose(ours, theirs, rtol=rtol, atol=atol):
        worst = float(np.max(np.abs(ours.astype(np.float64) - theirs)))
        raise SystemExit(f"numpy_peer: {name}: hal's result differs from the peer's by {worst}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print a hal.bench/1 document")
    parser.add_argument("--output", help="write the hal.bench/1 document to this file")
    parser.add_argument("--repeats", type=int, default=15, help="timed runs of each")
    args = parser.parse_args()
    if not 1 <= args.repeats <= 1000:
        parser.error("--repeats is 1 to 1000")

    errors = []
    try:
        import torch
    except ImportError as error:
        errors.append({"benchmark": "torch", "message":
                       f"PyTorch is not installed (Debian: python3-torch): {error}"})
        torch = None

    cpu = hal.device("cpu:0")
    threads = int(cpu.info.get("compute_units", 0)) or 1
    stream = hal.current_stream(cpu)
    sync = stream.synchronize
    rng = np.random.default_rng(23)
    data = rng.standard_normal((N, N), dtype=np.float32)
    x = hal.tensor(data, device=cpu)
    isa = os.environ.get("HAL_CPU_ISA") or "the best this processor has"  # docs/ops.md

    # Results agree before anything is timed.
    check("sum rows", hal.sum(x, 1).numpy(), data.sum(axis=1, dtype=np.float64), 1e-4, 1e-3)
    check("sum cols", hal.sum(x, 0).numpy(), data.sum(axis=0, dtype=np.float64), 1e-4, 1e-3)
    check("softmax", hal.softmax(x, 1).numpy(), numpy_softmax(data), 1e-5, 1e-7)
    check("layer_norm", hal.layer_norm(x, [N]).numpy(), numpy_layer_norm(data), 1e-4, 1e-4)
    # Layout copies: a transpose, and a batch of images from NCHW to NHWC (3 channels last).
    images = rng.standard_normal((8, 3, 224, 224), dtype=np.float32)
    hal_images = hal.tensor(images, device=cpu)
    transpose = lambda: x.transpose(0, 1).contiguous()  # noqa: E731
    to_nhwc = lambda: hal_images.permute(0, 2, 3, 1).contiguous()  # noqa: E731
    check("transpose", transpose().numpy(), data.T, 0, 0)
    check("nchw to nhwc", to_nhwc().numpy(), images.transpose(0, 2, 3, 1), 0, 0)
    # A middle-axis maximum, a classifier's loss, an element function without a cheap identity.
    cube = rng.standard_normal((64, 512, 256), dtype=np.float32)
    hal_cube = hal.tensor(cube, device=cpu)
    logits = rng.standard_normal((8192, 1000), dtype=np.float32)
    targets = rng.integers(0, 1000, 8192)
    hal_logits = hal.tensor(logits, device=cpu)
    hal_targets = hal.tensor(targets.astype(np.int64), device=cpu)
    check("max over axis 1", hal.max(hal_cube, 1).numpy(), cube.max(axis=1), 0, 0)
    check("sin", hal.sin(x).numpy(), np.sin(data.astype(np.float64)), 1e-6, 1e-7)

    nothing = lambda: None  # noqa: E731
    # 30 s of 16 kHz audio through an STFT, and a DFT of a prime length (Bluestein's algorithm;
    # docs/models.md), against NumPy's FFT (and torch.stft below).
    audio = rng.standard_normal(480000, dtype=np.float32)
    hann = np.hanning(400).astype(np.float32)
    frames = lambda: np.lib.stride_tricks.sliding_window_view(audio, 400)[::160]  # noqa: E731
    signals = rng.standard_normal((4, 4099, 2), dtype=np.float32)
    complex_signals = signals[..., 0] + 1j * signals[..., 1]
    try:
        stft_model, dft_model = signal_models()
    except ImportError as error:
        errors.append({"benchmark": "stft", "message":
                       f"ONNX is not installed (Debian: python3-onnx): {error}"})
        stft_model = dft_model = None
    if stft_model is not None:
        stft_feeds = {"x": audio.reshape(1, -1, 1), "w": hann}
        [spectrum] = stft_model.run(stft_feeds, device=cpu).values()
        want = np.fft.rfft(frames() * hann, axis=-1)
        check("stft", spectrum.numpy()[0], np.stack((want.real, want.imag), -1), 0, 2e-4)
        [spectrum] = dft_model.run({"x": signals}, device=cpu).values()
        want = np.fft.fft(complex_signals, axis=1)
        check("dft 4099", spectrum.numpy(), np.stack((want.real, want.imag), -1), 0, 2e-3)
    upstream = rng.standard_normal((N, N), dtype=np.float32)
    hal_upstream = hal.tensor(upstream, device=cpu)
    hal_leaves = [hal.tensor(data, device=cpu).requires_grad_(),
                  hal.full([N], 1.0, device=cpu).requires_grad_(),
                  hal.full([N], 0.0, device=cpu).requires_grad_()]

    # A 3 x 3 convolution's training step (a ResNet block's size): forward, then the
    # gradients of x, the weights and the bias.
    conv_arrays = [rng.standard_normal((8, 64, 28, 28), dtype=np.float32),
                   rng.standard_normal((64, 64, 3, 3), dtype=np.float32) * 0.05,
                   rng.standard_normal(64, dtype=np.float32)]
    conv_upstream = rng.standard_normal((8, 64, 28, 28), dtype=np.float32)
    hal_conv = [hal.tensor(a, device=cpu).requires_grad_() for a in conv_arrays]
    hal_conv_upstream = hal.tensor(conv_upstream, device=cpu)

    hal_conv_train = training_step(
        hal_conv, lambda *a: hal.conv(*a, pads_before=[1, 1], pads_after=[1, 1]),
        hal_conv_upstream)

    # A ResNet stage's first, strided 3 x 3 convolution (x's gradient is a transposed
    # convolution) and a stride-2 ConvTranspose (4 x 4, 128 -> 64 channels, 28 -> 56).
    strided_arrays = [rng.standard_normal((8, 64, 56, 56), dtype=np.float32),
                      rng.standard_normal((128, 64, 3, 3), dtype=np.float32) * 0.05]
    strided_upstream = rng.standard_normal((8, 128, 28, 28), dtype=np.float32)
    hal_strided = [hal.tensor(a, device=cpu).requires_grad_() for a in strided_arrays]
    hal_strided_upstream = hal.tensor(strided_upstream, device=cpu)

    hal_strided_conv_train = training_step(
        hal_strided,
        lambda *a: hal.conv(*a, strides=[2, 2], pads_before=[1, 1], pads_after=[1, 1]),
        hal_strided_upstream)

    upsampling = [rng.standard_normal((8, 128, 28, 28), dtype=np.float32),
                  rng.standard_normal((128, 64, 4, 4), dtype=np.float32) * 0.05,
                  rng.standard_normal(64, dtype=np.float32)]
    try:
        upsampling_model = conv_transpose_model(*upsampling[1:])
    except ImportError:  # reported with the STFT's model above
        upsampling_model = None

    def hal_layer_norm_train():
        for leaf in hal_leaves:
            leaf.grad = None
        hal.layer_norm(hal_leaves[0], [N], weight=hal_leaves[1], bias=hal_leaves[2]).backward(
            hal_upstream)

    rounds = {
        "hal_sum_rows": (lambda: hal.sum(x, 1), sync),
        "numpy_sum_rows": (lambda: data.sum(axis=1), nothing),
        "hal_sum_cols": (lambda: hal.sum(x, 0), sync),
        "numpy_sum_cols": (lambda: data.sum(axis=0), nothing),
        "hal_softmax": (lambda: hal.softmax(x, 1), sync),
        "numpy_softmax": (lambda: numpy_softmax(data), nothing),
        "hal_layer_norm": (lambda: hal.layer_norm(x, [N]), sync),
        "numpy_layer_norm": (lambda: numpy_layer_norm(data), nothing),
        "hal_layer_norm_train": (hal_layer_norm_train, sync),
        "hal_conv_train": (hal_conv_train, sync),
        "hal_strided_conv_train": (hal_strided_conv_train, sync),
        "hal_transpose": (transpose, sync),
        "numpy_transpose": (lambda: np.ascontiguousarray(data.T), nothing),
        "hal_to_nhwc": (to_nhwc, sync),
        "numpy_to_nhwc": (lambda: np.ascontiguousarray(images.transpose(0, 2, 3, 1)), nothing),
        "hal_max_middle": (lambda: hal.max(hal_cube, 1), sync),
        "numpy_max_middle": (lambda: cube.max(axis=1), nothing),
        "hal_cross_entropy": (lambda: hal.cross_entropy(hal_logits, hal_targets), sync),
        "hal_sin": (lambda: hal.sin(x), sync),
        "numpy_sin": (lambda: np.sin(data), nothing),
        "numpy_stft": (lambda: np.fft.rfft(frames() * hann, axis=-1), nothing),
        "numpy_dft_prime": (lambda: np.fft.fft(complex_signals, axis=1), nothing),
    }
    if upsampling_model is not None:
        upsampling_feeds = {"x": upsampling[0]}
        rounds["hal_conv_transpose"] = (
            lambda: upsampling_model.run(upsampling_feeds, device=cpu), sync)
    if stft_model is not None:
        rounds["hal_stft"] = (lambda: stft_model.run(stft_feeds, device=cpu), sync)
        rounds["hal_dft_prime"] = (lambda: dft_model.run({"x": signals}, device=cpu), sync)
    if torch is not None:
        torch.set_num_threads(threads)
        t = torch.from_numpy(data)
        check("torch softmax", hal.softmax(x, 1).numpy(), torch.softmax(t, 1).numpy(), 1e-5, 1e-7)
        rounds["torch_softmax"] = (lambda: torch.softmax(t, 1), nothing)
        rounds["torch_layer_norm"] = (lambda: torch.layer_norm(t, [N]), nothing)
        # A layer_norm's training step: forward with weight and bias, backward for all three.
        t_leaves = [t.clone().requires_grad_(), torch.ones(N, requires_grad=True),
                    torch.zeros(N, requires_grad=True)]
        t_upstream = torch.from_numpy(upstream)

        def torch_layer_norm_train():
            for leaf in t_leaves:
                leaf.grad = None
            torch.layer_norm(t_leaves[0], [N], t_leaves[1], t_leaves[2]).backward(t_upstream)

        torch_layer_norm_train()
        hal_layer_norm_train()
        check("layer_norm backward", hal_leaves[0].grad.numpy(), t_leaves[0].grad.numpy(),
              1e-4, 1e-4)
        rounds["torch_layer_norm_train"] = (torch_layer_norm_train, nothing)
        t_conv = [torch.from_numpy(a).requires_grad_() for a in conv_arrays]
        t_conv_upstream = torch.from_numpy(conv_upstream)

        torch_conv_train = training_step(
            t_conv, lambda *a: torch.nn.functional.conv2d(*a, padding=1), t_conv_upstream)

        torch_conv_train()
        hal_conv_train()
        for name, ours, theirs in zip(("x", "w", "b"), hal_conv, t_conv):
            check("conv backward " + name, ours.grad.numpy(), theirs.grad.numpy(), 1e-3, 1e-3)
        rounds["torch_conv_train"] = (torch_conv_train, nothing)
        t_strided = [torch.from_numpy(a).requires_grad_() for a in strided_arrays]
        t_strided_upstream = torch.from_numpy(strided_upstream)

        torch_strided_conv_train = training_step(
            t_strided, lambda *a: torch.nn.functional.conv2d(*a, stride=2, padding=1),
            t_strided_upstream)

        torch_strided_conv_train()
        hal_strided_conv_train()
        for name, ours, theirs in zip(("x", "w"), hal_strided, t_strided):
            check("strided conv backward " + name, ours.grad.numpy(), theirs.grad.numpy(), 1e-3,
                  1e-2)
        rounds["torch_strided_conv_train"] = (torch_strided_conv_train, nothing)
        t_upsampling = [torch.from_numpy(a) for a in upsampling]
        torch_conv_transpose = lambda: torch.nn.functional.conv_transpose2d(  # noqa: E731
            *t_upsampling, stride=2, padding=1)
        if upsampling_model is not None:
            [y] = upsampling_model.run(upsampling_feeds, device=cpu).values()
            check("conv_transpose", y.numpy(), torch_conv_transpose().numpy(), 1e-4, 1e-4)
        rounds["torch_conv_transpose"] = (torch_conv_transpose, nothing)
        rounds["torch_sum_rows"] = (lambda: t.sum(1), nothing)
        rounds["torch_sum_cols"] = (lambda: t.sum(0), nothing)
        rounds["torch_transpose"] = (lambda: t.T.contiguous(), nothing)
        t_images = torch.from_numpy(images)
        rounds["torch_to_nhwc"] = (lambda: t_images.permute(0, 2, 3, 1).contiguous(), nothing)
        t_cube, t_logits = torch.from_numpy(cube), torch.from_numpy(logits)
        t_targets = torch.from_numpy(targets)
        loss = float(torch.nn.functional.cross_entropy(t_logits, t_targets))
        check("cross_entropy", hal.cross_entropy(hal_logits, hal_targets).numpy(), loss, 1e-5, 0)
        rounds["torch_max_middle"] = (lambda: t_cube.amax(1), nothing)
        rounds["torch_cross_entropy"] = (
            lambda: torch.nn.functional.cross_entropy(t_logits, t_targets), nothing)
        rounds["torch_sin"] = (lambda: torch.sin(t), nothing)
        t_audio, t_hann = torch.from_numpy(audio), torch.from_numpy(hann)
        rounds["torch_stft"] = (lambda: torch.stft(t_audio, 400, 160, window=t_hann, center=False,
                                                   return_complex=True), nothing)
        # A read: PyTorch's sum of all elements, on hal's thread count, streams x once.
        rounds["torch_read"] = (lambda: t.sum(), nothing)
    rounds["numpy_read"] = (lambda: data.sum(), nothing)  # NumPy's, on one thread
    medians(rounds, 2)  # warm up: caches, allocators, threads
    times = medians(rounds, args.repeats)
    # The memory read bandwidth: the faster of the two whole-array reads.
    times["read"] = min(times[name] for name in ("torch_read", "numpy_read") if name in times)

    read_gbs = N * N * 4 / times["read"]  # bytes per ns = GB/s
    figures = [  # name, hal's benchmark, the peer's, goal
        ("sum_rows_f32_4096", "hal_sum_rows", "numpy_sum_rows", "ratio <= 0.7"),
        ("sum_cols_f32_4096", "hal_sum_cols", "numpy_sum_cols", "ratio <= 0.7"),
        ("sum_rows_f32_4096_vs_read", "hal_sum_rows", "read", "ratio <= 1.25"),
        ("sum_cols_f32_4096_vs_read", "hal_sum_cols", "read", "ratio <= 1.25"),
        ("softmax_f32_4096", "hal_softmax", "numpy_softmax", "ratio <= 0.5"),
        ("softmax_f32_4096_vs_torch", "hal_softmax", "torch_softmax", "ratio <= 1.0"),
        ("layer_norm_f32_4096", "hal_layer_norm", "torch_layer_norm", "ratio <= 1.0"),
        ("layer_norm_f32_4096_vs_numpy", "hal_layer_norm", "numpy_layer_norm", ""),
        ("layer_norm_train_f32_4096_vs_torch", "hal_layer_norm_train", "torch_layer_norm_train",
         ""),
        ("conv_train_f32_8x64x28_vs_torch", "hal_conv_train", "torch_conv_train", ""),
        ("conv_s2_train_f32_8x64x56_vs_torch", "hal_strided_conv_train",
         "torch_strided_conv_train", ""),
        ("conv_transpose_f32_8x128x28_vs_torch", "hal_conv_transpose", "torch_conv_transpose",
         ""),
        ("sum_rows_f32_4096_vs_torch", "hal_sum_rows", "torch_sum_rows", ""),
        ("sum_cols_f32_4096_vs_torch", "hal_sum_cols", "torch_sum_cols", ""),
        ("transpose_f32_4096", "hal_transpose", "numpy_transpose", ""),
        ("transpose_f32_4096_vs_torch", "hal_transpose", "torch_transpose", ""),
        ("to_nhwc_f32_8x3x224", "hal_to_nhwc", "numpy_to_nhwc", ""),
        ("to_nhwc_f32_8x3x224_vs_torch", "hal_to_nhwc", "torch_to_nhwc", ""),
        ("max_axis1_f32_64x512x256", "hal_max_middle", "numpy_max_middle", ""),
        ("max_axis1_f32_64x512x256_vs_torch", "hal_max_middle", "torch_max_middle", ""),
        ("cross_entropy_f32_8192x1000_vs_torch", "hal_cross_entropy", "torch_cross_entropy", ""),
        ("sin_f32_4096", "hal_sin", "numpy_sin", ""),
        ("sin_f32_4096_vs_torch", "hal_sin", "torch_sin", ""),
        ("stft_f32_30s_16k", "hal_stft", "numpy_stft", ""),
        ("stft_f32_30s_16k_vs_torch", "hal_stft", "torch_stft", ""),
        ("dft_f32_4x4099_vs_numpy", "hal_dft_prime", "numpy_dft_prime", ""),
    ]
    results = []
    for name, ours, theirs, goal in figures:
        if theirs not in times or ours not in times:
            continue
        results.append({"name": name, "value": times[ours] / 1e6, "unit": "ms",
                        "baseline": theirs, "baseline_value": times[theirs] / 1e6,
                        "ratio": times[ours] / times[theirs], "better": "lower", "goal": goal})
    for name in ("hal_sum_rows", "hal_sum_cols"):
        gbs = N * N * 4 / times[name]
        results.append({"name": name.replace("hal_", "") + "_read_fraction", "value": gbs,
                        "unit": "GB/s", "baseline": "read", "baseline_value": read_gbs,
                        "ratio": gbs / read_gbs, "better": "higher", "goal": "ratio >= 0.8"})

    document = {"schema": "hal.bench/1", "suite": "numpy_peer", "device": "cpu:0",
                "threads": threads, "cpu_isa": isa, "results": results, "errors": errors}
    if not args.json:
        print(f"threads {threads}, hal's CPU kernels: {isa}")
    return bench_document.emit(
        document, args,
        f"{'figure':<38} {'hal':>10}    {'peer':>10}      {'ratio':>7}  peer / goal",
        lambda r: f"{r['name']:<38} {r['value']:10.3f} {r['unit']:<3} {r['baseline_value']:10.3f} "
                  f"{r['unit']:<5} {r['ratio']:7.3f}  {r['baseline']} / {r['goal']}")

if __name__ == "__main__":
    sys.exit(main())
