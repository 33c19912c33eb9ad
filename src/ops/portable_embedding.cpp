// embedding and its backward on devices that compile portable kernels (OpenCL, CUDA): rows
// gathered (kernels/ops/elementwise.kernel's gather_rows) and rows added along chains of equal
// indices (kernels/ops/embedding.kernel).
#include <algorithm>

#include "core/program_kernels.hpp"
#include "ops/elementwise.hpp"
#include "ops/op_checks.hpp"
#include "ops/portable_defines.hpp"

namespace hal::ops {
namespace {

// One index type for the kernels: i32 indices widened first (a copy of the indices alone).
Tensor wide_indices(const Tensor& indices, Stream& stream) {
  return indices.dtype() == DType::i64 ? indices : cast_of(indices, DType::i64, stream);
}

}  // namespace

void portable_embedding(const Tensor& table, const Tensor& indices, const Tensor& out,
                        Stream& stream) {
  const Tensor wide = wide_indices(indices, stream);
  const Kernel kernel = detail::compile_program(table.device(), "ops/elementwise", "gather_rows",
                                                where_defines(table.element_size()));
  const auto n = static_cast<uint64_t>(out.numel());
  stream.launch(kernel, LaunchConfig::linear(n),
                {out.storage(), wide.storage(), table.storage(),
                 static_cast<uint64_t>(wide.offset()), static_cast<uint64_t>(table.offset()),
                 static_cast<uint64_t>(table.size(1)), static_cast<uint64_t>(table.size(0)), n});
}

void portable_embedding_backward(const Tensor& grad, const Tensor& indices, const Tensor& out,
                                 Stream& stream) {
  const Device& device = grad.device();
  const Tensor wide = wide_indices(indices, stream);
  const auto n = static_cast<uint64_t>(wide.numel());
  const auto dim = static_cast<uint64_t>(out.size(1));
  stream.fill(out.storage(), uint8_t{0}, static_cast<size_t>(out.numel()) * out.element_size(),
              static_cast<size_t>(out.offset()) * out.element_size());
  // The passes over chunks of positions: a position looks for its neighbours of equal index
  // within its chunk alone, n x 4096 compares at worst rather than n^2 (32 768 distinct indices
  // on PoCL: 274 ms as one chunk), and each chunk's walks add to what the chunks before it
  // left, in the CPU's order still. A chunk is two launches: far fewer than a chunk's compares.
  constexpr uint64_t kChunk = 4096;
  const Kernel links_kernel =
      detail::compile_program(device, "ops/embedding", "embedding_links", {});
  const Kernel rows_kernel = detail::compile_program(device, "ops/embedding", "embedding_add_rows",
                                                     embedding_defines(grad.dtype()));
  const Tensor links = empty_beside(wide, {std::min<int64_t>(wide.numel(), kChunk)}, DType::i64);
  for (uint64_t first = 0; first < n; first += kChunk) {
    const uint64_t count = std::min<uint64_t>(kChunk, n - first);
    const auto at = static_cast<uint64_t>(wide.offset()) + first;
    stream.launch(links_kernel, LaunchConfig::linear(count),
                  {links.storage(), wide.storage(), at, count});
    stream.launch(
        rows_kernel, LaunchConfig::linear(count * dim),
        {out.storage(), grad.storage(), wide.storage(), links.storage(),
         static_cast<uint64_t>(out.offset()), static_cast<uint64_t>(grad.offset()) + first * dim,
         at, dim, static_cast<uint64_t>(out.size(0)), count});
  }
}

}  // namespace hal::ops
