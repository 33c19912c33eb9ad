// `hal bench ops [--device ID]`: tensor ops through hal beside what a program would write
// without it, in the same run: add of 16 Mi f32 against a hand-written loop on two threads,
// matmul of 1024^2 and 2048^2 f32 against calling OpenBLAS's cblas_sgemm directly, and the
// enqueue cost of a 4-element add against the stream's smallest enqueue (a 16-byte fill). On a
// device other than cpu:0, the same ops on cpu:0 are measured too, and the device's times are
// given as ratios to them. On a device that compiles portable kernels (OpenCL, CUDA), the suite
// first tunes hal's kernels for its shapes (hal tune, reusing the tuning cache), then measures
// per shape matmul against the vendor BLAS called directly, hal's GEMM with tuned against
// default parameters, and a 64 Mi-element sum against cpu:0's.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <array>
#include <iostream>
#include <thread>
#include <vector>

#include "bench_report.hpp"
#include "hal/hal.hpp"
#include "hal/ops.hpp"
#include "hal/tune.hpp"
#include "ops/gemm_choice.hpp"
#include "ops/portable_gemm.hpp"
#include "ops/reduce_params.hpp"

namespace hal::bench {
namespace {

constexpr int64_t kAddElements = 16 << 20;
constexpr int64_t kTinyAdds = 256;  // tiny adds enqueued per synchronize

Device g_device;

// The matmul shapes measured per shape on portable devices (m x n x k).
constexpr std::array<TuneShape, 6> kShapes{{{256, 256, 256},
                                            {1024, 1024, 1024},
                                            {2048, 2048, 2048},
                                            {2048, 128, 2048},
                                            {128, 2048, 2048},
                                            {4096, 4096, 64}}};
constexpr int64_t kSumElements = int64_t{64} << 20;

std::string shape_name(const TuneShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

// One matmul of each shape on one device, its GemmDesc for calling kernels directly.
struct ShapeOperands {
  ShapeOperands(const TuneShape& s, Stream& stream)
      : a(uniform({s.m, s.k}, DType::f32, 6, stream, -1, 1)),
        b(uniform({s.k, s.n}, DType::f32, 7, stream, -1, 1)),
        c(empty({s.m, s.n}, DType::f32, stream.device())) {
    gemm.m = s.m;
    gemm.n = s.n;
    gemm.k = s.k;
    gemm.a = {a.storage().impl(), 0, s.k, 0, false};
    gemm.b = {b.storage().impl(), 0, s.n, 0, false};
    gemm.c = {c.storage().impl(), 0, s.n, 0, false};
  }
  Tensor a, b, c;
  GemmDesc gemm;
};

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

std::vector<ShapeOperands>& shape_operands() {
  static std::vector<ShapeOperands> all = [] {
    std::vector<ShapeOperands> out;
    for (const TuneShape& s : kShapes) out.emplace_back(s, operands(g_device).stream);
    operands(g_device).stream.synchronize();
    return out;
  }();
  return all;
}

// kShapes[range(0)] through `run` on g_device.
template <class Run>
void per_shape(benchmark::State& state, Run run) {
  const auto which = static_cast<size_t>(state.range(0));
  ShapeOperands& o = shape_operands()[which];
  Stream& stream = operands(g_device).stream;
  for (auto _ : state) {
    run(o, stream);
    stream.synchronize();
  }
  const TuneShape& s = kShapes[which];
  state.SetItemsProcessed(state.iterations() * 2 * s.m * s.n * s.k);
}

void shape_matmul(benchmark::State& state) {
  per_shape(state, [](ShapeOperands& o, Stream& stream) { matmul(o.a, o.b, stream); });
}
void shape_vendor(benchmark::State& state) {
  per_shape(state, [](ShapeOperands& o, Stream& stream) { stream.impl()->gemm(o.gemm); });
}
void shape_default(benchmark::State& state) {
  per_shape(state, [](ShapeOperands& o, Stream& stream) {
    ops::portable_gemm(o.gemm, ops::default_gemm_params(g_device.info()), stream);
  });
}
void shape_tuned(benchmark::State& state) {
  per_shape(state, [](ShapeOperands& o, Stream& stream) {
    ops::portable_gemm(o.gemm, ops::gemm_choice(g_device.info(), o.gemm).params, stream);
  });
}

// A full sum of 64 Mi f32; `one_group`: one work-group for the whole sum (how every reduction
// ran before the two-stage plan).
void sum_64m(benchmark::State& state, const Device& device, bool one_group) {
  static Tensor here, cpu;
  Tensor& x = device == g_device ? here : cpu;
  Stream& stream = operands(device).stream;
  if (!x.defined()) x = uniform({kSumElements}, DType::f32, 8, stream);
  const Tensor out = empty({}, DType::f32, device);
  const ops::ReduceLayout layout = ops::reduce_layout(x, {true});
  for (auto _ : state) {
    if (one_group)
      ops::portable_reduce(ops::Reduce::sum, x, out, layout, ops::ReduceParams{256, 0}, stream);
    else
      benchmark::DoNotOptimize(sum(x, {0}, false, stream));
    stream.synchronize();
  }
  state.SetBytesProcessed(state.iterations() * kSumElements * 4);
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

void register_benchmarks(bool compare_with_cpu, bool portable) {
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
  if (portable) {
    for (int64_t i = 0; i < static_cast<int64_t>(kShapes.size()); ++i) {
      configure(register_guarded_arg("shape_matmul", i, shape_matmul));
      configure(register_guarded_arg("shape_vendor", i, shape_vendor));
      configure(register_guarded_arg("shape_default", i, shape_default));
      configure(register_guarded_arg("shape_tuned", i, shape_tuned));
    }
    configure(register_guarded("hal_sum_f32_64m", sum_64m, g_device, false));
    configure(register_guarded("hal_sum_f32_64m_one_group", sum_64m, g_device, true));
    configure(register_guarded("cpu_sum_f32_64m", sum_64m, cpu, false));
  }
}

std::vector<Comparison> comparisons(bool compare_with_cpu, bool portable) {
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
  if (portable) {
    const std::string vendor = ops::vendor_blas(g_device.info());
    out.push_back({"matmul_f32_2048_vs_openblas", "hal_matmul_f32/2048", "cblas_sgemm/2048",
                   "ratio <= 4 (throughput >= 0.25x)"});
    for (size_t i = 0; i < kShapes.size(); ++i) {
      const std::string at = "/" + std::to_string(i), name = shape_name(kShapes[i]);
      out.push_back({"matmul_f32_" + name + "_vs_" + vendor, "shape_matmul" + at,
                     "shape_vendor" + at, "ratio <= 1.05 (never slower, within noise)"});
      out.push_back(
          {"gemm_f32_" + name + "_tuned_vs_default", "shape_tuned" + at, "shape_default" + at, ""});
    }
    out.push_back({"sum_f32_64m_vs_cpu", "hal_sum_f32_64m", "cpu_sum_f32_64m",
                   "ratio <= 2 (throughput >= 0.5x)"});
    out.push_back({"sum_f32_64m_vs_one_group", "hal_sum_f32_64m", "hal_sum_f32_64m_one_group", ""});
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
  const bool portable = g_device.info().has_feature(hal::feature::kPortableKernels);
  if (portable) {
    try {  // tuned once, then read from the tuning cache
      hal::TuneOptions options;
      options.matmul_shapes.assign(kShapes.begin(), kShapes.end());
      options.reduce_counts = {kSumElements};
      options.budget =
          std::chrono::seconds(std::stoi(take_option(argc, argv, "--tune-budget", "300")));
      const hal::TuneReport report = hal::tune(g_device, options);
      for (const hal::TuneEntry& e : report.entries)
        std::cerr << "tuned " << e.op << " " << e.shape_class << ": " << e.choice << " ("
                  << e.params << ")" << (e.from_cache ? " [cached]" : "") << "\n";
      shape_operands();
    } catch (const std::exception& error) {
      std::cerr << "hal bench ops: tuning " << id << ": " << error.what() << "\n";
      return 2;
    }
  }
  register_benchmarks(compare_with_cpu, portable);
  return run_suite(argc, argv, "ops", id, comparisons(compare_with_cpu, portable));
}
