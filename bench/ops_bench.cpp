// `hal bench ops [--device ID]`: tensor ops through hal beside what a program would write
// without it, in the same run: add of 16 Mi f32 against a hand-written loop on two threads,
// matmul of 1024^2 and 2048^2 f32 against calling OpenBLAS's cblas_sgemm directly, and the
// enqueue cost of a 4-element add against the stream's smallest enqueue (a 16-byte fill). On a
// device other than cpu:0, the same ops on cpu:0 are measured too, and the device's times are
// given as ratios to them.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <iostream>
#include <thread>
#include <vector>

#include "bench_report.hpp"
#include "hal/hal.hpp"
#include "hal/ops.hpp"

namespace hal::bench {
namespace {

constexpr int64_t kAddElements = 16 << 20;
constexpr int64_t kTinyAdds = 256;  // tiny adds enqueued per synchronize

Device g_device;

// Inputs made once per device, outside the timed loops.
struct Operands {
  explicit Operands(const Device& device) : stream(device.create_stream()) {
    a = uniform({kAddElements}, DType::f32, 1, stream);
    b = uniform({kAddElements}, DType::f32, 2, stream);
    for (int64_t n : {1024, 2048}) {
      left.push_back(uniform({n, n}, DType::f32, 3, stream, -1, 1));
      right.push_back(uniform({n, n}, DType::f32, 4, stream, -1, 1));
    }
    tiny = uniform({4}, DType::f32, 5, stream);
    stream.synchronize();
  }
  Stream stream;
  Tensor a, b, tiny;
  std::vector<Tensor> left, right;
};

Operands& operands(const Device& device) {
  static Operands here(g_device);
  static Operands cpu(hal::device("cpu:0"));
  return device == g_device ? here : cpu;
}

void hal_add_16m(benchmark::State& state, const Device& device) {
  Operands& o = operands(device);
  for (auto _ : state) {
    const Tensor sum = add(o.a, o.b, o.stream);
    o.stream.synchronize();
  }
  state.SetBytesProcessed(state.iterations() * kAddElements * 12);
}

// The baseline a program would write: the same add on the host, split across two threads.
void loop_add_16m(benchmark::State& state) {
  std::vector<float> a(kAddElements, 1.5f), b(kAddElements, 2.5f), out(kAddElements);
  for (auto _ : state) {
    auto half = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = a[i] + b[i];
    };
    std::thread other(half, kAddElements / 2, kAddElements);
    half(0, kAddElements / 2);
    other.join();
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kAddElements * 12);
}

void hal_matmul(benchmark::State& state, const Device& device) {
  Operands& o = operands(device);
  const auto which = static_cast<size_t>(state.range(0) == 1024 ? 0 : 1);
  for (auto _ : state) {
    const Tensor product = matmul(o.left[which], o.right[which], o.stream);
    o.stream.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * 2 * state.range(0) * state.range(0) *
                          state.range(0));  // flops
}

void cblas_matmul(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  std::vector<float> a(static_cast<size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size());
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * 2 * state.range(0) * state.range(0) *
                          state.range(0));
}

void hal_add_tiny(benchmark::State& state) {
  Operands& o = operands(g_device);
  for (auto _ : state) {
    for (int64_t i = 0; i < kTinyAdds; ++i) benchmark::DoNotOptimize(add(o.tiny, o.tiny, o.stream));
    o.stream.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * kTinyAdds);
}

void fill_tiny(benchmark::State& state) {
  Operands& o = operands(g_device);
  const Buffer target = g_device.allocate(16);
  for (auto _ : state) {
    for (int64_t i = 0; i < kTinyAdds; ++i) o.stream.fill(target, 0.0f, 4);
    o.stream.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * kTinyAdds);
}

// The tiny ops again while a trace records them (hal/trace.hpp), into /dev/null: what tracing
// costs a program dominated by launches. Each repetition is a trace of its own (its events
// written, outside the timed loop, when it ends), well under the recorder's million events.
template <void (*Body)(benchmark::State&)>
void traced(benchmark::State& state) {
  trace::start("/dev/null");
  Body(state);
  trace::stop();
}

void register_benchmarks(bool compare_with_cpu) {
  auto configure = [](benchmark::internal::Benchmark* b) {
    b->Repetitions(5)->ReportAggregatesOnly(true)->UseRealTime()->Unit(benchmark::kMillisecond);
  };
  const Device cpu = device("cpu:0");
  configure(register_guarded("hal_add_f32_16m", hal_add_16m, g_device));
  configure(register_guarded("loop_add_f32_16m", loop_add_16m));
  for (int64_t n : {1024, 2048})
    configure(register_guarded_arg("hal_matmul_f32", n, hal_matmul, g_device));
  for (int64_t n : {1024, 2048}) configure(register_guarded_arg("cblas_sgemm", n, cblas_matmul));
  configure(register_guarded("hal_add_f32_tiny", hal_add_tiny));
  configure(register_guarded("fill_tiny", fill_tiny));
  configure(register_guarded("hal_add_f32_tiny_traced", traced<hal_add_tiny>));
  configure(register_guarded("fill_tiny_traced", traced<fill_tiny>));
  if (compare_with_cpu) {
    configure(register_guarded("cpu_add_f32_16m", hal_add_16m, cpu));
    for (int64_t n : {1024, 2048})
      configure(register_guarded_arg("cpu_matmul_f32", n, hal_matmul, cpu));
  }
}

std::vector<Comparison> comparisons(bool compare_with_cpu) {
  const bool cpu = !compare_with_cpu;
  std::vector<Comparison> out{
      {"add_f32_16m", "hal_add_f32_16m", "loop_add_f32_16m",
       cpu ? "ratio <= 1.11 (throughput >= 0.9x)" : ""},
      {"matmul_f32_1024", "hal_matmul_f32/1024", "cblas_sgemm/1024",
       cpu ? "ratio <= 1.031 (throughput >= 0.97x)" : ""},
      {"matmul_f32_2048", "hal_matmul_f32/2048", "cblas_sgemm/2048",
       cpu ? "ratio <= 1.031 (throughput >= 0.97x)" : ""},
      {"add_f32_tiny", "hal_add_f32_tiny", "fill_tiny", ""},
      {"add_f32_tiny_traced", "hal_add_f32_tiny_traced", "hal_add_f32_tiny", "ratio <= 1.10"},
      {"fill_tiny_traced", "fill_tiny_traced", "fill_tiny", "ratio <= 1.10"},
  };
  if (compare_with_cpu) {
    out.push_back({"add_f32_16m_vs_cpu", "hal_add_f32_16m", "cpu_add_f32_16m", ""});
    out.push_back({"matmul_f32_1024_vs_cpu", "hal_matmul_f32/1024", "cpu_matmul_f32/1024", ""});
    out.push_back({"matmul_f32_2048_vs_cpu", "hal_matmul_f32/2048", "cpu_matmul_f32/2048", ""});
  }
  return out;
}

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  using namespace hal::bench;
  const std::string id = take_option(argc, argv, "--device", "cpu:0");
  try {
    g_device = hal::device(id);
    operands(g_device);  // inputs made, and kernels compiled, before anything is timed
    hal::Stream& warm = operands(g_device).stream;
    hal::add(operands(g_device).tiny, operands(g_device).tiny, warm);
    hal::matmul(operands(g_device).left[0], operands(g_device).right[0], warm);
    warm.synchronize();
  } catch (const std::exception& error) {
    std::cerr << "hal bench ops: " << error.what() << "\n";
    return 2;
  }
  const bool compare_with_cpu = id != "cpu:0";
  register_benchmarks(compare_with_cpu);
  return run_suite(argc, argv, "ops", id, comparisons(compare_with_cpu));
}
