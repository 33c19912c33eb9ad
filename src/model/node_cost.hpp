// What a node asks of a device, for the planner: the kernels its implementation is built on
// (a device must run them, in the node's dtype unless the kernel names one) and its work for
// the cost model, from the shapes of its values.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "hal/cost_model.hpp"
#include "model/model_graph.hpp"
#include "model/value_types.hpp"

namespace hal::model {

// A hal op (as `hal ops` names it) the node's implementation runs, and the dtype it takes:
// the node's own (node_dtype) unless `dtype` names another (MatMulInteger multiplies its 8-bit
// inputs as f32; Trilu compares i64 positions).
struct NodeKernel {
  constexpr NodeKernel(const char* op_name, std::optional<DType> in = std::nullopt)
      : op(op_name), dtype(in) {}
  std::string_view op;
  std::optional<DType> dtype;
  bool operator==(const NodeKernel&) const = default;
};

// The kernels the node's implementation needs: empty for the ops that only move data (views,
// copies, values read to the host and back), which every device does; nothing for an op the
// planner does not know, which may need any kernel (only a device that runs them all takes it).
// `types`, where given, tells what the attributes do not (CastLike's target dtype).
std::optional<std::vector<NodeKernel>> node_kernels(const Node& node,
                                                    const ValueTypes* types = nullptr);

// The node's arithmetic (matmul-like ops: 2 flops per multiply-add; others one per output
// element), the bytes it reads and writes, one launch. Values of unknown shape count 0.
Workload node_workload(const Node& node, const ValueTypes& types);

// The dtype its kernels run in: its first input's, f32 where unknown.
DType node_dtype(const Node& node, const ValueTypes& types);

}  // namespace hal::model
