// The planner: value types from ONNX's shape inference, then node by node the cheapest device
// that can run and hold the node by the cost model (its own time plus moving in the values it
// reads made elsewhere), then each device's memory planned from the values' lifetimes there.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "core/checked_math.hpp"
#include "core/host_cpu.hpp"
#include "hal/allocator.hpp"
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

// A price in seconds and the figures it lacked ("sim:0 host_to_device_bandwidth"), whose terms
// count 0: a price with gaps is a lower bound.
struct Cost {
  double seconds = 0;
  std::vector<std::string> unknown;

  bool complete() const { return unknown.empty(); }
  void note(const std::string& figure) {
    if (std::find(unknown.begin(), unknown.end(), figure) == unknown.end())
      unknown.push_back(figure);
  }
  void add(const Estimate& estimate, const Device& device) {
    if (estimate.known()) seconds += estimate.seconds;
    for (const std::string& figure : estimate.unknown) note(device.id() + " " + figure);
    if (!estimate.known() && estimate.unknown.empty()) note(device.id() + " figures");
  }
  void add(const Cost& other) {
    seconds += other.seconds;
    for (const std::string& figure : other.unknown) note(figure);
  }
};

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : ", ") + part;
  return out;
}

// Moving `bytes` from one device to another through the host, a copy launched on each side
// that is not the cpu's. A figure a side lacks is named, not taken as free.
Cost transfer_cost(double bytes, const Device& from, const Device& to) {
  Cost cost;
  if (from.info().kind != DeviceKind::cpu) {
    Workload copy_out;
    copy_out.device_to_host_bytes = bytes;
    copy_out.launches = 1;
    cost.add(estimate(copy_out, from), from);
  }
  if (to.info().kind != DeviceKind::cpu) {
    Workload copy_in;
    copy_in.host_to_device_bytes = bytes;
    copy_in.launches = 1;
    cost.add(estimate(copy_in, to), to);
  }
  return cost;
}

// How a candidate's price ranks, best first (as select's ranks_before): complete, then with
// gaps (a lower bound, which would flatter a device lacking figures), then none at all.
enum class Priced { complete, partly, unknown };

std::string price_words(Priced priced, const Cost& cost) {
  if (priced == Priced::unknown) return "?";
  if (priced == Priced::complete) return us(cost.seconds);
  return "at least " + us(cost.seconds) + " (no figure for " + joined(cost.unknown) + ")";
}

// Why `device` cannot run `node`, or empty. An op the kernel table does not know may need any
// kernel: only `host`, whose CPU backend runs every hal op, takes it (priced as a data move, it
// went anywhere and failed there at run time).
std::string cannot_run(const Device& device, const Node& node, DType dtype, const ValueTypes& types,
                       const Device& host) {
  const std::optional<std::vector<model::NodeKernel>> kernels = model::node_kernels(node, &types);
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

// The bytes `device` may hold: its memory, or its allocator's limit where one is set lower; 0
// where neither is known.
struct Capacity {
  uint64_t bytes = 0;
  bool allocator_limit = false;

  // "has 16.0 MiB of memory"
  std::string words() const {
    return allocator_limit ? "is limited to " + format_bytes(bytes) + " by its allocator"
                           : "has " + format_bytes(bytes) + " of memory";
  }
};

Capacity capacity_of(const Device& device) {
  Capacity capacity{device.info().memory_total.bytes, false};
  uint64_t limit = 0;
  try {
    limit = device.allocator().config().limit_bytes;
  } catch (const Error&) {  // no allocator to ask: its memory is the figure
  }
  if (limit > 0 && (capacity.bytes == 0 || limit < capacity.bytes)) capacity = {limit, true};
  return capacity;
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
    for (const Device& device : candidates_) capacity_[device.id()] = capacity_of(device);
    capacity_[cpu_.id()] = capacity_of(cpu_);
    for (const ModelValue& input : graph.inputs) {
      location_[input.name] = cpu_.id();
      hold(cpu_.id(), input.name, 0);
    }
  }

  ExecutionPlan run() {
    for (size_t i = 0; i < graph_.nodes.size(); ++i) place(i);
    plan_memory();
    for (const auto& [name, type] : types_)
      if (!type.known && used(name)) plan_.unknown_shapes.push_back(name);
    return std::move(plan_);
  }

 private:
  // A value's bytes on one device, from the step it is made or moved in there to its last use.
  struct Held {
    int64_t bytes;
    size_t first, last;
  };
  // What a device holds while placing: the bytes alive, and at which step each part ends.
  struct Live {
    int64_t bytes = 0;
    std::map<size_t, int64_t> ending;  // last step alive -> bytes
  };

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

  // The values `node` reads on its device: its inputs and what its subgraphs read from
  // outside (If, Loop, Scan), each once.
  std::vector<std::string> reads(const Node& node) const {
    std::vector<std::string> out;
    for (const auto* names : {&node.inputs, &node.captured})
      for (const std::string& name : *names)
        if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end())
          out.push_back(name);
    return out;
  }

  bool holds(const std::string& device, const std::string& value) const {
    const auto found = held_.find(device);
    return found != held_.end() && found->second.contains(value);
  }

  // Why `device` cannot hold what `node` reads and writes, or empty: a value past its largest
  // allocation, or the node's values, with those alive there already (made there or moved in,
  // until their last reader), past its memory or its allocator's limit.
  std::string cannot_hold(const Device& device, const Node& node) const {
    const DeviceInfo& info = device.info();
    uint64_t own = 0, arriving = 0;
    std::set<std::string> counted;
    for (const auto& names : {reads(node), node.outputs})
      for (const std::string& name : names) {
        if (name.empty() || is_strings(name) || !counted.insert(name).second) continue;
        const auto bytes = static_cast<uint64_t>(bytes_of(name));
        if (info.limits.max_allocation_bytes > 0 && bytes > info.limits.max_allocation_bytes)
          return device.id() + " allocates at most " +
                 format_bytes(info.limits.max_allocation_bytes) + ", '" + name + "' takes " +
                 format_bytes(bytes);
        own += bytes;
        if (!holds(device.id(), name)) arriving += bytes;
      }
    const Capacity& capacity = capacity_.at(device.id());
    if (capacity.bytes == 0) return {};
    if (own > capacity.bytes)
      return device.id() + " " + capacity.words() + ", the node's values take " + format_bytes(own);
    const auto found = live_.find(device.id());
    const uint64_t alive = found == live_.end() ? 0 : static_cast<uint64_t>(found->second.bytes);
    if (alive + arriving > capacity.bytes)
      return device.id() + " " + capacity.words() + ", the node's values with the " +
             format_bytes(alive) + " alive there take " + format_bytes(alive + arriving);
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

  // The values `node` would have to move to `device`: made elsewhere and not copied there
  // for an earlier node (record_transfers copies each once; initializers are uploaded where
  // they are read).
  std::vector<std::string> moved_in(const Node& node, const std::string& device) const {
    std::vector<std::string> out;
    for (const std::string& value : reads(node)) {
      const auto made = location_.find(value);
      if (made == location_.end() || made->second == device || is_strings(value)) continue;
      if (const auto copies = copied_.find(value);
          copies != copied_.end() && copies->second.contains(device))
        continue;
      out.push_back(value);
    }
    return out;
  }

  Cost moving_in(const Node& node, const Device& device) const {
    Cost cost;
    for (const std::string& value : moved_in(node, device.id()))
      cost.add(transfer_cost(static_cast<double>(bytes_of(value)), located(location_.at(value)),
                             device));
    return cost;
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
    forget_before(index);
    const Node& node = graph_.nodes[index];
    const bool strings = touches_strings(node);
    if (strings || (node.op && node.op->host)) {
      settle(index, cpu_);
      plan_.nodes.push_back({node.name, node.op_type, cpu_.id(), kUnknown,
                             strings ? "reads or makes string tensors, which live on the host"
                                     : "computes on the host whatever the device"});
      return;
    }
    if (node.op && node.op->run_values) {
      const Device chosen = value_op_device(node);
      settle(index, chosen);
      plan_.nodes.push_back({node.name, node.op_type, chosen.id(), kUnknown,
                             "where its first input is (sequence and control-flow ops have no "
                             "cost estimate)"});
      return;
    }
    const DType dtype = model::node_dtype(node, types_);
    const Workload work = model::node_workload(node, types_);
    const Device* best = nullptr;
    Priced best_priced = Priced::unknown;
    double best_total = kUnknown, best_node = kUnknown;
    std::string refused;  // why candidates could not take it
    std::string priced;   // the candidates' prices, for the reason
    for (const Device& device : candidates_) {
      std::string why = cannot_run(device, node, dtype, types_, cpu_);
      if (why.empty()) why = cannot_hold(device, node);
      if (!why.empty()) {
        refused += (refused.empty() ? "" : "; ") + why;
        continue;
      }
      const Estimate own = estimate(work, device);
      Cost total;
      total.add(own, device);
      total.add(moving_in(node, device));
      const Priced rank = !own.known()       ? Priced::unknown
                          : total.complete() ? Priced::complete
                                             : Priced::partly;
      priced += (priced.empty() ? "" : ", ") + device.id() + " " + price_words(rank, total);
      // Complete prices first, then lower bounds, by time; a device the cost model knows
      // nothing of is taken only when no other can run it.
      if (!best || rank < best_priced ||
          (rank == best_priced && rank != Priced::unknown && total.seconds < best_total)) {
        best = &device;
        best_priced = rank;
        best_total = total.seconds;
        best_node = own.known() ? own.seconds : kUnknown;
      }
    }
    PlannedNode planned{node.name, node.op_type, "", kUnknown, ""};
    Device chosen = cpu_;
    if (!best) {
      // The last resort the docs promise, cpu:0 running every hal op: where it was a candidate
      // and refused as well (too little memory), it runs the node all the same.
      const bool cpu_refused = std::any_of(candidates_.begin(), candidates_.end(),
                                           [&](const Device& d) { return d.id() == cpu_.id(); });
      planned.reason = refused + (cpu_refused ? "; cpu:0 runs it all the same, the last resort"
                                              : "; cpu:0 runs it, the last resort");
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
    settle(index, chosen);
    plan_.predicted_us += std::isnan(planned.predicted_us) ? 0 : planned.predicted_us;
    plan_.nodes.push_back(std::move(planned));
  }

  static double predicted_us(const Estimate& estimate) {
    return estimate.known() ? estimate.seconds * 1e6 : kUnknown;
  }

  // Node `index` runs on `device`: what it reads moves there, and what it reads and makes is
  // held there until its last use.
  void settle(size_t index, const Device& device) {
    const Node& node = graph_.nodes[index];
    record_transfers(node, device);
    for (const std::string& value : reads(node)) hold(device.id(), value, index);
    for (const std::string& output : node.outputs) {
      if (output.empty()) continue;
      location_[output] = device.id();
      if (used(output)) hold(device.id(), output, index);
    }
    placement_.push_back(device);
  }

  void record_transfers(const Node& node, const Device& to) {
    for (const std::string& value : moved_in(node, to.id())) {
      copied_[value].insert(to.id());
      const std::string& from = location_.at(value);
      const int64_t bytes = bytes_of(value);
      const Cost cost = transfer_cost(static_cast<double>(bytes), located(from), to);
      // A copy whose figures are missing is of unknown time, not free.
      const double predicted = cost.complete() ? cost.seconds * 1e6 : kUnknown;
      plan_.transfers.push_back({value, from, to.id(), bytes, predicted});
      if (cost.complete()) plan_.predicted_us += predicted;
    }
  }

  // The executor keeps every copy of a value until the value's last reader, wherever that
  // runs (graph outputs: the end), and initializers on each device that reads them for the
  // model's lifetime. So a value made on one device and read on another stays on the first
  // until that read, its copy there being made from it.
  void hold(const std::string& device, const std::string& value, size_t step) {
    if (holds(device, value)) return;
    const bool resident = graph_.initializers.contains(value);
    const auto last_use = graph_.last_use.find(value);
    const size_t last = resident                            ? graph_.nodes.size()
                        : last_use == graph_.last_use.end() ? step
                                                            : std::max(step, last_use->second);
    const int64_t bytes = bytes_of(value);
    held_[device].emplace(value, Held{bytes, resident ? 0 : step, last});
    Live& live = live_[device];
    live.bytes += bytes;
    live.ending[last] += bytes;
  }

  // Before placing node `step`: what no node from it on reads is freed everywhere.
  void forget_before(size_t step) {
    for (auto& [device, live] : live_)
      while (!live.ending.empty() && live.ending.begin()->first < step) {
        live.bytes -= live.ending.begin()->second;
        live.ending.erase(live.ending.begin());
      }
  }

  // Per device, the lifetimes of the values held there (hold) planned into one arena.
  void plan_memory() {
    for (const auto& [device, values] : held_) {
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
  std::map<std::string, std::string> location_;              // value -> the device that makes it
  std::map<std::string, std::set<std::string>> copied_;      // value -> devices it was moved to
  std::map<std::string, Capacity> capacity_;                 // device -> what it may hold
  std::map<std::string, std::map<std::string, Held>> held_;  // device -> value -> lifetime
  std::map<std::string, Live> live_;                         // device -> bytes alive now
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
  // The run reads its inputs on streams of its own, which do not wait for the caller's: the
  // work that makes them must be done first (Model::run orders after it on the caller's stream).
  std::set<std::string> waited;
  const auto wait_for = [&](const Tensor& tensor) {
    if (tensor.defined() && waited.insert(tensor.device().id()).second)
      tensor.device().synchronize();
  };
  for (const auto& [name, value] : inputs) {
    if (const auto* tensor = std::get_if<Tensor>(&value)) wait_for(*tensor);
    if (const auto* sequence = std::get_if<TensorSequence>(&value))
      for (const Tensor& tensor : sequence->tensors) wait_for(tensor);
  }
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
