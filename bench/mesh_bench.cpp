// DeviceMesh at scale: a 32 x 32 mesh over 1 024 simulated devices in one process, built and
// every sub-mesh of both dimensions looked up (issue #18: <= 1 ms). The goal is absolute, so the
// figure's baseline is the goal itself; a plain loop over the same rank arithmetic is measured
// beside it to show what the mesh's bookkeeping adds.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "bench_report.hpp"
#include "hal/dist.hpp"
#include "hal/hal.hpp"

namespace hal::bench {
namespace {

std::vector<Device>& fleet() {
  static std::vector<Device> devices = [] {
    std::vector<Device> sims;
    for (const Device& device : hal::devices())
      if (device.info().backend() == "sim") sims.push_back(device);
    sims.resize(std::min<size_t>(sims.size(), 1024));
    return sims;
  }();
  return devices;
}

// Builds the mesh and looks up the sub-mesh of each device along each dimension.
int64_t build_and_look_up() {
  dist::MeshOptions options;
  options.devices = fleet();
  const dist::DeviceMesh mesh = dist::DeviceMesh::create({32, 32}, {"dp", "tp"}, options);
  int64_t sum = 0;
  for (size_t local = 0; local < 1024; ++local)
    sum += mesh.sub_mesh("dp", local).rank() + mesh.sub_mesh("tp", local).rank();
  return sum;
}

void hal_mesh_32x32(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(build_and_look_up());
}
HAL_GUARDED_BENCHMARK(hal_mesh_32x32)->Unit(benchmark::kMicrosecond);

// The arithmetic alone: every device's coordinates and the ranks of both its groups.
void rank_arithmetic_32x32(benchmark::State& state) {
  for (auto _ : state) {
    int64_t sum = 0;
    for (int64_t rank = 0; rank < 1024; ++rank) {
      std::vector<int64_t> dp(32), tp(32);
      for (int64_t k = 0; k < 32; ++k) {
        dp[k] = rank % 32 + 32 * k;
        tp[k] = rank / 32 * 32 + k;
      }
      sum += dp[rank / 32] + tp[rank % 32];
    }
    benchmark::DoNotOptimize(sum);
  }
}
HAL_GUARDED_BENCHMARK(rank_arithmetic_32x32)->Unit(benchmark::kMicrosecond);

std::vector<Figure> absolute_time() {
  for (int i = 0; i < 3; ++i) build_and_look_up();  // warm: devices' facts read once
  constexpr int kRounds = 20;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) benchmark::DoNotOptimize(build_and_look_up());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      kRounds;
  return {{"mesh_32x32_ms", ms, "ms", "goal_ms", 1.0, ms, "lower",
           "<= 1 ms: build 32 x 32 over 1 024 devices, look up 2 048 sub-meshes"}};
}

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  using namespace hal::bench;
  setenv("HAL_SIM_CONFIG", "devices=1024", /*overwrite=*/0);
  if (fleet().size() < 1024) {
    std::cerr << "hal bench mesh: needs 1 024 sim devices (HAL_SIM_CONFIG=devices=1024); "
              << fleet().size() << " found\n";
    return 2;
  }
  return run_suite(argc, argv, "mesh", "sim:0..1023",
                   {{"mesh_32x32", "hal_mesh_32x32", "rank_arithmetic_32x32", ""}}, absolute_time);
}
