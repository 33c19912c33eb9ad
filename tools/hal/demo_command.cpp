// `hal demo [--quick] [--json]`, the main job: what this machine has, which device should run
// a stated workload and why, and how each device does on reference workloads, checked against
// cpu:0 and against the cost model's prediction.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "choice_json.hpp"
#include "commands.hpp"
#include "demo_workloads.hpp"
#include "hal/units.hpp"

namespace hal::tool {
namespace {

using json = nlohmann::ordered_json;

struct RunRecord {
  std::string device, workload;
  double seconds = NAN, gflops = NAN, gbps = NAN, speedup = NAN, predicted = NAN;
  double max_abs_diff = NAN;
  bool ok = false;
  std::string error;  // why the device could not run it
};

struct Reference {
  const char* name;
  Workload cost;
  WorkloadResult (*run)(const Device&, const DemoSizes&);
  double tolerance;  // on max |diff| from cpu:0, relative to the largest |value| of cpu:0's
};

double largest_magnitude(const std::vector<float>& values) {
  double largest = 0;
  for (float v : values) largest = std::max(largest, double(std::fabs(v)));
  return largest;
}

// Runs `reference` on `device` (cpu:0 reuses its reference run) and compares with cpu:0's.
RunRecord measure(const Device& device, const Reference& reference, const DemoSizes& sizes,
                  const Device& cpu, const WorkloadResult& on_cpu) {
  RunRecord record;
  record.device = device.id();
  record.workload = reference.name;
  record.predicted = estimate(reference.cost, device).seconds;
  WorkloadResult result;
  try {
    result = device == cpu ? on_cpu : reference.run(device, sizes);
  } catch (const Error& error) {
    record.error = error.what();
    return record;
  }
  record.seconds = result.seconds;
  record.gflops = reference.cost.flops / result.seconds / 1e9;
  record.gbps = reference.cost.bytes / result.seconds / 1e9;
  record.speedup = on_cpu.seconds / result.seconds;
  double diff = result.output.size() == on_cpu.output.size() ? 0 : INFINITY;
  for (size_t i = 0; diff != INFINITY && i < result.output.size(); ++i)
    diff = std::max(diff, double(std::fabs(result.output[i] - on_cpu.output[i])));
  record.max_abs_diff = diff;
  record.ok = diff <= reference.tolerance * std::max(1.0, largest_magnitude(on_cpu.output));
  return record;
}

// cpu:0 checks every result, even where HAL_DEVICES hides it from the runs.
Device reference_cpu() {
  for (const Device& device : Registry::instance().all_devices())
    if (device.id() == "cpu:0") return device;
  throw Error(ErrorCode::NotFound, "hal demo: no cpu:0 to check results against");
}

void say(bool json_mode, const std::string& line) { (json_mode ? std::cerr : std::cout) << line; }

std::string percent(double error) {
  if (std::isnan(error)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%+.0f%%", error * 100);
  return text;
}

void print_table(const std::vector<RunRecord>& runs) {
  std::printf("\n%-10s %-22s %10s %9s %8s %8s %11s %7s %10s %s\n", "device", "workload", "time",
              "GFLOP/s", "GB/s", "vs cpu", "predicted", "error", "max|diff|", "");
  for (const RunRecord& r : runs) {
    if (!r.error.empty()) {
      std::printf("%-10s %-22s skipped: %s\n", r.device.c_str(), r.workload.c_str(),
                  r.error.c_str());
      continue;
    }
    std::printf("%-10s %-22s %10s %9.1f %8.2f %7.2fx %11s %7s %10.2e %s\n", r.device.c_str(),
                r.workload.c_str(), format_seconds(r.seconds).c_str(), r.gflops, r.gbps, r.speedup,
                format_seconds(r.predicted).c_str(),
                percent((r.predicted - r.seconds) / r.seconds).c_str(), r.max_abs_diff,
                r.ok ? "ok" : "MISMATCH");
  }
}

json run_json(const RunRecord& r) {
  json out{{"device", r.device},
           {"workload", r.workload},
           {"time_s", seconds_json(r.seconds)},
           {"gflops", seconds_json(r.gflops)},
           {"gbps", seconds_json(r.gbps)},
           {"speedup_vs_cpu", seconds_json(r.speedup)},
           {"predicted_s", seconds_json(r.predicted)},
           {"prediction_error", seconds_json((r.predicted - r.seconds) / r.seconds)},
           {"max_abs_diff", seconds_json(r.max_abs_diff)},
           {"ok", r.ok}};
  if (!r.error.empty()) out["error"] = r.error;
  return out;
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

  say(json_mode, "\ncalibrating (cached per device and driver under HAL_CACHE_DIR):\n");
  for (const Device& device : machine.devices) {
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
    }
  }

  const std::vector<Reference> references{
      {"mlp", mlp_workload(sizes), run_mlp, 1e-4},
      {"matmul", matmul_workload(sizes), run_matmul, 1e-4},
  };
  Requirements needs;
  needs.workload = references.front().cost;
  const Selection choice = rank_devices(needs, machine.devices);
  say(json_mode, "\nbest device for " + needs.workload->name + ": " +
                     (choice.device ? choice.device.id() : std::string("none")) + "\n" +
                     choice.to_string());

  std::vector<RunRecord> runs;
  bool all_ok = true;
  const Device cpu = reference_cpu();
  for (const Reference& reference : references) {
    say(json_mode, "running " + std::string(reference.name) + " (" + reference.cost.name +
                       ") on every device ...\n");
    const WorkloadResult on_cpu = reference.run(cpu, sizes);
    for (const Device& device : machine.devices) {
      RunRecord record = measure(device, reference, sizes, cpu, on_cpu);
      all_ok = all_ok && (record.ok || !record.error.empty());
      runs.push_back(std::move(record));
    }
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (json_mode) {
    json summary_json = to_json(machine);
    json candidates = candidates_json(choice);
    json list = json::array();
    for (const RunRecord& r : runs) list.push_back(run_json(r));
    std::cout << json{{"schema", "hal.demo/1"},
                      {"quick", quick},
                      {"summary", summary_json},
                      {"choice",
                       {{"workload", needs.workload->name},
                        {"device", choice.device ? json(choice.device.id()) : json(nullptr)},
                        {"candidates", candidates}}},
                      {"runs", list},
                      {"seconds", took}}
                     .dump(2)
              << "\n";
  } else {
    print_table(runs);
    std::printf(
        "\npredicted: the roofline cost model from each device's calibration; error = "
        "(predicted - measured) / measured.\nmax|diff|: largest difference from cpu:0's "
        "result. %s in %.1f s.\n",
        all_ok ? "All results agree" : "SOME RESULTS DISAGREE", took);
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
  command->callback([quick, json_mode] {
    if (const int status = run(*quick, *json_mode); status != 0) throw ExitStatus{status};
  });
}

}  // namespace hal::tool
