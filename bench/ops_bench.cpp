// `hal bench ops [--device ID]`: tensor ops through hal beside what a program would write
// without it, in the same run: add of 16 Mi f32 against a hand-written loop on two threads,
// matmul of 1024^2 and 2048^2 f32 against calling OpenBLAS's cblas_sgemm directly, and the
// enqueue cost of a 4-element add against the stream's smallest enqueue (a 16-byte fill). On a
// device other than cpu:0, the same ops on cpu:0 are measured too, and the device's times are
// given as ratios to them. On a device that compiles portable kernels (OpenCL, CUDA), the suite
// first tunes hal's kernels for its shapes (hal tune, reusing the tuning cache), then measures
// per shape matmul against the vendor BLAS called directly, hal's GEMM with tuned against
// default parameters, and a 64 Mi-element sum against cpu:0's.
// On cpu:0 (issue #23): sums of a 4096^2 f32 matrix over its last and
// over its first axis against a hand-written read of the same bytes on two threads (the memory
// read bandwidth), a 2048^2 bf16 matmul against hal's own f32 one, and gelu(y + b) * s over
// 16 Mi f32 as one fused_elementwise against the three ops apart. On CUDA devices: 8192^2 f16
// and bf16 and 4096^2 f32 products against cublasGemmEx called directly on the same operands.
// On every device: softmax, layer_norm and layer_norm's three gradients over [4096, 1024] f32
// rows against the same ops built from their parts (reductions and elementwise ops).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <array>
#include <iostream>
#include <map>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench_report.hpp"
#include "cublas_baseline.hpp"
#include "hal/hal.hpp"
#include "hal/ops.hpp"
#include "hal/tune.hpp"
#include "ops/gemm_choice.hpp"
#include "ops/normalization.hpp"
#include "ops/portable_gemm.hpp"
#include "ops/reduce_params.hpp"

#if HAL_HAVE_ONEDNN
#include <dnnl.h>
#endif

namespace hal::bench {
namespace {

constexpr int64_t kAddElements = 16 << 20;
constexpr int64_t kTinyAdds = 256;  // tiny adds enqueued per synchronize
constexpr int64_t kSquare = 4096;   // the reductions' and the fused chain's matrix

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
  // The cpu:0 suite's own operands, made when first used.
  void make_cpu_operands() {
    if (square.defined()) return;
    square = uniform({kSquare, kSquare}, DType::f32, 6, stream, -2, 2);
    bias = uniform({kSquare}, DType::f32, 7, stream, -1, 1);
    scale = uniform({1}, DType::f32, 8, stream, 0.5, 1.5);
    left_bf16 = cast(left[1], DType::bf16, stream);
    right_bf16 = cast(right[1], DType::bf16, stream);
    stream.synchronize();
  }
  Stream stream;
  Tensor a, b, tiny;
  std::vector<Tensor> left, right;
  Tensor square, bias, scale, left_bf16, right_bf16;
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

void hal_sum(benchmark::State& state, int64_t axis) {
  Operands& o = operands(g_device);
  o.make_cpu_operands();
  for (auto _ : state) {
    const Tensor total = sum(o.square, {axis}, false, o.stream);
    o.stream.synchronize();
  }
  state.SetBytesProcessed(state.iterations() * kSquare * kSquare * 4);
}

// The memory read bandwidth: the matrix's bytes read once by a hand-written loop on two threads
// (64-bit integer sums the compiler vectorises; the result kept so that the reads stay).
void read_square(benchmark::State& state) {
  const size_t words = kSquare * kSquare / 2;
  std::vector<uint64_t> data(words, 3);
  for (auto _ : state) {
    uint64_t totals[2] = {0, 0};
    auto half = [&](size_t part) {
      uint64_t total = 0;
      for (size_t i = part * words / 2; i < (part + 1) * words / 2; ++i) total += data[i];
      totals[part] = total;
    };
    std::thread other(half, 1);
    half(0);
    other.join();
    benchmark::DoNotOptimize(totals[0] + totals[1]);
  }
  state.SetBytesProcessed(state.iterations() * kSquare * kSquare * 4);
}

void hal_matmul_bf16(benchmark::State& state) {
  Operands& o = operands(g_device);
  o.make_cpu_operands();
  for (auto _ : state) {
    const Tensor product = matmul(o.left_bf16, o.right_bf16, o.stream);
    o.stream.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * 2 * 2048 * 2048 * 2048);
}

// On CUDA devices: square products of kGpuGemm (f16, bf16) and kGpuGemmF32 through hal's matmul
// and through cublasGemmEx called directly on the same operands (issue #24: hal >= 0.9x).
constexpr int64_t kGpuGemm = 8192, kGpuGemmF32 = 4096;
struct GpuGemm {
  GpuGemm(DType dtype, int64_t n, Stream& stream)
      : a(cast(uniform({n, n}, DType::f32, 11, stream, -1, 1), dtype, stream)),
        b(cast(uniform({n, n}, DType::f32, 12, stream, -1, 1), dtype, stream)),
        c(empty({n, n}, dtype, stream.device())) {
    stream.synchronize();
  }
  // Made when the baseline's benchmark first runs: a baseline that cannot be made fails that
  // benchmark alone, not hal's beside it.
  GemmBaseline& baseline() {
    if (!baseline_) baseline_ = make_cublas_gemm(a, b, c);
    if (!baseline_) throw std::runtime_error("hal was built without CUDA: no cuBLAS baseline");
    return *baseline_;
  }
  Tensor a, b, c;

 private:
  std::unique_ptr<GemmBaseline> baseline_;
};
GpuGemm& gpu_gemm(DType dtype) {
  static std::map<DType, GpuGemm> made;
  auto at = made.find(dtype);
  if (at == made.end())
    at = made.try_emplace(dtype, dtype, dtype == DType::f32 ? kGpuGemmF32 : kGpuGemm,
                          operands(g_device).stream)
             .first;
  return at->second;
}
void gpu_matmul(benchmark::State& state, DType dtype, bool through_hal) {
  GpuGemm& g = gpu_gemm(dtype);
  Stream& stream = operands(g_device).stream;
  for (auto _ : state) {
    if (through_hal) {
      const Tensor product = matmul(g.a, g.b, stream);
      stream.synchronize();
    } else {
      g.baseline().run();
    }
  }
  const int64_t n = g.a.shape()[0];
  state.SetItemsProcessed(state.iterations() * 2 * n * n * n);
}

// gelu(y + b) * s: y a 4096^2 matrix (a matmul's output), b a bias row, s a scalar scale.
void hal_gelu_bias(benchmark::State& state, bool fused) {
  Operands& o = operands(g_device);
  o.make_cpu_operands();
  const ElementwiseProgram program{{{"add", {0, 1}}, {"gelu", {3}}, {"mul", {4, 2}}}};
  for (auto _ : state) {
    const Tensor out =
        fused ? fused_elementwise(program, {o.square, o.bias, o.scale}, o.stream)
              : mul(gelu(add(o.square, o.bias, o.stream), o.stream), o.scale, o.stream);
    o.stream.synchronize();
  }
  state.SetBytesProcessed(state.iterations() * kSquare * kSquare * 8);
}

// A linear layer, act(x @ w + b), x [2048, 64], w [64, 2048]: a product small next to its
// 16 MiB result, so the epilogue's passes over the result show. Fused: the product's epilogue
// (hal's GEMM applies it as it stores; a fused pass after a vendor BLAS); unfused: matmul, add
// and the activation as three ops.
void hal_linear(benchmark::State& state, const std::string& activation, bool fused) {
  Stream& stream = operands(g_device).stream;
  const Tensor x = uniform({2048, 64}, DType::f32, 11, stream, -1, 1);
  const Tensor w = uniform({64, 2048}, DType::f32, 12, stream, -0.2, 0.2);
  const Tensor b = uniform({2048}, DType::f32, 13, stream, -1, 1);
  stream.synchronize();
  for (auto _ : state) {
    const Tensor h = fused ? Tensor() : add(matmul(x, w, stream), b, stream);
    const Tensor y = fused                  ? matmul(x, w, {b, activation}, stream)
                     : activation == "relu" ? relu(h, stream)
                                            : gelu(h, stream);
    stream.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * 2 * 2048 * 2048 * 64);
}

// An embedding's gradient, 4 096 positions (indices i * 7919 mod 8 000: most distinct) into
// 8 000 rows of 64: the op table's kernel against the one-hot product that devices without it
// run (and that OpenCL, CUDA and Vulkan ran before theirs), [4 096, 8 000] ones-and-zeros
// times the gradient.
void embedding_backward_rows(benchmark::State& state, bool one_hot) {
  constexpr int64_t kPositions = 4096, kRows = 8000, kDim = 64;
  Stream& stream = operands(g_device).stream;
  std::vector<int64_t> picks(kPositions);
  for (int64_t i = 0; i < kPositions; ++i) picks[i] = i * 7919 % kRows;
  const Tensor indices = from_vector(picks, {kPositions}, stream);
  const Tensor grad = uniform({kPositions, kDim}, DType::f32, 14, stream, -1, 1);
  stream.synchronize();
  for (auto _ : state) {
    const Tensor rows = one_hot ? matmul(cast(eq(indices.reshape({kPositions, 1}),
                                                 arange(kRows, DType::i64, stream), stream),
                                              DType::f32, stream)
                                             .transpose(0, 1),
                                         grad, stream)
                                : embedding_backward(grad, indices, kRows, stream);
    stream.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * kPositions * kDim);
}

// softmax, layer_norm and layer_norm's gradients (x's, the weight's and the bias's) over
// [4 096, 1 024] f32 rows, a transformer's hidden states: the op, whose fused kernel runs where
// the device has one, against the same built from its parts (what a device without the kernel
// runs, xhat shared between the gradients as there).
constexpr int64_t kNormRows = 4096, kNormCols = 1024;
enum class RowWork { softmax, layer_norm, layer_norm_backward };

void rows_op(benchmark::State& state, RowWork work, bool parts) {
  Stream& stream = operands(g_device).stream;
  const Tensor x = uniform({kNormRows, kNormCols}, DType::f32, 21, stream, -3, 3);
  const Tensor grad = uniform({kNormRows, kNormCols}, DType::f32, 22, stream, -1, 1);
  const Tensor weight = uniform({kNormCols}, DType::f32, 23, stream, 0.5, 2);
  const Tensor bias = uniform({kNormCols}, DType::f32, 24, stream, -1, 1);
  const Tensor eps = full({}, 1e-5, DType::f32, stream);
  const std::vector<int64_t> last{1}, first{0};
  const auto normalised = [&] {
    const Tensor centred = sub(x, mean(x, last, true, stream), stream);
    const Tensor rstd =
        rsqrt(add(mean(mul(centred, centred, stream), last, true, stream), eps, stream), stream);
    return std::pair{mul(centred, rstd, stream), rstd};
  };
  const auto once = [&]() -> Tensor {
    switch (work) {
      case RowWork::softmax: {
        if (!parts) return softmax(x, 1, stream);
        const Tensor exps = exp(sub(x, max(x, last, true, stream), stream), stream);
        return div(exps, sum(exps, last, true, stream), stream);
      }
      case RowWork::layer_norm:
        if (!parts) return layer_norm(x, {kNormCols}, weight, bias, 1e-5, stream);
        return add(mul(normalised().first, weight, stream), bias, stream);
      case RowWork::layer_norm_backward: {
        if (!parts)
          return ops::norm_gradients(true, x, grad, {kNormCols}, weight, 1e-5, true, true, stream)
              .x;
        const auto [xhat, rstd] = normalised();
        const Tensor g = mul(grad, weight, stream);
        const Tensor inner =
            sub(sub(g, mul(xhat, mean(mul(g, xhat, stream), last, true, stream), stream), stream),
                mean(g, last, true, stream), stream);
        benchmark::DoNotOptimize(sum(mul(grad, xhat, stream), first, false, stream));
        benchmark::DoNotOptimize(sum(grad, first, false, stream));
        return mul(rstd, inner, stream);
      }
    }
    return Tensor();
  };
  once();  // kernels compiled, memory cached
  stream.synchronize();
  for (auto _ : state) {
    benchmark::DoNotOptimize(once());
    stream.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * kNormRows * kNormCols);
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
// written, outside the timed loop, when it ends). A repetition of the add at the default 0.5 s
// records about 1.7 million events (three an op), past the recorder's million: its later ones
// take the cheaper dropped path, so the add's figure understates tracing's cost a little.
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
  if (!compare_with_cpu) {
    configure(register_guarded("hal_sum_rows_f32_4096", hal_sum, int64_t{1}));
    configure(register_guarded("hal_sum_cols_f32_4096", hal_sum, int64_t{0}));
    configure(register_guarded("read_f32_4096", read_square));
    configure(register_guarded("hal_matmul_bf16/2048", hal_matmul_bf16));
    configure(register_guarded("hal_fused_gelu_bias_16m", hal_gelu_bias, true));
    configure(register_guarded("hal_unfused_gelu_bias_16m", hal_gelu_bias, false));
  }
  if (!compare_with_cpu || portable) {
    for (const std::string activation : {"relu", "gelu"}) {
      configure(
          register_guarded("hal_linear_" + activation + "_fused", hal_linear, activation, true));
      configure(
          register_guarded("hal_linear_" + activation + "_unfused", hal_linear, activation, false));
    }
  }
  for (const auto& [name, work] :
       {std::pair{"softmax", RowWork::softmax}, std::pair{"layer_norm", RowWork::layer_norm},
        std::pair{"layer_norm_backward", RowWork::layer_norm_backward}}) {
    configure(register_guarded(std::string("hal_") + name + "_rows", rows_op, work, false));
    configure(register_guarded(std::string("parts_") + name + "_rows", rows_op, work, true));
  }
  configure(register_guarded("hal_embedding_backward", embedding_backward_rows, false));
  configure(register_guarded("one_hot_embedding_backward", embedding_backward_rows, true));
  if (compare_with_cpu) {
    configure(register_guarded("cpu_add_f32_16m", hal_add_16m, cpu));
    for (int64_t n : {1024, 2048})
      configure(register_guarded_arg("cpu_matmul_f32", n, hal_matmul, cpu));
  }
  if (g_device.info().backend() == "cuda") {
    for (DType dtype : {DType::f16, DType::bf16, DType::f32}) {
      const std::string n = std::to_string(dtype == DType::f32 ? kGpuGemmF32 : kGpuGemm);
      const std::string name = std::string(to_string(dtype)) + "/" + n;
      configure(register_guarded("hal_matmul_" + name, gpu_matmul, dtype, true));
      configure(register_guarded("cublas_gemm_" + name, gpu_matmul, dtype, false));
    }
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

// The instruction set oneDNN, which runs the CPU's bf16 and f16 matrix products, chose here.
std::string matmul_isa() {
#if HAL_HAVE_ONEDNN
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_avx512_core_amx:
      return "oneDNN on avx512_core_amx";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "oneDNN on avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "oneDNN on avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core:
      return "oneDNN on avx512_core";
    case dnnl_cpu_isa_avx2_vnni:
      return "oneDNN on avx2_vnni";
    case dnnl_cpu_isa_avx2:
      return "oneDNN on avx2";
    default:
      return "oneDNN on an older instruction set";
  }
#else
  return "no oneDNN: f32 products";
#endif
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
  if (cpu) {
    out.push_back({"sum_rows_f32_4096", "hal_sum_rows_f32_4096", "read_f32_4096",
                   "ratio <= 1.25 (>= 80% of the read bandwidth)"});
    out.push_back({"sum_cols_f32_4096", "hal_sum_cols_f32_4096", "read_f32_4096",
                   "ratio <= 1.25 (>= 80% of the read bandwidth)"});
    out.push_back({"matmul_bf16_2048", "hal_matmul_bf16/2048", "hal_matmul_f32/2048",
                   "ratio <= 0.667 (throughput >= 1.5x f32; " + matmul_isa() + ")"});
    out.push_back({"fused_gelu_bias_16m", "hal_fused_gelu_bias_16m", "hal_unfused_gelu_bias_16m",
                   "ratio <= 0.5"});
  }
  if (cpu || portable)
    for (const std::string activation : {"relu", "gelu"})
      out.push_back({"linear_" + activation + "_2048x2048x64_fused_vs_unfused",
                     "hal_linear_" + activation + "_fused", "hal_linear_" + activation + "_unfused",
                     ""});
  for (const std::string name : {"softmax", "layer_norm", "layer_norm_backward"})
    out.push_back(
        {name + "_f32_4096x1024_vs_parts", "hal_" + name + "_rows", "parts_" + name + "_rows", ""});
  out.push_back({"embedding_backward_4096x8000x64_vs_one_hot", "hal_embedding_backward",
                 "one_hot_embedding_backward", ""});
  if (compare_with_cpu) {
    out.push_back({"add_f32_16m_vs_cpu", "hal_add_f32_16m", "cpu_add_f32_16m", ""});
    out.push_back({"matmul_f32_1024_vs_cpu", "hal_matmul_f32/1024", "cpu_matmul_f32/1024", ""});
    out.push_back({"matmul_f32_2048_vs_cpu", "hal_matmul_f32/2048", "cpu_matmul_f32/2048", ""});
  }
  if (g_device.info().backend() == "cuda") {
    for (const char* dtype : {"f16", "bf16"})
      out.push_back({std::string("matmul_") + dtype + "_8192_vs_cublas",
                     std::string("hal_matmul_") + dtype + "/8192",
                     std::string("cublas_gemm_") + dtype + "/8192",
                     "ratio <= 1.111 (throughput >= 0.9x)"});
    out.push_back({"matmul_f32_4096_vs_cublas", "hal_matmul_f32/4096", "cublas_gemm_f32/4096", ""});
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
