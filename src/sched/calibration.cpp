// calibrate(): the built-in measurements.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <vector>

#include "hal/calibration.hpp"
#include "hal/error.hpp"
#include "hal/log.hpp"
#include "hal/ops.hpp"
#include "hal/stream.hpp"
#include "hal/tensor.hpp"
#include "sched/calibration_store.hpp"

namespace hal {
namespace {

struct Plan {
  size_t copy_bytes;
  int copy_repeats;
  int64_t matmul_first, matmul_last;  // sizes tried, doubling
  double matmul_target_seconds;       // grow the size until one product takes this long
  int matmul_repeats;
  int launch_chain;
};

constexpr Plan kQuick{8u << 20, 3, 128, 1024, 0.01, 2, 100};
constexpr Plan kFull{64u << 20, 5, 256, 2048, 0.05, 3, 500};

// Times are the device's own (timed_on_device), so a simulated device reports its model's.
double best_of(int repeats, Stream& stream, const std::function<void()>& enqueue) {
  double best = timed_on_device(stream, enqueue);  // the first run also warms up
  for (int i = 1; i < repeats; ++i) best = std::min(best, timed_on_device(stream, enqueue));
  return best;
}

void measure_copies(const Device& device, const Plan& plan, Calibration& out) {
  const DeviceInfo& info = device.info();
  size_t bytes = plan.copy_bytes;
  if (info.limits.max_allocation_bytes > 0)
    bytes = std::min<size_t>(bytes, info.limits.max_allocation_bytes / 4);
  Stream stream = device.create_stream();
  Buffer a = device.allocate(bytes), b = device.allocate(bytes);
  // Host memory as a runtime would stage through: pinned where the device has it.
  Buffer pinned;
  std::vector<unsigned char> pageable;
  if (info.has_feature(feature::kPinnedHostMemory))
    pinned = device.allocate(bytes, MemoryKind::pinned_host);
  else
    pageable.assign(bytes, 0);
  unsigned char* host = pinned ? pinned.data<unsigned char>() : pageable.data();
  std::fill(host, host + bytes, static_cast<unsigned char>(0x5a));

  const double gb = static_cast<double>(bytes) / 1e9;
  out.host_to_device_gbps =
      gb / best_of(plan.copy_repeats, stream, [&] { stream.copy_from_host(a, host, bytes); });
  out.device_to_host_gbps =
      gb / best_of(plan.copy_repeats, stream, [&] { stream.copy_to_host(host, a, bytes); });
  // An on-device copy reads and writes each byte: twice the bytes cross the memory bus.
  out.device_bandwidth_gbps =
      2 * gb / best_of(plan.copy_repeats, stream, [&] { stream.copy(b, a, bytes); });
}

// Products of doubling sizes until one takes the plan's target time: the throughput curve.
// Adds each size's figure to `curve` as it is measured: a size that fails (too large for the
// device's memory) keeps the smaller ones.
void measure_matmul(const Device& device, DType dtype, const Plan& plan,
                    std::vector<MatmulFigure>& curve) {
  Stream stream = device.create_stream();
  for (int64_t n = plan.matmul_first; n <= plan.matmul_last; n *= 2) {
    const Tensor a = full({n, n}, 0.5, dtype, stream), b = full({n, n}, 0.25, dtype, stream);
    Tensor c;
    const double seconds = best_of(plan.matmul_repeats, stream, [&] { c = matmul(a, b, stream); });
    curve.push_back({dtype, n, 2.0 * n * n * n / seconds / 1e9});
    if (seconds >= plan.matmul_target_seconds) break;
  }
}

// What one launch costs a chain of dependent one-element ops: the host's enqueue or the
// device's run, whichever is slower (a GPU's launches are bound by the host, a simulated
// device's by its model).
double measure_launch_latency_us(const Device& device, const Plan& plan) {
  Stream stream = device.create_stream();
  Tensor x = zeros({1}, DType::f32, stream);
  const Tensor one = ones({1}, DType::f32, stream);
  x = add(x, one, stream);  // warm-up: compiles what the op needs
  stream.synchronize();
  const auto host_start = std::chrono::steady_clock::now();
  const double device_seconds = timed_on_device(stream, [&] {
    for (int i = 0; i < plan.launch_chain; ++i) x = add(x, one, stream);
  });
  const double host_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
  return std::max(device_seconds, host_seconds) / plan.launch_chain * 1e6;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

// Runs one measurement; a device that cannot do it (Unsupported; OutOfMemory: too little
// memory) leaves its figure at 0, or the part measured. A lost device is an error for the
// caller. Any other failure (a fault, not a property of the device) returns false: the
// calibration is not kept, so that the next one measures again.
template <class Measure>
bool attempt(const Device& device, const char* what, Measure&& measure) {
  try {
    measure();
    return true;
  } catch (const Error& error) {
    if (error.code() == ErrorCode::DeviceLost) throw;
    const bool lacks = error.code() == ErrorCode::Unsupported ||
                       error.code() == ErrorCode::OutOfMemory ||
                       error.code() == ErrorCode::BackendUnavailable;
    log(lacks ? LogLevel::info : LogLevel::warn,
        "calibrating " + device.id() + ": no " + what + " figure: " + std::string(error.what()) +
            (lacks ? "" : " (not cached: the next calibration measures again)"));
    return lacks;
  }
}

}  // namespace

Calibration calibrate(const Device& device, const CalibrationOptions& options) {
  if (!device) throw Error(ErrorCode::InvalidArgument, "calibrate: no device given");
  if (options.use_cache)
    if (std::optional<Calibration> cached = cached_calibration(device))
      if (options.quick || !cached->quick) return *cached;

  const DeviceInfo& info = device.info();
  const Plan& plan = options.quick ? kQuick : kFull;
  const auto start = std::chrono::steady_clock::now();
  Calibration out;
  out.device_id = info.id;
  out.uuid = info.uuid;
  out.driver_version = info.driver_version;
  bool whole = attempt(device, "copy bandwidth", [&] { measure_copies(device, plan, out); });
  std::vector<DType> dtypes{DType::f32};
  if (!options.quick)
    for (DType dtype : {DType::f16, DType::bf16})
      if (info.supports(dtype)) dtypes.push_back(dtype);
  for (DType dtype : dtypes)
    whole &= attempt(device, "matmul", [&] { measure_matmul(device, dtype, plan, out.matmul); });
  whole &= attempt(device, "launch latency",
                   [&] { out.launch_latency_us = measure_launch_latency_us(device, plan); });
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.measured_at = utc_now();
  out.quick = options.quick;
  if (whole) detail::store_calibration(device, out);
  return out;
}

}  // namespace hal
