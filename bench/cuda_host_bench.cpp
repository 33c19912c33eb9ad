// `hal bench cuda_host`: what hal's CUDA backend adds to each launch on the host, measured
// against the stand-in driver (backends/cuda/stand_in_driver.hpp), whose entry points return at
// once: the time of an empty kernel's launch through hal::Stream minus the stand-in's
// cuLaunchKernel called directly, in the same run. That is the share of #24's launch goal
// (raw cuLaunchKernel + 0.2 us) that is hal's own code, measurable without a GPU; the driver
// calls hal makes beside cuLaunchKernel (the current context, fences) are counted, since on a
// GPU each costs what the driver takes for it.
#include <algorithm>
#include <chrono>
#include <vector>

#include "backends/cuda/stand_in_driver.hpp"
#include "bench_report.hpp"
#include "hal/hal.hpp"

namespace hal::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBlock = 4096;       // launches timed together
constexpr int kRounds = 21;        // blocks of hal and of the raw call, alternating
constexpr double kBudgetNs = 200;  // #24: hal <= raw cuLaunchKernel + 0.2 us

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// Nanoseconds a call (a launch, a copy), timed over a block; `drain` (untimed) afterwards.
template <class Launch, class Drain>
double per_launch(Launch&& launch, Drain&& drain) {
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < kBlock; ++i) launch();
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

  for (int warm = 0; warm < 2; ++warm) {
    per_launch(hal_empty, drain_hal);
    per_launch(raw_empty, drain_raw);
  }
  std::vector<double> hal_e, raw_e, hal_a, raw_a, hal_up, raw_up, hal_down, raw_down;
  const cuda::stand_in::Counts before = driver.counts();
  for (int round = 0; round < kRounds; ++round) {
    hal_e.push_back(per_launch(hal_empty, drain_hal));
    raw_e.push_back(per_launch(raw_empty, drain_raw));
    hal_a.push_back(per_launch(hal_args, drain_hal));
    raw_a.push_back(per_launch(raw_args, drain_raw));
  }
  const cuda::stand_in::Counts after = driver.counts();
  for (int round = 0; round < kRounds; ++round) {
    hal_up.push_back(per_launch(hal_upload, drain_hal));
    raw_up.push_back(per_launch(raw_upload, drain_raw));
    hal_down.push_back(per_launch(hal_download, drain_hal));
    raw_down.push_back(per_launch(raw_download, drain_raw));
  }
  api.cuStreamDestroy(raw);

  // Driver calls a hal launch makes, cuLaunchKernel included (the raw loop makes one), over
  // the hal blocks only: the raw blocks launched as many.
  const double hal_launches = (after.launches - before.launches) / 2.0;
  const double events_made = static_cast<double>(after.events_created - before.events_created);
  const double calls = hal_launches +
                       static_cast<double>(after.context_queries - before.context_queries) +
                       2 * events_made +  // created and destroyed
                       static_cast<double>(after.event_records - before.event_records) +
                       static_cast<double>(after.event_queries - before.event_queries);

  const double added_empty = median(hal_e) - median(raw_e);
  const double added_args = median(hal_a) - median(raw_a);
  return {
      {"launch_empty_added_stand_in", added_empty, "ns", "goal_budget", kBudgetNs,
       added_empty / kBudgetNs, "lower", "ratio <= 1"},
      {"launch_3_args_added_stand_in", added_args, "ns", "goal_budget", kBudgetNs,
       added_args / kBudgetNs, "lower", "ratio <= 1"},
      {"copy_h2d_4k_added_stand_in", median(hal_up) - median(raw_up), "ns", "", 0, 0, "lower", ""},
      {"copy_d2h_4k_added_stand_in", median(hal_down) - median(raw_down), "ns", "", 0, 0, "lower",
       ""},
      {"driver_calls_per_launch", calls / hal_launches, "calls", "raw_cuLaunchKernel", 1.0,
       calls / hal_launches, "lower", ""},
  };
}

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  return hal::bench::run_suite(argc, argv, "cuda_host", "cpu:0", {}, hal::bench::measure);
}
