// `hal select [--min-memory 8G] [--min-tflops 0.1] [--vendor nvidia,amd] [--kind gpu]
// [--dtype f16] [--feature fp64] [--matmul N] [--calibrate] [--json]`: the best device for the
// stated needs, and why every other device lost.
#include <iostream>

#include "choice_json.hpp"
#include "commands.hpp"
#include "json_text.hpp"
#include "option_values.hpp"

namespace hal::tool {
namespace {

// A 2^20-square f32 matrix is 4 TiB, past any device; larger sizes only overflow the figures.
constexpr uint64_t kMaxMatmul = uint64_t{1} << 20;
// TFLOP/s: far past any device, and short of where a requirement stops being a number.
constexpr double kMaxTflops = 1e9;

struct Options {  // numbers as given: hal's strict parser reads them (option_values.hpp)
  std::string min_memory, min_tflops, matmul;
  std::vector<std::string> vendors, kinds, dtypes, features;  // comma-separated lists
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
  if (!o.min_memory.empty())
    r.min_free_memory = size_option("--min-memory", o.min_memory, 0, UINT64_MAX);
  if (!o.min_tflops.empty())
    r.min_tflops = real_option("--min-tflops", o.min_tflops, 0, kMaxTflops);
  r.vendors = names_option("--vendor", o.vendors);
  for (const std::string& kind : names_option("--kind", o.kinds))
    r.kinds.push_back(parse_kind(kind));
  for (const std::string& name : names_option("--dtype", o.dtypes)) {
    const std::optional<DType> dtype = parse_dtype(name);
    if (!dtype) throw Error(ErrorCode::InvalidArgument, "--dtype: no dtype '" + name + "'");
    r.dtypes.push_back(*dtype);
  }
  r.features = names_option("--feature", o.features);
  if (!o.matmul.empty()) {
    const auto n = static_cast<int64_t>(count_option("--matmul", o.matmul, 1, kMaxMatmul));
    const DType dtype = r.dtypes.empty() ? DType::f32 : r.dtypes.front();
    r.workload = Workload::matmul(n, n, n, dtype);
  }
  return r;
}

int run(const Options& options) {
  const Requirements requirements = requirements_of(options);
  const std::vector<Device> devices = hal::devices();
  // A throughput requirement needs measured figures: measure what is not cached yet. A quick
  // calibration measures f32 only, so another dtype asks for a full one (over a quick entry).
  // The throughput is judged in the workload's dtype (the f32 reference without --matmul).
  const bool f32_only = !requirements.workload || requirements.workload->dtype == DType::f32;
  if (options.calibrate || requirements.min_tflops > 0)
    for (const Device& device : devices) {
      const std::optional<Calibration> cached = cached_calibration(device);
      if (cached && (f32_only || !cached->quick)) continue;
      if (!options.json) std::cerr << "calibrating " << device.id() << " ...\n";
      calibrate(device, {.use_cache = true, .quick = f32_only});
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
                     .dump(2, ' ', false, kReplaceBadUtf8)
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
  command->add_option("--vendor", options->vendors, "Preferred vendors, best first (a,b)");
  command->add_option("--kind", options->kinds, "Allowed kinds: cpu, gpu, accelerator (a,b)");
  command->add_option("--dtype", options->dtypes, "Required dtypes: f16, bf16, ... (a,b)");
  command->add_option("--feature", options->features, "Required features (a,b)");
  command->add_option("--matmul", options->matmul,
                      "Rank by an N x N x N matmul, N from 1 to 1048576 (in the first "
                      "--dtype), instead of the reference 2048^3 f32");
  command->add_flag("--calibrate", options->calibrate, "Calibrate uncalibrated devices first");
  command->add_flag("--json", options->json, "Print JSON (schema hal.select/1)");
  // The numbers and names are checked as the command line is parsed; run() reads them again.
  command->parse_complete_callback([options] { (void)requirements_of(*options); });
  set_work(*command, [options] {
    if (const int status = run(*options); status != 0) throw ExitStatus{status};
  });
}

}  // namespace hal::tool
