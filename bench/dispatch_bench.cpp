// `hal bench dispatch --device opencl:N|cuda:N`: what hal adds to a driver's launches. Each
// figure sets hal beside the same work in the same run: an empty kernel's launch through the
// raw driver API (clEnqueueNDRangeKernel, cuLaunchKernel), and on devices with graphs a graph's
// replay per captured launch; launch-and-wait is also measured paired with the raw API, block by
// block, which holds up on a loaded machine. Compile time is reported cold, from the disk cache and
// from the in-memory cache. Copies are the copy suite's (copy_bench.cpp).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

#include "bench_report.hpp"
#include "bench_target.hpp"
#include "hal/hal.hpp"

namespace hal::bench {
namespace {

constexpr int kDrainEvery = 1024;

Device g_device;
std::unique_ptr<RawBaseline> g_raw;
constexpr int kGraphNodes = 64;

// Vulkan takes SPIR-V: the same empty kernel, compiled from kernels/vulkan/empty.comp.
const Kernel& empty_kernel() {
  static const Kernel kernel =
      g_device.info().backend() == "vulkan"
          ? g_device.compile({"main", std::string(vulkan_empty_kernel()), KernelLanguage::native})
          : g_device.compile({"empty", "KERNEL void empty() {}"});
  return kernel;
}

void hal_launch_sync(benchmark::State& state) {
  Stream stream = g_device.create_stream();
  for (auto _ : state) {
    stream.launch(empty_kernel(), LaunchConfig::linear(1));
    stream.synchronize();
  }
}

void raw_launch_finish(benchmark::State& state) {
  for (auto _ : state) {
    g_raw->enqueue_empty();
    g_raw->finish();
  }
}

void hal_enqueue(benchmark::State& state) {
  Stream stream = g_device.create_stream();
  int since_drain = 0;
  for (auto _ : state) {
    stream.launch(empty_kernel(), LaunchConfig::linear(1));
    if (++since_drain == kDrainEvery) {
      state.PauseTiming();
      stream.synchronize();
      since_drain = 0;
      state.ResumeTiming();
    }
  }
  stream.synchronize();
}

void raw_enqueue(benchmark::State& state) {
  int since_drain = 0;
  for (auto _ : state) {
    g_raw->enqueue_empty();
    if (++since_drain == kDrainEvery) {
      state.PauseTiming();
      g_raw->finish();
      since_drain = 0;
      state.ResumeTiming();
    }
  }
  g_raw->finish();
}

// kGraphNodes raw launches per iteration: what one replay of the graph below replaces.
void raw_enqueue_x64(benchmark::State& state) {
  int since_drain = 0;
  for (auto _ : state) {
    for (int i = 0; i < kGraphNodes; ++i) g_raw->enqueue_empty();
    if (++since_drain == kDrainEvery / kGraphNodes) {
      state.PauseTiming();
      g_raw->finish();
      since_drain = 0;
      state.ResumeTiming();
    }
  }
  g_raw->finish();
}

// One replay of a graph of kGraphNodes empty launches.
void hal_graph_replay(benchmark::State& state) {
  Stream stream = g_device.create_stream();
  stream.begin_capture();
  for (int i = 0; i < kGraphNodes; ++i) stream.launch(empty_kernel(), LaunchConfig::linear(1));
  const Graph graph = stream.end_capture();
  int since_drain = 0;
  for (auto _ : state) {
    stream.launch(graph);
    if (++since_drain == kDrainEvery / kGraphNodes) {
      state.PauseTiming();
      stream.synchronize();
      since_drain = 0;
      state.ResumeTiming();
    }
  }
  stream.synchronize();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kGraphNodes);
}

// Compile times (milliseconds, median of 5): a source no cache has seen, the same source from
// the disk cache (the in-memory cache cleared, as in a new process), and from memory.
std::vector<Figure> compile_figures() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("hal-bench-cache-" + std::to_string(getpid()));
  ::setenv("HAL_CACHE_DIR", dir.c_str(), 1);
  const std::string body = R"(
KERNEL void saxpy(float a, GLOBAL const float* x, GLOBAL float* y, uint n) {
  size_t i = global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)";
  auto time_ms = [](auto&& fn) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::vector<double> cold, disk, memory;
  for (int round = 0; round < 5; ++round) {
    // The comment makes the source new to hal's cache and to the driver's own.
    const KernelSource source{
        "saxpy", "// " + std::to_string(getpid()) + "." + std::to_string(round) + body};
    cold.push_back(time_ms([&] { g_device.compile(source); }));
    g_device.clear_kernel_cache();
    disk.push_back(time_ms([&] {
      if (g_device.compile(source).origin() != KernelOrigin::disk_cache)
        throw std::runtime_error("the disk cache missed");
    }));
    memory.push_back(time_ms([&] { g_device.compile(source); }));
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  const double cold_ms = median(cold), disk_ms = median(disk), memory_ms = median(memory);
  return {
      {"compile_disk_cache_hit", disk_ms, "ms", "compile_cold", cold_ms, disk_ms / cold_ms, "lower",
       ""},
      {"compile_memory_cache_hit", memory_ms, "ms", "compile_cold", cold_ms, memory_ms / cold_ms,
       "lower", ""},
  };
}

// Launch-and-wait through hal and through the raw API in alternating blocks (which goes first
// alternates too), so that both see the same load on a shared machine: the figure is the median
// over the blocks of hal's time over raw's in the same block, with the median times per launch.
std::vector<Figure> paired_launch_figures() {
  constexpr int kBlocks = 101, kLaunches = 20;
  Stream stream = g_device.create_stream();
  const auto hal_block = [&] {
    for (int i = 0; i < kLaunches; ++i) {
      stream.launch(empty_kernel(), LaunchConfig::linear(1));
      stream.synchronize();
    }
  };
  const auto raw_block = [&] {
    for (int i = 0; i < kLaunches; ++i) {
      g_raw->enqueue_empty();
      g_raw->finish();
    }
  };
  const auto seconds = [](auto&& fn) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  hal_block();  // warm: pipelines, command buffers
  raw_block();
  std::vector<double> hal_times, raw_times, ratios;
  for (int block = 0; block < kBlocks; ++block) {
    double hal = 0, raw = 0;
    if (block % 2 == 0) {
      hal = seconds(hal_block);
      raw = seconds(raw_block);
    } else {
      raw = seconds(raw_block);
      hal = seconds(hal_block);
    }
    hal_times.push_back(hal / kLaunches * 1e9);
    raw_times.push_back(raw / kLaunches * 1e9);
    ratios.push_back(hal / raw);
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {{"launch_empty_sync_paired", median(hal_times), "ns", "raw_launch_finish_paired",
           median(raw_times), median(ratios), "lower", "ratio <= 1.1"}};
}

void register_benchmarks() {
  auto add = [](const char* name, void (*fn)(benchmark::State&)) {
    return register_guarded(name, fn)->Repetitions(5)->ReportAggregatesOnly(true)->UseRealTime();
  };
  add("hal_launch_sync", hal_launch_sync);
  add("raw_launch_finish", raw_launch_finish);
  add("hal_enqueue", hal_enqueue);
  add("raw_enqueue", raw_enqueue);
  if (g_device.info().has_feature(feature::kGraphs)) {
    add("hal_graph_replay", hal_graph_replay);
    add("raw_enqueue_x64", raw_enqueue_x64);
  }
}

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  using namespace hal::bench;
  const std::string id = take_option(argc, argv, "--device", "opencl:0");
  try {
    BenchTarget target = open_target(id, "dispatch");
    g_device = target.device;
    g_raw = std::move(target.raw);
    empty_kernel();  // compiled before timing
  } catch (const std::exception& error) {
    std::cerr << "hal bench dispatch: " << error.what() << "\n";
    return 2;
  }
  register_benchmarks();
  std::vector<Comparison> figures = {
      {"launch_empty_sync", "hal_launch_sync", "raw_launch_finish", "ratio <= 1.1"},
      {"enqueue_empty", "hal_enqueue", "raw_enqueue", ""},
  };
  if (g_device.info().has_feature(hal::feature::kGraphs))
    figures.push_back(
        {"graph_replay_64_launches", "hal_graph_replay", "raw_enqueue_x64", "ratio < 1"});
  // Vulkan kernels are SPIR-V compiled at build time: no compile at run time to measure.
  const bool compiles = g_device.info().backend() != "vulkan";
  const auto measure = [compiles] {
    std::vector<Figure> out = paired_launch_figures();
    if (compiles)
      for (Figure& figure : compile_figures()) out.push_back(std::move(figure));
    return out;
  };
  const int status = run_suite(argc, argv, "dispatch", id, figures, measure);
  g_raw.reset();
  return status;
}
