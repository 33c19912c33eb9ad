// FusedElementwise, the node a chain of elementwise nodes becomes at load
// (elementwise_fusion.hpp): one fused_elementwise where the device has the kernel and the
// inputs share its dtype, else the chain's nodes one by one, as the model had them.
#include <map>

#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

bool runs_fused(const std::vector<Tensor>& in) {
  for (const Tensor& x : in)
    if (!x.defined() || x.dtype() != in[0].dtype() || !(x.device() == in[0].device())) return false;
  return supports_op(in[0].device(), "fused_elementwise", in[0].dtype());
}

std::vector<Tensor> fused_elementwise_node(const OpContext& ctx, const std::vector<Tensor>& in) {
  const Node& node = ctx.node();
  if (!node.chain) ctx.invalid("a FusedElementwise node without its chain");
  const ElementwiseChain& chain = *node.chain;
  if (!in.empty() && runs_fused(in)) return {fused_elementwise(chain.program, in, ctx.stream())};
  std::map<std::string, Tensor, std::less<>> values;
  for (size_t i = 0; i < in.size() && i < node.inputs.size(); ++i) values[node.inputs[i]] = in[i];
  for (const Node& step : chain.nodes) {
    std::vector<Tensor> args;
    for (const std::string& input : step.inputs) args.push_back(values.at(input));
    values[step.outputs[0]] = step.op->run(OpContext(step, ctx.stream()), args).at(0);
  }
  return {values.at(chain.nodes.back().outputs[0])};
}

}  // namespace

const OnnxOp& fused_elementwise_onnx_op() {
  static const OnnxOp op{"FusedElementwise", 1, fused_elementwise_node};
  return op;
}

}  // namespace hal::model
