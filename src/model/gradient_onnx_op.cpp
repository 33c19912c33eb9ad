// ONNX's Gradient op (ai.onnx.preview.training, opset 1): d(y)/d(x) for each of xs by
// reverse-mode differentiation. Its inputs are xs and zs, then the forward values that
// gradient_graph.hpp appended at load; its nodes to differentiate are the graph in attribute
// kForwardAttribute. Walking those nodes last to first, each node's backward rule turns the
// gradients of its outputs into gradients of its inputs, summed where a value feeds several
// nodes; the seed is d(y)/d(y), ones shaped like y.
#include <map>
#include <set>

#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "model/gradient_graph.hpp"
#include "model/gradient_rules.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;
using Named = std::map<std::string, Tensor, std::less<>>;

// A rule's errors naming the forward node they come from.
template <class Body>
auto for_node(const Node& node, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error& error) {
    const std::string& message = error.message();
    const std::string prefix = node.describe();
    throw Error(
        error.code(),
        "backward of " + (message.rfind(prefix, 0) == 0 ? message : prefix + ": " + message),
        error.native_code());
  }
}

// One forward node's backward step: its outputs' gradients (taken out of `grads`) to its
// inputs' (added into `grads`).
void backward(const OpContext& ctx, const Node& node, const Named& values,
              const std::set<std::string, std::less<>>& depends, Named& grads) {
  Stream& s = ctx.stream();
  auto value = [&](const std::string& name) {
    const auto found = values.find(name);
    if (found == values.end())
      throw Error(ErrorCode::Internal, "forward value '" + name + "' was not kept for it");
    return found->second;
  };
  std::vector<Tensor> outputs, dys;
  bool flows = false;
  for (const std::string& name : node.outputs) {
    outputs.push_back(name.empty() ? Tensor() : value(name));
    const auto grad = grads.find(name);
    dys.push_back(grad == grads.end() ? Tensor() : grad->second);
    flows = flows || dys.back().defined();
    if (grad != grads.end()) grads.erase(grad);  // every reader of it is done
  }
  if (!flows) return;
  for (size_t o = 0; o < dys.size(); ++o)
    if (!dys[o].defined() && outputs[o].defined())
      dys[o] = zeros(outputs[o].shape(), outputs[o].dtype(), s);
  std::vector<Tensor> inputs;
  std::vector<bool> wanted;
  for (const std::string& name : node.inputs) {
    inputs.push_back(name.empty() ? Tensor() : value(name));
    wanted.push_back(!name.empty() && depends.contains(name) && is_floating(inputs.back().dtype()));
  }
  const BackwardRule rule = find_backward_rule(node.op_type);
  if (!rule) ctx.unsupported("hal has no gradient rule for " + node.describe());
  const OpContext forward_ctx(node, s);
  const std::vector<Tensor> dxs = for_node(node, [&] {
    return rule({forward_ctx, inputs, outputs, dys, wanted});
  });
  for (size_t i = 0; i < inputs.size() && i < dxs.size(); ++i) {
    if (!wanted[i] || !dxs[i].defined()) continue;
    if (dxs[i].shape() != inputs[i].shape())
      throw Error(ErrorCode::Internal, "backward of " + node.describe() + " gave input " +
                                           std::to_string(i) + " a gradient of shape " +
                                           to_string(dxs[i].shape()) + ", not " +
                                           to_string(inputs[i].shape()));
    auto [sum, fresh] = grads.try_emplace(node.inputs[i], dxs[i]);
    if (!fresh) sum->second = add(sum->second, dxs[i], s);
  }
}

Outputs gradient(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Node& node = ctx.node();
  const ModelGraph& forward = ctx.subgraph(kForwardAttribute);
  const std::vector<std::string> xs = ctx.attr_strings("xs");
  const std::string y = ctx.attr_string("y", "");
  Named values;
  for (size_t i = 0; i < node.inputs.size() && i < in.size(); ++i)
    values.emplace(node.inputs[i], in[i]);
  for (const std::string& x : xs) {
    const Tensor& value = values.at(x);
    if (!is_floating(value.dtype()))
      ctx.invalid("xs names '" + x + "', " + value.describe() + "; gradients are of floats");
  }
  const Tensor& target = values.at(y);
  if (!is_floating(target.dtype()))
    ctx.invalid("y names '" + y + "', " + target.describe() + "; gradients are of floats");

  // Gradients flow only into values computed from xs.
  std::set<std::string, std::less<>> depends(xs.begin(), xs.end());
  for (const Node& f : forward.nodes)
    for (const std::string& input : f.inputs)
      if (depends.contains(input)) {
        depends.insert(f.outputs.begin(), f.outputs.end());
        break;
      }
  Named grads;
  grads.emplace(y, full(target.shape(), 1.0, target.dtype(), s));
  for (auto f = forward.nodes.rbegin(); f != forward.nodes.rend(); ++f)
    backward(ctx, *f, values, depends, grads);

  Outputs out;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i].empty()) {
      out.emplace_back();
      continue;
    }
    const Tensor& x = values.at(xs[i]);
    const auto grad = grads.find(xs[i]);
    // An x that y does not depend on through the nodes: a zero gradient.
    out.push_back(grad == grads.end() ? zeros(x.shape(), x.dtype(), s)
                                      : as_dtype(grad->second, x.dtype(), s).contiguous(s));
  }
  return out;
}

}  // namespace

std::vector<OnnxOp> gradient_onnx_ops() {
  return {{.op_type = "Gradient", .since = 1, .run = gradient, .domain = kTrainingDomain}};
}

}  // namespace hal::model
