// The caching allocator against glibc's malloc in the same run, and the fragmentation of a
// generated training trace (issue #3).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "bench_report.hpp"
#include "hal/hal.hpp"

namespace hal::bench {
namespace {

constexpr size_t kPage = 4096;

Device cpu() { return device("cpu:0"); }

void hal_alloc_free(benchmark::State& state) {
  const Device device = cpu();
  const size_t size = static_cast<size_t>(state.range(0));
  { Buffer warm = device.allocate(size); }  // the first allocation makes the segment
  for (auto _ : state) {
    Buffer buffer = device.allocate(size);
    benchmark::DoNotOptimize(buffer);
  }
}

void malloc_free(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = std::malloc(size);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}

void hal_alloc_touch_free(benchmark::State& state) {
  const Device device = cpu();
  const size_t size = static_cast<size_t>(state.range(0));
  { Buffer warm = device.allocate(size); }
  for (auto _ : state) {
    Buffer buffer = device.allocate(size);
    auto* bytes = buffer.data<char>();
    for (size_t i = 0; i < size; i += kPage) bytes[i] = 1;
    benchmark::ClobberMemory();
  }
}

// hal without its cache: fresh memory from the backend each time, so every page faults. Not
// the goal's baseline; it shows what a cache hit saves.
void direct_alloc_touch_free(benchmark::State& state) {
  const Device device = cpu();
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    Buffer buffer = device.allocate(size, MemoryKind::device, AllocationMode::direct);
    auto* bytes = buffer.data<char>();
    for (size_t i = 0; i < size; i += kPage) bytes[i] = 1;
    benchmark::ClobberMemory();
  }
}

void malloc_touch_free(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    auto* bytes = static_cast<char*>(std::malloc(size));
    for (size_t i = 0; i < size; i += kPage) bytes[i] = 1;
    benchmark::ClobberMemory();
    std::free(bytes);
  }
}

#define HAL_BENCH(fn, bytes) \
  HAL_GUARDED_BENCHMARK_ARG(fn, bytes)->Repetitions(5)->ReportAggregatesOnly(true)->UseRealTime()
HAL_BENCH(hal_alloc_free, 4096);
HAL_BENCH(hal_alloc_free, 1 << 20);
HAL_BENCH(malloc_free, 4096);
HAL_BENCH(malloc_free, 1 << 20);
HAL_BENCH(hal_alloc_touch_free, 16 << 20)->Unit(benchmark::kMicrosecond);
HAL_BENCH(malloc_touch_free, 16 << 20)->Unit(benchmark::kMicrosecond);
HAL_BENCH(direct_alloc_touch_free, 16 << 20)->Unit(benchmark::kMicrosecond);

// A transformer training loop with a batch size that changes every step: weights that stay,
// activations kept for the backward pass, gradients, and short-lived temporaries. Replayed
// through cpu:0's allocator, with nothing written (segments are reserved, not touched).
Figure trace_reserved_over_requested() {
  const Device device = cpu();
  device.empty_cache();
  device.allocator().reset_peak_stats();
  constexpr size_t kLayers = 6, kSeq = 128, kHidden = 256, kHeads = 4, kF32 = 4;
  std::mt19937 random(20261122);
  std::uniform_int_distribution<size_t> batch_of(4, 32);
  std::vector<Buffer> weights;
  for (size_t layer = 0; layer < kLayers; ++layer)
    for (size_t size :
         {kHidden * 3 * kHidden, kHidden * kHidden, kHidden * 4 * kHidden, 4 * kHidden * kHidden})
      weights.push_back(device.allocate(size * kF32));
  uint64_t peak_requested = 0;
  for (int step = 0; step < 60; ++step) {
    const size_t batch = batch_of(random);
    const size_t tokens = batch * kSeq;
    std::vector<Buffer> saved;  // activations kept for backward
    for (size_t layer = 0; layer < kLayers; ++layer) {
      saved.push_back(device.allocate(tokens * 3 * kHidden * kF32));               // qkv
      saved.push_back(device.allocate(batch * kHeads * kSeq * kSeq * kF32));       // attention
      { Buffer softmax_scratch = device.allocate(batch * kHeads * kSeq * kF32); }  // temporary
      saved.push_back(device.allocate(tokens * kHidden * kF32));                   // attention out
      saved.push_back(device.allocate(tokens * 4 * kHidden * kF32));               // mlp hidden
      saved.push_back(device.allocate(tokens * kHidden * kF32));                   // layer out
    }
    std::vector<Buffer> gradients;
    for (size_t layer = kLayers; layer-- > 0;) {
      Buffer grad_out = device.allocate(tokens * kHidden * kF32);
      Buffer grad_hidden = device.allocate(tokens * 4 * kHidden * kF32);
      for (size_t size :
           {kHidden * 3 * kHidden, kHidden * kHidden, kHidden * 4 * kHidden, 4 * kHidden * kHidden})
        gradients.push_back(device.allocate(size * kF32));
      saved.resize(saved.size() - 5);  // this layer's activations are no longer needed
    }
    peak_requested = std::max(peak_requested, device.allocator().stats().requested_bytes.peak);
  }
  const MemoryStats stats = device.allocator().stats();
  const double ratio =
      static_cast<double>(stats.reserved_bytes.peak) / static_cast<double>(peak_requested);
  weights.clear();
  device.empty_cache();
  return {"trace_reserved_over_requested",
          static_cast<double>(stats.reserved_bytes.peak) / 1048576.0,
          "MiB",
          "peak_requested",
          static_cast<double>(peak_requested) / 1048576.0,
          ratio,
          "lower",
          "ratio <= 1.25"};
}

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  return hal::bench::run_suite(
      argc, argv, "memory", "cpu:0",
      {
          {"alloc_free_hit_4k", "hal_alloc_free/4096", "malloc_free/4096", "ratio <= 0.5"},
          {"alloc_free_hit_1m", "hal_alloc_free/1048576", "malloc_free/1048576", "ratio <= 0.5"},
          {"alloc_touch_free_16m", "hal_alloc_touch_free/16777216", "malloc_touch_free/16777216",
           "ratio <= 1.0"},
          {"alloc_touch_free_16m_vs_uncached", "hal_alloc_touch_free/16777216",
           "direct_alloc_touch_free/16777216", "(what a hit saves)"},
      },
      [] { return std::vector{hal::bench::trace_reserved_over_requested()}; });
}
