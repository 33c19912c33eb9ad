// ONNX's control flow: If, Loop and Scan run their subgraphs through the executor (the
// OpContext's SubgraphRunner), which lets a subgraph read the enclosing graphs' values. The
// conditions and trip counts are read back to the host: one wait per branch or iteration.
#include <algorithm>

#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Values = std::vector<Value>;

Tensor scalar_i64(int64_t value, Stream& stream) { return full({}, value, DType::i64, stream); }
Tensor scalar_bool(bool value, Stream& stream) { return full({}, value, DType::boolean, stream); }

std::string count(size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// Tensors of a subgraph's output `index` from each iteration, stacked along `axis` of the
// result (counted in its rank), in reverse order where `reverse`. With no iteration: [0] and
// the dimensions the subgraph declares where it declares them all.
Tensor stack(const OpContext& ctx, const std::vector<Tensor>& parts, int64_t axis, bool reverse,
             const ModelValue& declared) {
  if (parts.empty()) {
    Shape shape{0};
    for (const ModelDim& dim : declared.shape) {
      if (dim.size < 0) return empty({0}, declared.dtype, ctx.stream().device());
      shape.push_back(dim.size);
    }
    return empty(shape, declared.dtype, ctx.stream().device());
  }
  const int64_t at = ctx.axis(axis, parts[0].dim() + 1);
  std::vector<Tensor> expanded;
  for (const Tensor& part : parts) {
    if (part.shape() != parts[0].shape())
      ctx.invalid("scan output '" + declared.name + "' changes shape between iterations, " +
                  to_string(parts[0].shape()) + " then " + to_string(part.shape()));
    expanded.push_back(part.unsqueeze(at));
  }
  if (reverse) std::reverse(expanded.begin(), expanded.end());
  return concat(ctx, expanded, at);
}

Values if_op(const OpContext& ctx, const Values& in) {
  const bool cond = ctx.read_scalar(ctx.tensor(in, 0)) != 0;
  const char* attribute = cond ? "then_branch" : "else_branch";
  const ModelGraph& branch = ctx.subgraph(attribute);
  if (branch.outputs.size() != ctx.node().outputs.size())
    ctx.invalid(std::string(attribute) + " has " + count(branch.outputs.size(), "output") +
                ", the node " + std::to_string(ctx.node().outputs.size()));
  return ctx.run_subgraph(branch, {});
}

// Loop (opsets 1 to 16): inputs M (trip count) and cond, both optional, then N loop-carried
// values; the body takes (iteration, cond, N values) and gives (cond, N values, K scan
// outputs). The node gives the N final values and the K scan outputs stacked.
Values loop_op(const OpContext& ctx, const Values& in) {
  const ModelGraph& body = ctx.subgraph("body");
  const size_t carried = in.size() < 2 ? 0 : in.size() - 2;
  if (body.inputs.size() != carried + 2)
    ctx.invalid("body takes " + count(body.inputs.size(), "input") + "; a Loop with " +
                count(carried, "loop-carried value") + " gives it " + std::to_string(carried + 2));
  if (body.outputs.size() < carried + 1 || body.outputs.size() - 1 != ctx.node().outputs.size())
    ctx.invalid("body gives " + count(body.outputs.size(), "output") + "; a Loop with " +
                count(carried, "loop-carried value") + " and " +
                count(ctx.node().outputs.size(), "output") + " needs " +
                std::to_string(ctx.node().outputs.size() + 1));
  const size_t scans = body.outputs.size() - 1 - carried;
  Stream& s = ctx.stream();
  const bool bounded = given(in, 0);
  const int64_t trips = bounded ? ctx.read_int(ctx.tensor(in, 0)) : 0;
  bool cond = !given(in, 1) || ctx.read_scalar(ctx.tensor(in, 1)) != 0;
  Values state(in.begin() + std::min<std::ptrdiff_t>(2, std::ssize(in)), in.end());
  std::vector<std::vector<Tensor>> scanned(scans);
  for (int64_t i = 0; cond && (!bounded || i < trips); ++i) {
    Values body_in{scalar_i64(i, s), scalar_bool(cond, s)};
    body_in.insert(body_in.end(), state.begin(), state.end());
    Values out = ctx.run_subgraph(body, body_in);
    const Tensor& next = ctx.value_tensor(out[0], "the body's condition");
    // Without a cond input the body's condition is still read: ONNX stops on it either way.
    cond = ctx.read_scalar(next) != 0;
    std::move(out.begin() + 1, out.begin() + 1 + std::ptrdiff_t(carried), state.begin());
    for (size_t k = 0; k < scans; ++k)
      scanned[k].push_back(ctx.value_tensor(out[1 + carried + k], "a scan output"));
  }
  Values results = std::move(state);
  for (size_t k = 0; k < scans; ++k)
    results.push_back(stack(ctx, scanned[k], 0, false, body.outputs[1 + carried + k]));
  return results;
}

// One Scan over `state` and `inputs` (already without any batch axis): the body takes (N
// states, M slices) and gives (N states, K slices).
Values scan_once(const OpContext& ctx, const ModelGraph& body, Values state,
                 const std::vector<Tensor>& inputs, const std::vector<int64_t>& input_axes,
                 const std::vector<int64_t>& input_reverse) {
  const size_t n = state.size(), m = inputs.size();
  const size_t k = body.outputs.size() - n;
  int64_t length = -1;
  std::vector<int64_t> axes(m);
  for (size_t j = 0; j < m; ++j) {
    axes[j] = ctx.axis(j < input_axes.size() ? input_axes[j] : 0, inputs[j].dim());
    const int64_t size = inputs[j].size(axes[j]);
    if (length >= 0 && size != length)
      ctx.invalid("scan inputs differ in length along their axes, " + std::to_string(length) +
                  " and " + std::to_string(size));
    length = size;
  }
  if (m == 0) ctx.invalid("has no scan inputs");
  std::vector<std::vector<Tensor>> scanned(k);
  for (int64_t t = 0; t < length; ++t) {
    Values body_in = state;
    for (size_t j = 0; j < m; ++j) {
      const bool reverse = j < input_reverse.size() && input_reverse[j] != 0;
      const int64_t at = reverse ? length - 1 - t : t;
      body_in.push_back(
          inputs[j].slice(axes[j], at, at + 1).squeeze(axes[j]).contiguous(ctx.stream()));
    }
    Values out = ctx.run_subgraph(body, body_in);
    std::move(out.begin(), out.begin() + std::ptrdiff_t(n), state.begin());
    for (size_t o = 0; o < k; ++o)
      scanned[o].push_back(ctx.value_tensor(out[n + o], "a scan output"));
  }
  const std::vector<int64_t> output_axes = ctx.attr_ints("scan_output_axes");
  const std::vector<int64_t> output_reverse = ctx.attr_ints("scan_output_directions");
  Values results = std::move(state);
  for (size_t o = 0; o < k; ++o)
    results.push_back(stack(ctx, scanned[o], o < output_axes.size() ? output_axes[o] : 0,
                            o < output_reverse.size() && output_reverse[o] != 0,
                            body.outputs[n + o]));
  return results;
}

// Scan (opset 9 on): N state values then M scan inputs, each sliced along its
// scan_input_axes entry (reversed by scan_input_directions); opset 8's form has a batch axis
// first and sequence_lens, run here batch by batch where sequence_lens is left out.
Values scan_op(const OpContext& ctx, const Values& in) {
  const ModelGraph& body = ctx.subgraph("body");
  const bool batched = ctx.opset() < 9;
  const size_t first = batched ? 1 : 0;
  if (batched && given(in, 0)) ctx.unsupported("Scan-8 with sequence_lens");
  const int64_t m = ctx.attr_int("num_scan_inputs", -1);
  const size_t values = in.size() - first;
  if (m < 1 || static_cast<size_t>(m) > values)
    ctx.invalid("num_scan_inputs " + std::to_string(m) + " does not fit its " +
                count(values, "input"));
  const size_t n = values - static_cast<size_t>(m);
  if (body.inputs.size() != values || body.outputs.size() < n ||
      body.outputs.size() != ctx.node().outputs.size())
    ctx.invalid("body takes " + count(body.inputs.size(), "input") + " and gives " +
                count(body.outputs.size(), "output") + "; the node has " + count(values, "input") +
                " and " + count(ctx.node().outputs.size(), "output"));
  Values state(in.begin() + std::ptrdiff_t(first), in.begin() + std::ptrdiff_t(first + n));
  std::vector<Tensor> inputs;
  for (size_t j = first + n; j < in.size(); ++j) inputs.push_back(ctx.tensor(in, j));
  if (!batched)
    return scan_once(ctx, body, std::move(state), inputs, ctx.attr_ints("scan_input_axes"),
                     ctx.attr_ints("scan_input_directions"));
  // Opset 8: axis 0 is the batch, each batch entry scanned along its axis 0 (of the slice).
  if (ctx.has("scan_output_axes") || ctx.has("scan_output_directions"))
    ctx.invalid("Scan-8 has no scan_output_axes or scan_output_directions");
  const int64_t batch = inputs.at(0).size(0);
  std::vector<std::vector<Tensor>> per_output(ctx.node().outputs.size());
  for (int64_t b = 0; b < batch; ++b) {
    auto pick = [&](const Tensor& t) { return t.slice(0, b, b + 1).squeeze(0); };
    Values batch_state;
    for (const Value& v : state) batch_state.push_back(pick(ctx.value_tensor(v, "a state")));
    std::vector<Tensor> batch_inputs;
    for (const Tensor& t : inputs) batch_inputs.push_back(pick(t).contiguous(ctx.stream()));
    const Values out =
        scan_once(ctx, body, batch_state, batch_inputs, {}, ctx.attr_ints("directions"));
    for (size_t o = 0; o < out.size(); ++o)
      per_output[o].push_back(ctx.value_tensor(out[o], "an output"));
  }
  Values results;
  for (size_t o = 0; o < per_output.size(); ++o)
    results.push_back(stack(ctx, per_output[o], 0, false, body.outputs[o]));
  return results;
}

}  // namespace

std::vector<OnnxOp> control_flow_onnx_ops() {
  return {
      {"If", 1, nullptr, if_op},
      {"Loop", 1, nullptr, loop_op},
      {"Scan", 8, nullptr, scan_op},
  };
}

}  // namespace hal::model
