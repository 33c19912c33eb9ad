// The execution plan of a model: which device runs each node, what moves between devices, and
// how much memory the values need at once. Made from ONNX's shape inference on the model's
// declared shapes (or the shapes of given inputs), the op table and the cost model, before
// anything runs; the plan is data, printed by `hal run MODEL --plan --json` (hal.plan/1).
//
//   hal::ExecutionPlan plan = hal::plan_model(model, {.device = "auto"});
//   auto outputs = hal::run_planned(model, plan, inputs);   // each node on its planned device
//
// Placement, node by node in order: each candidate device that runs the node's kernels in its
// dtype and can hold the node's values (each within its largest allocation, together with the
// values alive there already within its memory or its allocator's limit) is priced by the cost
// model (the node's arithmetic and bytes, plus copying in the values it reads that live
// elsewhere and were not copied there before); the cheapest wins, a price with every figure
// known before one with gaps (a lower bound), as device selection ranks. A node no candidate can
// run or hold goes to cpu:0 as the last resort, and a node that fails as unsupported when run
// falls back to cpu:0 there; both record the reason.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hal/model.hpp"

namespace hal {

struct PlanOptions {
  // "auto": every visible device is a candidate; a device ID pins every node to it (nodes it
  // cannot run still fall back to cpu:0).
  std::string device = "auto";
  // The candidates of "auto" by ID; empty: every visible device.
  std::vector<std::string> devices;
  // Shapes of the inputs to plan for; others take their declared shapes, with each symbolic
  // dimension bound to `symbol_size`.
  std::map<std::string, Shape> input_shapes;
  int64_t symbol_size = 1;
};

struct PlannedNode {
  std::string name, op;
  std::string device;
  double predicted_us = 0;  // the node's own time on it (NaN where the cost model knows none)
  std::string reason;       // why this device
};

struct PlannedTransfer {
  std::string value;  // the tensor that moves
  std::string from, to;
  int64_t bytes = 0;
  double predicted_us = 0;  // NaN where a device lacks a copy figure (not free)
};

// Memory of one device's values over the run, in bytes: each value from the node that makes or
// first moves it there to its last reader on any device (a copy is made from it), as the
// executor keeps it; initializers for the whole run.
struct PlannedMemory {
  std::string device;
  // Every value placed at an offset of one arena, two values sharing bytes only when their
  // lifetimes do not overlap (greedy by size): the arena's size.
  int64_t peak_bytes = 0;
  // The most bytes live at any one node: no placement can need less.
  int64_t lower_bound_bytes = 0;
};

struct ExecutionPlan {
  std::string model;
  std::vector<PlannedNode> nodes;  // in the order they run
  std::vector<PlannedTransfer> transfers;
  std::vector<PlannedMemory> memory;  // per device used
  int64_t peak_bytes = 0;             // summed over the devices
  int64_t lower_bound_bytes = 0;
  double predicted_us = 0;  // nodes and transfers, one after another (those of known time)
  // Values whose size shape inference could not give (counted as 0 bytes in the memory plan).
  std::vector<std::string> unknown_shapes;
  std::map<std::string, int64_t> bindings;  // symbolic dimension -> the size planned for
};

// Plans `model` (InvalidArgument for an unknown input name in `input_shapes` or a shape of the
// wrong rank; NotFound for a device ID that is not there).
ExecutionPlan plan_model(const Model& model, const PlanOptions& options = {});

// The nodes that ran somewhere else than planned, and why (a device that turned out unable
// to run a node's kernels).
struct PlannedRun {
  std::map<std::string, Tensor> outputs;  // on the device of the node that made each
  std::vector<PlannedNode> fallbacks;
};

// Runs `model` with each node on its planned device: inputs may live on any device and move
// where their readers run; outputs stay where they were made. It first waits for the devices
// holding the inputs (Device::synchronize: the work that makes them may be on any stream), and
// at the end for every device used.
PlannedRun run_planned(const Model& model, const ExecutionPlan& plan,
                       const std::map<std::string, Tensor>& inputs);

// The same for models with sequence or string inputs or outputs (run_planned refuses an output
// that is not a tensor), values as Model::run_values takes and gives them. Nodes that read or
// make strings are planned on cpu:0, where string tensors live.
struct PlannedValuesRun {
  std::map<std::string, RunValue> outputs;
  std::vector<PlannedNode> fallbacks;
};
PlannedValuesRun run_planned_values(const Model& model, const ExecutionPlan& plan,
                                    const std::map<std::string, RunValue>& inputs);

}  // namespace hal
