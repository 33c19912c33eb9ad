// `hal calibrate [--device ID] [--quick] [--force] [--json]`: measures devices and caches the
// figures that selection and the cost model use.
#include <cstdio>
#include <iostream>

#include "choice_json.hpp"
#include "commands.hpp"
#include "json_text.hpp"

namespace hal::tool {
namespace {

// The best throughput of each dtype measured: "f32 182.3, f16 40.1".
std::string gflops_text(const Calibration& c) {
  std::string text;
  for (DType dtype : kAllDTypes)
    if (const double gflops = c.matmul_gflops(dtype); gflops > 0) {
      char part[48];
      std::snprintf(part, sizeof part, "%s%s %.1f", text.empty() ? "" : ", ",
                    std::string(to_string(dtype)).c_str(), gflops);
      text += part;
    }
  return text.empty() ? "-" : text;
}

void run(const std::string& id, bool quick, bool force, bool json) {
  std::vector<Device> devices =
      id.empty() ? Registry::instance().devices() : std::vector<Device>{device(id)};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  if (!json)
    std::printf("%-10s %9s %9s %11s %10s  %-28s %s\n", "device", "h2d GB/s", "d2h GB/s",
                "device GB/s", "launch us", "matmul GFLOP/s", "took");
  for (const Device& device : devices) {
    const Calibration c = calibrate(device, {.use_cache = !force, .quick = quick});
    if (json) {
      list.push_back(calibration_json(c));
      continue;
    }
    std::printf("%-10s %9.2f %9.2f %11.2f %10.2f  %-28s %.2f s%s\n", device.id().c_str(),
                c.host_to_device_gbps, c.device_to_host_gbps, c.device_bandwidth_gbps,
                c.launch_latency_us, gflops_text(c).c_str(), c.seconds,
                c.from_cache ? " (cached)" : "");
  }
  if (json)
    std::cout << nlohmann::ordered_json{{"schema", "hal.calibrate/1"}, {"devices", list}}.dump(
                     2, ' ', false, kReplaceBadUtf8)
              << "\n";
  else if (!devices.empty() && !calibration_cache_file(devices.front()).empty())
    std::cout << "cached in " << calibration_cache_file(devices.front()).parent_path().string()
              << "\n";
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "calibrate", "Measure copy bandwidth, matmul throughput and launch latency of devices");
  auto id = std::make_shared<std::string>();
  auto quick = std::make_shared<bool>(false);
  auto force = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  command->add_option("--device", *id, "One device (default: every visible one)");
  command->add_flag("--quick", *quick, "Smaller sizes, fewer repetitions, f32 only");
  command->add_flag("--force", *force, "Measure again even where the cache holds figures");
  command->add_flag("--json", *json, "Print JSON (schema hal.calibrate/1)");
  set_work(*command, [=] { run(*id, *quick, *force, *json); });
}

}  // namespace hal::tool
