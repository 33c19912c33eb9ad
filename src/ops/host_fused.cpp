// The CPU's fused elementwise chains: one pass over the output, a block of up to kBlock elements
// of a row at a time. Each step runs over the whole block (f32 through the vector kernels of
// ops/simd, the single ops' own; otherwise, and under HAL_CPU_ISA=scalar, a plain loop of the
// same element functions), its result staying in a small scratch register that lives in L1, so
// the chain reads its inputs and writes its output once instead of once per op.
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ops/elementwise.hpp"
#include "ops/host_element_functions.hpp"
#include "ops/simd/simd_kernels.hpp"
#include "tensor/strided_walk.hpp"

namespace hal::ops {
namespace {

constexpr int64_t kBlock = 256;

template <class T>
void run_step(const FusedStep& step, const T* a, const T* b, T* out, int64_t n,
              const simd::Kernels* simd) {
  if constexpr (std::is_same_v<T, float>) {
    if (simd && (step.binary ? simd->binary(static_cast<Binary>(step.code), simd::Storage::f32, a,
                                            1, b, 1, out, static_cast<size_t>(n))
                             : simd->unary(static_cast<Unary>(step.code), simd::Storage::f32, a,
                                           out, static_cast<size_t>(n))))
      return;
  }
  if (step.binary) {
    host::with_op(static_cast<Binary>(step.code), [&]<Binary kOp>() {
      if constexpr (!is_comparison(kOp)) {
        const host::BinaryFn<kOp> fn;
        for (int64_t k = 0; k < n; ++k) out[k] = fn(a[k], b[k]);
      }
    });
    return;
  }
  host::with_op(static_cast<Unary>(step.code), [&]<Unary kOp>() {
    const host::UnaryFn<kOp> fn;
    for (int64_t k = 0; k < n; ++k) out[k] = fn(a[k]);
  });
}

template <class T>
void launch_fused(const FusedProgram& program, const std::vector<Tensor>& inputs, const Tensor& out,
                  const FusedLayout& layout, Stream& stream) {
  const simd::Kernels* simd = std::is_same_v<T, float> ? simd::active() : nullptr;
  const Kernel kernel =
      host_kernel("fused_elementwise", [program, layout, simd](const KernelChunk& chunk) {
        const size_t n_inputs = program.inputs, registers = n_inputs + program.steps.size();
        T* dst = chunk.args.ptr<T>(0);
        std::array<const T*, kMaxFusedInputs> in{};
        for (size_t v = 0; v < n_inputs; ++v)
          in[v] = chunk.args.ptr<const T>(v + 1) + layout.offsets[v];
        std::vector<T> scratch(registers * static_cast<size_t>(kBlock));
        std::vector<const T*> reg(registers);
        // A broadcast input's copy repeats one element: which, and for how many elements, so
        // that it is refilled only when the walk reaches another (a scalar: never).
        std::array<const T*, kMaxFusedInputs> repeated{};
        std::array<int64_t, kMaxFusedInputs> repeats{};
        const uint64_t begin = chunk.begin[0], end = chunk.end[0];
        tensor::StridedWalk<kMaxFusedInputs> walk(layout.shape, layout.strides, {},
                                                  static_cast<int64_t>(begin));
        for (uint64_t i = begin; i < end;) {
          const int64_t n = std::min({walk.inner_left(), static_cast<int64_t>(end - i), kBlock});
          for (size_t v = 0; v < n_inputs; ++v) {
            const T* row = in[v] + walk.at(v);
            const int64_t stride = layout.strides[v].back();
            if (stride == 1) {  // read in place
              reg[v] = row;
              // The next block's lines requested now, to arrive while this block computes (a
              // chain with a costly step, as gelu, otherwise waits for memory at each block);
              // only within the row, so no address is formed past its end.
              if (walk.inner_left() >= 2 * kBlock)
                for (int64_t k = 0; k < kBlock; k += 64 / static_cast<int64_t>(sizeof(T)))
                  __builtin_prefetch(row + kBlock + k);
              continue;
            }
            T* copy = scratch.data() + v * kBlock;
            if (stride == 0) {
              if (repeated[v] != row || repeats[v] < n) {
                std::fill_n(copy, n, *row);
                repeated[v] = row;
                repeats[v] = n;
              }
            } else {
              for (int64_t k = 0; k < n; ++k) copy[k] = row[k * stride];
            }
            reg[v] = copy;
          }
          for (size_t s = 0; s < program.steps.size(); ++s) {
            const FusedStep& step = program.steps[s];
            const bool last = s + 1 == program.steps.size();
            T* result = last ? dst + i : scratch.data() + (n_inputs + s) * kBlock;
            run_step<T>(step, reg[step.a], step.binary ? reg[step.b] : nullptr, result, n, simd);
            reg[n_inputs + s] = result;
          }
          i += static_cast<uint64_t>(n);
          walk.advance_inner(n);
        }
      });
  std::vector<KernelArg> args{out.storage()};
  for (const Tensor& input : inputs) args.emplace_back(input.storage());
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)), args);
}

}  // namespace

void host_fused(const FusedProgram& program, const std::vector<Tensor>& inputs, const Tensor& out,
                const FusedLayout& layout, Stream& stream) {
  if (!layout.flat) {  // large transposed inputs copied into rows first, as the single ops do
    std::vector<Tensor> rows_of_inputs;
    bool copied = false;
    for (size_t v = 0; v < inputs.size(); ++v) {
      auto rows = host_rows_of(inputs[v], layout.strides[v].back(), layout.count, stream);
      copied = copied || rows.has_value();
      rows_of_inputs.push_back(rows ? std::move(*rows) : inputs[v]);
    }
    if (copied)
      return host_fused(program, rows_of_inputs, out, layout_of(rows_of_inputs, out.shape()),
                        stream);
  }
  if (out.dtype() == DType::f64)
    launch_fused<double>(program, inputs, out, layout, stream);
  else
    launch_fused<float>(program, inputs, out, layout, stream);
}

}  // namespace hal::ops
