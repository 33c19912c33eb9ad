// `hal demo [--quick] [--json]`, the main job: what this machine has, which device should run
// a stated workload and why, and how each device does on reference workloads, checked against
// cpu:0 and against the cost model's prediction. A device that fails at any stage is reported
// and the demo goes on with the others; any failure makes the exit status 1.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include "agreement.hpp"
#include "choice_json.hpp"
#include "commands.hpp"
#include "core/host_cpu.hpp"
#include "demo_report.hpp"
#include "demo_workloads.hpp"
#include "hal/cache.hpp"
#include "hal/units.hpp"
#include "json_text.hpp"
#include "plan_json.hpp"

namespace hal::tool {
namespace {

using json = nlohmann::ordered_json;

struct Reference {
  const char* name;
  Workload cost;
  WorkloadResult (*run)(const Device&, const DemoSizes&);
  double tolerance;  // on max |diff| from cpu:0, relative to the largest |value| of cpu:0's
};

// Runs `reference` on `device` (cpu:0 reuses its reference run) and compares with cpu:0's.
RunRecord measure(const Device& device, const Reference& reference, const DemoSizes& sizes,
                  const Device& cpu, const WorkloadResult& on_cpu) {
  RunRecord record;
  record.device = device.id();
  record.workload = reference.name;
  WorkloadResult result;
  try {
    record.predicted = estimate(reference.cost, device).seconds;
    result = device == cpu ? on_cpu : reference.run(device, sizes);
  } catch (const Error& error) {
    record.status =
        error.code() == ErrorCode::Unsupported ? RunStatus::unsupported : RunStatus::failed;
    record.error = error.what();
    return record;
  }
  record.seconds = result.seconds;
  record.gflops = reference.cost.flops / result.seconds / 1e9;
  record.gbps = reference.cost.bytes / result.seconds / 1e9;
  record.speedup = on_cpu.seconds / result.seconds;
  // The tolerance scales with cpu:0's finite values: an infinity there made it infinite.
  const Agreement agreed = agreement(result.output, on_cpu.output, reference.tolerance);
  const bool same_size = result.output.size() == on_cpu.output.size();
  record.max_abs_diff = same_size ? agreed.max_difference : INFINITY;
  record.status = same_size && agreed.agree() ? RunStatus::ok : RunStatus::mismatch;
  return record;
}

void say(bool json_mode, const std::string& line) { (json_mode ? std::cerr : std::cout) << line; }

bool has_failed(const std::vector<StageFailure>& failures, const Device& device) {
  for (const StageFailure& failure : failures)
    if (failure.device == device.id()) return true;
  return false;
}

void calibrate_all(const std::vector<Device>& devices, bool quick, bool json_mode,
                   std::vector<StageFailure>& failures) {
  say(json_mode, "\ncalibrating (cached per device and driver under HAL_CACHE_DIR):\n");
  for (const Device& device : devices) {
    try {
      const Calibration c = calibrate(device, {.use_cache = true, .quick = quick});
      char line[160];
      std::snprintf(line, sizeof line,
                    "  %-10s matmul %.1f GFLOP/s, on-device %.1f GB/s, launch %.1f us%s\n",
                    device.id().c_str(), c.matmul_gflops(DType::f32), c.device_bandwidth_gbps,
                    c.launch_latency_us, c.from_cache ? " (cached)" : "");
      say(json_mode, line);
    } catch (const Error& error) {
      say(json_mode, "  " + device.id() + ": not calibrated: " + error.what() + "\n");
      failures.push_back({device.id(), "calibration", error.what()});
    }
  }
}

// The choice among the devices that have not failed so far. Ranking reads each device's free
// memory, so a device that cannot answer (lost) is reported and left out; if ranking fails
// still, there is no choice, and that is a failure too.
Selection choose(const Requirements& needs, const std::vector<Device>& devices, bool json_mode,
                 std::vector<StageFailure>& failures) {
  std::vector<Device> healthy;
  for (const Device& device : devices) {
    if (has_failed(failures, device)) continue;
    try {
      device.memory_free();
      healthy.push_back(device);
    } catch (const Error& error) {
      failures.push_back({device.id(), "choice", error.what()});
    }
  }
  Selection choice;
  try {
    choice = rank_devices(needs, healthy);
  } catch (const Error& error) {
    failures.push_back({"", "choice", error.what()});
  }
  say(json_mode, "\nbest device for " + needs.workload->name + ": " +
                     (choice.device ? choice.device.id() : std::string("none")) + "\n" +
                     choice.to_string());
  return choice;
}

// Every reference workload on every device; each run is recorded, whatever became of others.
std::vector<RunRecord> run_references(const std::vector<Reference>& references,
                                      const std::vector<Device>& devices, const DemoSizes& sizes,
                                      bool json_mode) {
  std::vector<RunRecord> runs;
  const Device cpu =
      hal::detail::host_cpu();  // checks every result, even where HAL_DEVICES hides it
  for (const Reference& reference : references) {
    say(json_mode, "running " + std::string(reference.name) + " (" + reference.cost.name +
                       ") on every device ...\n");
    WorkloadResult on_cpu;
    std::string reference_error;
    try {
      on_cpu = reference.run(cpu, sizes);
    } catch (const Error& error) {
      reference_error = std::string("cpu:0's reference run failed: ") + error.what();
    }
    for (const Device& device : devices) {
      if (reference_error.empty()) {
        runs.push_back(measure(device, reference, sizes, cpu, on_cpu));
        continue;
      }
      RunRecord unchecked;
      unchecked.device = device.id();
      unchecked.workload = reference.name;
      unchecked.error = reference_error;
      runs.push_back(std::move(unchecked));
    }
  }
  return runs;
}

std::string scientific(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2e", value);
  return text;
}

// The transformer through its plan over the devices that ran everything so far: where each
// node went and how it ran.
std::optional<PlannedTransformer> plan_transformer(const std::vector<Device>& all,
                                                   const std::vector<RunRecord>& runs,
                                                   bool json_mode,
                                                   std::vector<StageFailure>& failures) {
  const std::vector<std::string> failed = failed_devices(runs, failures);
  std::vector<std::string> healthy;
  for (const Device& device : all)
    if (std::find(failed.begin(), failed.end(), device.id()) == failed.end())
      healthy.push_back(device.id());
  try {
    PlannedTransformer planned = run_planned_transformer(healthy);
    std::map<std::string, size_t> per_device;
    for (const PlannedNode& node : planned.plan.nodes) ++per_device[node.device];
    std::string placement;
    for (const auto& [device, count] : per_device)
      placement += (placement.empty() ? "" : ", ") + std::to_string(count) + " on " + device;
    say(json_mode,
        "\ntransformer through its plan over the devices that agreed: " +
            std::to_string(planned.plan.nodes.size()) + " nodes: " + placement + "; " +
            std::to_string(planned.plan.transfers.size()) + " transfers; memory planned " +
            format_bytes(static_cast<uint64_t>(planned.plan.peak_bytes)) + " (at least " +
            format_bytes(static_cast<uint64_t>(planned.plan.lower_bound_bytes)) +
            " alive at once)\n  ran in " + format_seconds(planned.seconds) + " (predicted " +
            format_seconds(planned.plan.predicted_us * 1e-6) +
            "), largest difference from PyTorch " + scientific(planned.max_abs_diff) + "\n");
    for (const PlannedNode& node : planned.fallbacks)
      say(json_mode,
          "  fell back: " + node.name + " to " + node.device + ": " + node.reason + "\n");
    return planned;
  } catch (const Error& error) {
    failures.push_back({"", "planned transformer", error.message()});
    say(json_mode, "\ntransformer through its plan: failed: " + error.message() + "\n");
    return std::nullopt;
  }
}

json planned_json(const PlannedTransformer& planned) {
  json fallbacks = json::array();
  for (const PlannedNode& node : planned.fallbacks)
    fallbacks.push_back({{"name", node.name}, {"device", node.device}, {"reason", node.reason}});
  return {{"plan", plan_json(planned.plan, "auto")},
          {"seconds", planned.seconds},
          {"max_abs_diff", planned.max_abs_diff},
          {"fallbacks", fallbacks}};
}

int run(bool quick, bool json_mode) {
  const auto start = std::chrono::steady_clock::now();
  const DemoSizes& sizes = quick ? kQuickDemo : kFullDemo;
  const Summary machine = summary();
  say(json_mode, "hal demo: " + std::to_string(machine.devices.size()) + " devices, " +
                     format_bytes(machine.memory_total_bytes) + " of memory in all\n");
  for (const Device& device : machine.devices)
    say(json_mode, "  [" + device.id() + "] " + device.info().name + " (" + device.info().vendor +
                       ", " + std::string(to_string(device.info().kind)) + ")\n");

  std::vector<StageFailure> failures;
  calibrate_all(machine.devices, quick, json_mode, failures);
  const std::vector<Reference> references{
      {"mlp", mlp_workload(sizes), run_mlp, 1e-4},
      {"matmul", matmul_workload(sizes), run_matmul, 1e-4},
      {"transformer", transformer_workload(), run_transformer, 1e-4},
  };
  Requirements needs;
  needs.workload = references.front().cost;
  const Selection choice = choose(needs, machine.devices, json_mode, failures);
  const std::vector<RunRecord> runs = run_references(references, machine.devices, sizes, json_mode);
  const std::optional<PlannedTransformer> planned =
      plan_transformer(machine.devices, runs, json_mode, failures);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const bool all_ok = planned && failed_devices(runs, failures).empty() &&
                      std::all_of(runs.begin(), runs.end(), [](const RunRecord& r) {
                        return r.status == RunStatus::ok || r.status == RunStatus::unsupported;
                      });
  const KernelBuildStats builds = kernel_build_stats();
  if (json_mode) {
    std::cout << json{{"schema", "hal.demo/1"},
                      {"quick", quick},
                      {"ok", all_ok},
                      {"summary", to_json(machine)},
                      {"choice",
                       {{"workload", needs.workload->name},
                        {"device", choice.device ? json(choice.device.id()) : json(nullptr)},
                        {"candidates", candidates_json(choice)}}},
                      {"runs", runs_json(runs)},
                      {"planned_transformer", planned ? planned_json(*planned) : json(nullptr)},
                      {"failures", failures_json(runs, failures)},
                      {"kernels",
                       {{"compiled", builds.compiled},
                        {"compile_seconds", builds.compile_seconds},
                        {"from_disk_cache", builds.from_disk},
                        {"disk_cache_seconds", builds.disk_seconds}}},
                      {"seconds", took}}
                     .dump(2, ' ', false, kReplaceBadUtf8)
              << "\n";
  } else {
    print_table(runs);
    // What a first run pays that a later one does not (the disk cache under HAL_CACHE_DIR).
    std::printf("\nkernels: %llu compiled in %.2f s, %llu from the disk cache in %.2f s\n",
                static_cast<unsigned long long>(builds.compiled), builds.compile_seconds,
                static_cast<unsigned long long>(builds.from_disk), builds.disk_seconds);
    print_verdict(runs, failures, took);
  }
  return all_ok ? 0 : 1;
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "demo", "Find every device, choose one for a workload, and run reference workloads on all");
  auto quick = std::make_shared<bool>(false);
  auto json_mode = std::make_shared<bool>(false);
  command->add_flag("--quick", *quick, "Smaller workloads and a quick calibration");
  command->add_flag("--json", *json_mode, "Print JSON (schema hal.demo/1)");
  set_work(*command, [quick, json_mode] {
    if (const int status = run(*quick, *json_mode); status != 0) throw ExitStatus{status};
  });
}

}  // namespace hal::tool
