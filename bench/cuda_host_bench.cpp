// `hal bench cuda_host`: what hal's CUDA backend adds to each launch on the host, measured
// against the stand-in driver (backends/cuda/stand_in_driver.hpp), whose entry points return at
// once: the time of an empty kernel's launch through hal::Stream minus the stand-in's
// cuLaunchKernel called directly, in the same run. That is the share of #24's launch goal
// (raw cuLaunchKernel + 0.2 us) that is hal's own code, measurable without a GPU; the driver
// calls hal makes beside cuLaunchKernel (the current context, fences) are counted, since on a
// GPU each costs what the driver takes for it.
#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <string_view>
#include <vector>

#include "backends/cuda/stand_in_driver.hpp"
#include "bench_report.hpp"
#include "hal/hal.hpp"

namespace hal::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBlock = 4096;       // calls timed together
constexpr int kRounds = 21;        // blocks of hal and of the raw call, alternating
constexpr double kBudgetNs = 200;  // #24: hal <= raw cuLaunchKernel + 0.2 us

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// Nanoseconds a call (a launch, a copy), timed over a block; `drain` (untimed) afterwards.
template <class Call, class Drain>
double per_call(Call&& call, Drain&& drain) {
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < kBlock; ++i) call();
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  drain();
  return ns / kBlock;
}

std::vector<Figure> measure() {
  cuda::stand_in::Driver driver;
  const Device device = driver.device();
  const Kernel kernel = driver.kernel(device, "empty");
  Stream stream = device.create_stream();
  const Buffer a = device.allocate(256), b = device.allocate(256);
  const cuda::CuApi& api = *driver.api();
  CUstream raw = nullptr;
  api.cuStreamCreate(&raw, CU_STREAM_NON_BLOCKING);
  const CUfunction native = driver.function();
  uint64_t index = 16;
  void* params[3] = {&index, &index, &index};  // what cuLaunchKernel reads is the driver's affair

  const auto hal_empty = [&] { stream.launch(kernel, LaunchConfig::linear(1)); };
  const auto hal_args = [&] {
    stream.launch(kernel, LaunchConfig::linear(64),
                  {KernelArg::borrow(a), KernelArg::borrow(b), 64u});
  };
  const auto raw_empty = [&] {
    api.cuLaunchKernel(native, 1, 1, 1, 1, 1, 1, 0, raw, nullptr, nullptr);
  };
  const auto raw_args = [&] {
    api.cuLaunchKernel(native, 1, 1, 1, 64, 1, 1, 0, raw, params, nullptr);
  };
  // A 4 KiB upload and download (the stand-in copies at once, in both loops).
  std::vector<unsigned char> host(4096, 1);
  const Buffer page = device.allocate(4096);
  const CUdeviceptr page_address =
      reinterpret_cast<CUdeviceptr>(native_memory(page).handle) + native_memory(page).offset;
  const auto hal_upload = [&] { stream.copy_from_host(page, host.data(), host.size()); };
  const auto raw_upload = [&] {
    api.cuMemcpyHtoDAsync(page_address, host.data(), host.size(), raw);
  };
  const auto hal_download = [&] { stream.copy_to_host(host.data(), page, host.size()); };
  const auto raw_download = [&] {
    api.cuMemcpyDtoHAsync(host.data(), page_address, host.size(), raw);
  };
  const auto drain_hal = [&] { stream.synchronize(); };
  const auto drain_raw = [&] { api.cuStreamSynchronize(raw); };

  // Each figure: hal's call beside the stand-in's own, blocks alternating.
  struct Pair {
    const char* name;
    std::function<void()> hal, raw;
    std::vector<double> hal_ns{}, raw_ns{};
  };
  std::array<Pair, 4> pairs{{{"launch_empty_added_stand_in", hal_empty, raw_empty},
                             {"launch_3_args_added_stand_in", hal_args, raw_args},
                             {"copy_h2d_4k_added_stand_in", hal_upload, raw_upload},
                             {"copy_d2h_4k_added_stand_in", hal_download, raw_download}}};
  for (int warm = 0; warm < 2; ++warm)
    for (Pair& pair : pairs) {
      per_call(pair.hal, drain_hal);
      per_call(pair.raw, drain_raw);
    }
  for (int round = 0; round < kRounds; ++round)
    for (Pair& pair : pairs) {
      pair.hal_ns.push_back(per_call(pair.hal, drain_hal));
      pair.raw_ns.push_back(per_call(pair.raw, drain_raw));
    }

  // Driver calls a hal launch makes, cuLaunchKernel included (the raw loop makes one).
  const cuda::stand_in::Counts before = driver.counts();
  for (int round = 0; round < kRounds; ++round) {
    per_call(hal_empty, drain_hal);
    per_call(hal_args, drain_hal);
  }
  const cuda::stand_in::Counts after = driver.counts();
  api.cuStreamDestroy(raw);
  const double launches = static_cast<double>(after.launches - before.launches);
  const double calls = launches +
                       static_cast<double>(after.context_queries - before.context_queries) +
                       2.0 * static_cast<double>(after.events_created - before.events_created) +
                       static_cast<double>(after.event_records - before.event_records) +
                       static_cast<double>(after.event_queries - before.event_queries);

  std::vector<Figure> figures;
  for (const Pair& pair : pairs) {
    const double added = median(pair.hal_ns) - median(pair.raw_ns);
    const bool launch = std::string_view(pair.name).starts_with("launch");
    figures.push_back({pair.name, added, "ns", launch ? "goal_budget" : "", launch ? kBudgetNs : 0,
                       launch ? added / kBudgetNs : 0, "lower", launch ? "ratio <= 1" : ""});
  }
  figures.push_back({"driver_calls_per_launch", calls / launches, "calls", "raw_cuLaunchKernel",
                     1.0, calls / launches, "lower", ""});
  return figures;
}

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  return hal::bench::run_suite(argc, argv, "cuda_host", "cpu:0", {}, hal::bench::measure);
}
