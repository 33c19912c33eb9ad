// What a node asks of a device, for the planner: the kernels its implementation is built on
// (a device must run them in the node's dtype) and its work for the cost model, from the
// shapes of its values.
#pragma once

#include <string_view>
#include <vector>

#include "hal/cost_model.hpp"
#include "model/model_graph.hpp"
#include "model/value_types.hpp"

namespace hal::model {

// hal ops (as `hal ops` names them) the node's implementation needs; empty for the ops that
// only move data (views and copies, which every device does).
std::vector<std::string_view> node_kernels(const Node& node);

// The node's arithmetic (matmul-like ops: 2 flops per multiply-add; others one per output
// element), the bytes it reads and writes, one launch. Values of unknown shape count 0.
Workload node_workload(const Node& node, const ValueTypes& types);

// The dtype its kernels run in: its first input's, f32 where unknown.
DType node_dtype(const Node& node, const ValueTypes& types);

}  // namespace hal::model
