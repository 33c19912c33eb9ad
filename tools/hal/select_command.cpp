// `hal select [--min-memory 8G] [--min-tflops 0.1] [--vendor nvidia,amd] [--kind gpu]
// [--dtype f16] [--feature fp64] [--matmul N] [--calibrate] [--json]`: the best device for the
// stated needs, and why every other device lost.
#include <iostream>

#include "choice_json.hpp"
#include "commands.hpp"
#include "hal/units.hpp"

namespace hal::tool {
namespace {

struct Options {
  std::string min_memory;
  double min_tflops = 0;
  std::vector<std::string> vendors, kinds, dtypes, features;
  int64_t matmul = 0;
  bool calibrate = false;
  bool json = false;
};

DeviceKind parse_kind(const std::string& name) {
  for (DeviceKind kind : {DeviceKind::cpu, DeviceKind::gpu, DeviceKind::accelerator})
    if (name == to_string(kind)) return kind;
  throw Error(ErrorCode::InvalidArgument,
              "--kind: no device kind '" + name + "' (cpu, gpu, accelerator)");
}

Requirements requirements_of(const Options& o) {
  Requirements r;
  if (!o.min_memory.empty()) {
    const std::optional<uint64_t> bytes = parse_bytes(o.min_memory);
    if (!bytes)
      throw Error(ErrorCode::InvalidArgument,
                  "--min-memory: '" + o.min_memory + "' is not a size (say 512M or 8G)");
    r.min_free_memory = *bytes;
  }
  if (o.min_tflops < 0)
    throw Error(ErrorCode::InvalidArgument, "--min-tflops must not be negative");
  r.min_tflops = o.min_tflops;
  r.vendors = o.vendors;
  for (const std::string& kind : o.kinds) r.kinds.push_back(parse_kind(kind));
  for (const std::string& name : o.dtypes) {
    const std::optional<DType> dtype = parse_dtype(name);
    if (!dtype) throw Error(ErrorCode::InvalidArgument, "--dtype: no dtype '" + name + "'");
    r.dtypes.push_back(*dtype);
  }
  r.features = o.features;
  if (o.matmul < 0) throw Error(ErrorCode::InvalidArgument, "--matmul must be positive");
  if (o.matmul > 0) {
    const DType dtype = r.dtypes.empty() ? DType::f32 : r.dtypes.front();
    r.workload = Workload::matmul(o.matmul, o.matmul, o.matmul, dtype);
  }
  return r;
}

int run(const Options& options) {
  const Requirements requirements = requirements_of(options);
  const std::vector<Device> devices = hal::devices();
  // A throughput requirement needs measured figures: measure what is not cached yet.
  if (options.calibrate || requirements.min_tflops > 0)
    for (const Device& device : devices)
      if (!cached_calibration(device)) {
        if (!options.json) std::cerr << "calibrating " << device.id() << " ...\n";
        calibrate(device, {.use_cache = true, .quick = true});
      }
  const Selection selection = rank_devices(requirements, devices);
  if (options.json) {
    std::cout << nlohmann::ordered_json{{"schema", "hal.select/1"},
                                        {"choice",
                                         selection.device
                                             ? nlohmann::ordered_json(selection.device.id())
                                             : nlohmann::ordered_json(nullptr)},
                                        {"workload", requirements.workload
                                                         ? requirements.workload->name
                                                         : reference_workload().name},
                                        {"candidates", candidates_json(selection)}}
                     .dump(2)
              << "\n";
  } else {
    if (selection.device)
      std::cout << "choice: " << selection.device.id() << " (" << selection.device.info().name
                << ")\n";
    else
      std::cout << "choice: none: no device meets the requirements\n";
    std::cout << "workload: "
              << (requirements.workload ? requirements.workload->name : reference_workload().name)
              << "\n\n"
              << selection.to_string();
  }
  return selection.device ? 0 : 1;
}

}  // namespace

void add_select_command(CLI::App& app) {
  auto* command =
      app.add_subcommand("select", "Choose the best device for stated needs and say why");
  auto options = std::make_shared<Options>();
  command->add_option("--min-memory", options->min_memory, "Free device memory needed (8G)");
  command->add_option("--min-tflops", options->min_tflops,
                      "Measured matmul TFLOP/s needed (calibrates devices that are not yet)");
  command->add_option("--vendor", options->vendors, "Preferred vendors, best first")
      ->delimiter(',');
  command->add_option("--kind", options->kinds, "Allowed kinds: cpu, gpu, accelerator")
      ->delimiter(',');
  command->add_option("--dtype", options->dtypes, "Required dtypes (f16, bf16, ...)")
      ->delimiter(',');
  command->add_option("--feature", options->features, "Required features")->delimiter(',');
  command->add_option("--matmul", options->matmul,
                      "Rank by an N x N x N matmul (in the first --dtype) instead of the "
                      "reference 2048^3 f32");
  command->add_flag("--calibrate", options->calibrate, "Calibrate uncalibrated devices first");
  command->add_flag("--json", options->json, "Print JSON (schema hal.select/1)");
  command->callback([options] {
    if (const int status = run(*options); status != 0) throw ExitStatus{status};
  });
}

}  // namespace hal::tool
