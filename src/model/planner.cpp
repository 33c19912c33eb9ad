// The planner: value types from ONNX's shape inference, then node by node the cheapest device
// that can run the node by the cost model (its own time plus moving in the inputs made
// elsewhere), then each device's memory planned from the values' lifetimes there.
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "core/checked_math.hpp"
#include "core/host_cpu.hpp"
#include "hal/error.hpp"
#include "hal/execution_plan.hpp"
#include "hal/ops.hpp"
#include "hal/registry.hpp"
#include "hal/units.hpp"
#include "model/executor.hpp"
#include "model/memory_plan.hpp"
#include "model/node_cost.hpp"
#include "model/onnx_ops.hpp"
#include "model/value_types.hpp"

namespace hal {
namespace {

using model::ModelGraph;
using model::Node;
using model::ValueTypes;

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

std::string us(double seconds) {
  std::ostringstream out;
  out.precision(3);
  out << seconds * 1e6 << " us";
  return out.str();
}

// Seconds to move `bytes` from one device to another through the host, a copy launched on
// each side that is not the cpu's.
double transfer_seconds(double bytes, const Device& from, const Device& to) {
  double seconds = 0;
  if (from.info().kind != DeviceKind::cpu) {
    Workload copy_out;
    copy_out.device_to_host_bytes = bytes;
    copy_out.launches = 1;
    const Estimate out = estimate(copy_out, from);
    if (out.known()) seconds += out.seconds;
  }
  if (to.info().kind != DeviceKind::cpu) {
    Workload copy_in;
    copy_in.host_to_device_bytes = bytes;
    copy_in.launches = 1;
    const Estimate in = estimate(copy_in, to);
    if (in.known()) seconds += in.seconds;
  }
  return seconds;
}

// Why `device` cannot run `node`, or empty. An op the kernel table does not know may need any
// kernel: only `host`, whose CPU backend runs every hal op, takes it (priced as a data move, it
// went anywhere and failed there at run time).
std::string cannot_run(const Device& device, const Node& node, DType dtype, const Device& host) {
  const std::optional<std::vector<model::NodeKernel>> kernels = model::node_kernels(node);
  if (!kernels)
    return device.id() == host.id() ? std::string()
                                    : device.id() + " may lack what " + node.op_type +
                                          " needs (the planner does not know its kernels)";
  for (const model::NodeKernel& kernel : *kernels) {
    const DType in = kernel.dtype.value_or(dtype);
    if (!supports_op(device, kernel.op, in))
      return device.id() + " has no " + std::string(to_string(in)) + " " + std::string(kernel.op);
  }
  return {};
}

std::vector<Device> candidates(const PlanOptions& options) {
  if (options.device != "auto") return {device(options.device)};
  if (!options.devices.empty()) {
    std::vector<Device> chosen;
    for (const std::string& id : options.devices) chosen.push_back(device(id));
    return chosen;
  }
  std::vector<Device> all = devices();
  if (all.empty()) throw Error(ErrorCode::NotFound, "no devices to plan for");
  return all;
}

class Planner {
 public:
  Planner(const ModelGraph& graph, const PlanOptions& options)
      : graph_(graph), options_(options), candidates_(candidates(options)) {
    plan_.model = graph.name;
    types_ =
        model::infer_value_types(graph, options.input_shapes, options.symbol_size, plan_.bindings);
    // Byte counts are summed over values and steps in int64: a value past 2^50 bytes (a PiB,
    // far past any device) is refused here rather than wrap (a [2^61] f64 value was 0 bytes).
    for (const auto& [name, type] : types_) {
      if (!type.known || type.strings) continue;
      const std::optional<int64_t> bytes =
          detail::checked_mul(numel(type.shape), static_cast<int64_t>(size_of(type.dtype)));
      if (!bytes || *bytes > (int64_t{1} << 50))
        throw Error(ErrorCode::InvalidArgument,
                    graph.name + ": value '" + name + "' (" + std::string(to_string(type.dtype)) +
                        to_string(type.shape) + ") has more bytes than a plan can hold (2^50)");
    }
    for (const ModelValue& input : graph.inputs) location_[input.name] = cpu_.id();
  }

  ExecutionPlan run() {
    for (size_t i = 0; i < graph_.nodes.size(); ++i) place(i);
    plan_memory();
    for (const auto& [name, type] : types_)
      if (!type.known && used(name)) plan_.unknown_shapes.push_back(name);
    return std::move(plan_);
  }

 private:
  bool used(const std::string& name) const { return graph_.last_use.contains(name); }

  bool is_strings(const std::string& name) const {
    const auto found = types_.find(name);
    return found != types_.end() && found->second.strings;
  }

  // Whether `node` reads or makes string tensors, which live on the host: it runs there.
  bool touches_strings(const Node& node) const {
    if (model::makes_strings(node)) return true;
    for (const auto* names : {&node.inputs, &node.outputs})
      for (const std::string& name : *names)
        if (!name.empty() && is_strings(name)) return true;
    return false;
  }

  // Why `device` cannot hold what `node` reads and writes, or empty: a value past its largest
  // allocation, or all of them past its memory (the rest alive there is the memory plan's).
  std::string cannot_hold(const Device& device, const Node& node) const {
    const DeviceInfo& info = device.info();
    uint64_t total = 0;
    for (const auto* names : {&node.inputs, &node.outputs})
      for (const std::string& name : *names) {
        if (name.empty() || is_strings(name)) continue;
        const auto bytes = static_cast<uint64_t>(bytes_of(name));
        if (info.limits.max_allocation_bytes > 0 && bytes > info.limits.max_allocation_bytes)
          return device.id() + " allocates at most " +
                 format_bytes(info.limits.max_allocation_bytes) + ", '" + name + "' takes " +
                 format_bytes(bytes);
        total += bytes;
      }
    if (info.memory_total.bytes > 0 && total > info.memory_total.bytes)
      return device.id() + " has " + format_bytes(info.memory_total.bytes) +
             " of memory, the node's values take " + format_bytes(total);
    return {};
  }

  // The device a value is made on: the host (whether or not HAL_DEVICES shows it) or a
  // candidate.
  Device located(const std::string& id) const {
    if (id == cpu_.id()) return cpu_;
    for (const Device& device : candidates_)
      if (device.id() == id) return device;
    return hal::device(id);
  }

  int64_t bytes_of(const std::string& name) const {
    const auto found = types_.find(name);
    return found == types_.end() ? 0 : found->second.bytes();
  }

  // The inputs `node` would have to move to `device`: made elsewhere (initializers are
  // uploaded where they are read).
  double moving_in(const Node& node, const Device& device) const {
    double seconds = 0;
    for (const std::string& input : node.inputs) {
      const auto made = location_.find(input);
      if (input.empty() || made == location_.end() || made->second == device.id() ||
          is_strings(input))
        continue;
      // Already copied there for an earlier node (record_transfers copies it once).
      if (const auto copies = copied_.find(input);
          copies != copied_.end() && copies->second.contains(device.id()))
        continue;
      seconds +=
          transfer_seconds(static_cast<double>(bytes_of(input)), located(made->second), device);
    }
    return seconds;
  }

  // Sequence and control-flow ops (their subgraphs' work unknown before they run) go where
  // their first input is made, where that is a candidate, else to cpu:0 or the first candidate.
  Device value_op_device(const Node& node) const {
    auto candidate = [&](const std::string& id) {
      for (const Device& device : candidates_)
        if (device.id() == id) return true;
      return false;
    };
    for (const std::string& input : node.inputs) {
      const auto made = location_.find(input);
      if (input.empty() || made == location_.end()) continue;
      if (candidate(made->second)) return located(made->second);
      break;
    }
    return candidate(cpu_.id()) ? cpu_ : candidates_.front();
  }

  void place(size_t index) {
    const Node& node = graph_.nodes[index];
    const bool strings = touches_strings(node);
    if (strings || (node.op && node.op->host)) {
      record_transfers(node, cpu_);
      for (const std::string& output : node.outputs)
        if (!output.empty()) location_[output] = cpu_.id();
      placement_.push_back(cpu_);
      plan_.nodes.push_back({node.name, node.op_type, cpu_.id(), kUnknown,
                             strings ? "reads or makes string tensors, which live on the host"
                                     : "computes on the host whatever the device"});
      return;
    }
    if (node.op && node.op->run_values) {
      const Device chosen = value_op_device(node);
      record_transfers(node, chosen);
      for (const std::string& output : node.outputs)
        if (!output.empty()) location_[output] = chosen.id();
      placement_.push_back(chosen);
      plan_.nodes.push_back({node.name, node.op_type, chosen.id(), kUnknown,
                             "where its first input is (sequence and control-flow ops have no "
                             "cost estimate)"});
      return;
    }
    const DType dtype = model::node_dtype(node, types_);
    const Workload work = model::node_workload(node, types_);
    const Device* best = nullptr;
    double best_total = std::numeric_limits<double>::infinity(), best_node = kUnknown;
    std::string refused;  // why candidates could not take it
    std::string priced;   // the candidates' prices, for the reason
    for (const Device& device : candidates_) {
      std::string why = cannot_run(device, node, dtype, cpu_);
      if (why.empty()) why = cannot_hold(device, node);
      if (!why.empty()) {
        refused += (refused.empty() ? "" : "; ") + why;
        continue;
      }
      const Estimate own = estimate(work, device);
      const double moving = moving_in(node, device);
      const double total = own.known() ? own.seconds + moving : kUnknown;
      priced += (priced.empty() ? "" : ", ") + device.id() + " " +
                (own.known() ? us(total) : std::string("?"));
      // A device the cost model knows nothing of is taken only when no other can run it.
      if (!best || (!std::isnan(total) && (std::isnan(best_total) || total < best_total))) {
        best = &device;
        best_total = total;
        best_node = own.known() ? own.seconds : kUnknown;
      }
    }
    PlannedNode planned{node.name, node.op_type, "", kUnknown, ""};
    Device chosen = cpu_;
    if (!best) {
      planned.reason = refused + "; cpu:0 runs it";
      planned.predicted_us = predicted_us(estimate(work, cpu_));
    } else {
      chosen = *best;
      planned.predicted_us = std::isnan(best_node) ? kUnknown : best_node * 1e6;
      planned.reason = options_.device != "auto" ? "pinned"
                       : candidates_.size() == 1 ? "the only device"
                                                 : "cheapest, with its inputs moved in: " + priced;
      if (!refused.empty()) planned.reason += " (" + refused + ")";
    }
    planned.device = chosen.id();
    record_transfers(node, chosen);
    for (const std::string& output : node.outputs)
      if (!output.empty()) location_[output] = chosen.id();
    placement_.push_back(chosen);
    plan_.predicted_us += std::isnan(planned.predicted_us) ? 0 : planned.predicted_us;
    plan_.nodes.push_back(std::move(planned));
  }

  static double predicted_us(const Estimate& estimate) {
    return estimate.known() ? estimate.seconds * 1e6 : kUnknown;
  }

  void record_transfers(const Node& node, const Device& to) {
    std::set<std::string> moved;
    for (const std::string& input : node.inputs) {
      const auto made = location_.find(input);
      if (input.empty() || made == location_.end() || made->second == to.id() || is_strings(input))
        continue;
      if (!moved.insert(input).second || !copied_[input].insert(to.id()).second) continue;
      const int64_t bytes = bytes_of(input);
      const double seconds =
          transfer_seconds(static_cast<double>(bytes), located(made->second), to);
      plan_.transfers.push_back({input, made->second, to.id(), bytes, seconds * 1e6});
      plan_.predicted_us += seconds * 1e6;
    }
  }

  // Per device, a lifetime for each value held there: from the step it is made or first
  // moved in (graph inputs: step 0) to its last reader there (graph outputs: the end);
  // initializers for the whole run, as the executor keeps them resident.
  void plan_memory() {
    struct Held {
      int64_t bytes;
      size_t first, last;
    };
    std::map<std::string, std::map<std::string, Held>> held;  // device -> value -> lifetime
    const size_t end = graph_.nodes.size();
    // Initializers stay on each device that reads them for the model's lifetime.
    auto hold = [&](const std::string& device, const std::string& value, size_t step) {
      const bool resident = graph_.initializers.contains(value);
      auto [it, inserted] = held[device].try_emplace(
          value, Held{bytes_of(value), resident ? 0 : step, resident ? end : step});
      it->second.last = std::max(it->second.last, step);
    };
    for (const ModelValue& input : graph_.inputs) hold(cpu_.id(), input.name, 0);
    for (size_t i = 0; i < end; ++i) {
      const Node& node = graph_.nodes[i];
      const std::string where = placement_[i].id();
      for (const std::string& input : node.inputs)
        if (!input.empty()) hold(where, input, i);
      for (const std::string& input : node.captured) hold(where, input, i);
      for (const std::string& output : node.outputs)
        if (!output.empty() && used(output)) hold(where, output, i);
    }
    for (const ModelValue& output : graph_.outputs)
      for (auto& [device, values] : held)
        if (auto found = values.find(output.name);
            found != values.end() && location_[output.name] == device)
          found->second.last = end;
    for (const auto& [device, values] : held) {
      std::vector<model::Lifetime> lifetimes;
      for (const auto& [name, h] : values) lifetimes.push_back({h.bytes, h.first, h.last});
      const model::MemoryPlan memory = model::plan_memory(lifetimes);
      plan_.memory.push_back({device, memory.peak_bytes, memory.lower_bound_bytes});
      plan_.peak_bytes += memory.peak_bytes;
      plan_.lower_bound_bytes += memory.lower_bound_bytes;
    }
  }

  const ModelGraph& graph_;
  const PlanOptions& options_;
  const Device cpu_ = hal::detail::host_cpu();
  std::vector<Device> candidates_;
  ValueTypes types_;
  ExecutionPlan plan_;
  std::vector<Device> placement_;
  std::map<std::string, std::string> location_;          // value -> the device that makes it
  std::map<std::string, std::set<std::string>> copied_;  // value -> devices it was moved to
};

}  // namespace

ExecutionPlan plan_model(const Model& model, const PlanOptions& options) {
  if (!model) throw Error(ErrorCode::InvalidState, "the model is empty (default-constructed)");
  if (options.symbol_size < 1)
    throw Error(ErrorCode::InvalidArgument,
                "symbol_size " + std::to_string(options.symbol_size) + " is not positive");
  return Planner(*model.graph(), options).run();
}

PlannedValuesRun run_planned_values(const Model& model, const ExecutionPlan& plan,
                                    const std::map<std::string, RunValue>& inputs) {
  if (!model) throw Error(ErrorCode::InvalidState, "the model is empty (default-constructed)");
  const ModelGraph& graph = *model.graph();
  if (plan.model != graph.name || plan.nodes.size() != graph.nodes.size())
    throw Error(ErrorCode::InvalidArgument, "the plan (of " + plan.model + ", " +
                                                std::to_string(plan.nodes.size()) +
                                                " nodes) is not this model's (" + graph.name +
                                                ", " + std::to_string(graph.nodes.size()) + ")");
  model::check_inputs(graph, inputs, nullptr);
  std::vector<Device> placement;
  const Device host = hal::detail::host_cpu();  // where HAL_DEVICES hides it too
  for (const PlannedNode& node : plan.nodes)
    placement.push_back(node.device == host.id() ? host : device(node.device));
  model::RunStreams streams;
  PlannedValuesRun run;
  run.outputs = model::execute(graph, inputs, streams, hal::detail::host_cpu(),
                               {.placement = &placement,
                                .fallbacks = &run.fallbacks,
                                .weights = model.resident_weights().get()});
  streams.synchronize_all();
  return run;
}

PlannedRun run_planned(const Model& model, const ExecutionPlan& plan,
                       const std::map<std::string, Tensor>& inputs) {
  PlannedValuesRun values = run_planned_values(model, plan, model::as_values(inputs));
  return {model::as_tensors(*model.graph(), std::move(values.outputs)),
          std::move(values.fallbacks)};
}

}  // namespace hal
