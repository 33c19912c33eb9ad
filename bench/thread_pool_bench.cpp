// hal's CPU thread pool against oneTBB's parallel_for on the same work, in the same run: the
// evidence for keeping a pool of our own (ARCHITECTURE.md prefers well-kept libraries).
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <numeric>
#include <thread>
#include <vector>

#include "backends/cpu/thread_pool.hpp"
#include "bench_report.hpp"

namespace hal::bench {
namespace {

unsigned threads() { return std::max(1u, std::thread::hardware_concurrency()); }

cpu::ThreadPool& pool() {
  static cpu::ThreadPool instance(threads());
  return instance;
}

// Dispatch cost: as many trivial chunks as threads, the shape of a small kernel.
void pool_dispatch(benchmark::State& state) {
  std::vector<uint64_t> slots(threads() * 8, 0);
  for (auto _ : state) {
    pool().parallel_for(threads(), [&](size_t i) { slots[i * 8] += 1; });
    benchmark::ClobberMemory();
  }
}

void tbb_dispatch(benchmark::State& state) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads());
  std::vector<uint64_t> slots(threads() * 8, 0);
  for (auto _ : state) {
    tbb::parallel_for(size_t{0}, size_t{threads()}, [&](size_t i) { slots[i * 8] += 1; });
    benchmark::ClobberMemory();
  }
}

// Throughput: a streaming kernel over 16M floats, split 4 chunks per thread as hal does.
constexpr size_t kElements = size_t{1} << 24;

void pool_stream(benchmark::State& state) {
  std::vector<float> x(kElements, 1.0f), y(kElements, 2.0f);
  const size_t chunks = threads() * 4, chunk = (kElements + chunks - 1) / chunks;
  for (auto _ : state) {
    pool().parallel_for(chunks, [&](size_t c) {
      const size_t end = std::min(kElements, (c + 1) * chunk);
      for (size_t i = c * chunk; i < end; ++i) y[i] = 2.0f * x[i] + y[i];
    });
    benchmark::ClobberMemory();
  }
}

void tbb_stream(benchmark::State& state) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads());
  std::vector<float> x(kElements, 1.0f), y(kElements, 2.0f);
  for (auto _ : state) {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, kElements),
                      [&](const tbb::blocked_range<size_t>& r) {
                        for (size_t i = r.begin(); i < r.end(); ++i) y[i] = 2.0f * x[i] + y[i];
                      });
    benchmark::ClobberMemory();
  }
}

#define HAL_BENCH(fn) \
  HAL_GUARDED_BENCHMARK(fn)->Repetitions(5)->ReportAggregatesOnly(true)->UseRealTime()
HAL_BENCH(pool_dispatch);
HAL_BENCH(tbb_dispatch);
HAL_BENCH(pool_stream)->Unit(benchmark::kMicrosecond);
HAL_BENCH(tbb_stream)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  return hal::bench::run_suite(
      argc, argv, "thread_pool", "cpu:0",
      {
          {"parallel_for_dispatch", "pool_dispatch", "tbb_dispatch", "ratio <= 1"},
          {"parallel_for_saxpy_16m", "pool_stream", "tbb_stream", "ratio <= 1.05"},
      });
}
