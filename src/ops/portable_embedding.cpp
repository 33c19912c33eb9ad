// embedding and its backward on devices that compile portable kernels (OpenCL, CUDA): rows
// gathered (kernels/ops/elementwise.kernel's gather_rows) and rows added along chains of equal
// indices (kernels/ops/embedding.kernel).
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
  const Tensor links = empty_beside(wide, {wide.numel()}, DType::i64);
  stream.launch(detail::compile_program(device, "ops/embedding", "embedding_links", {}),
                LaunchConfig::linear(n),
                {links.storage(), wide.storage(), static_cast<uint64_t>(wide.offset()), n});
  stream.launch(detail::compile_program(device, "ops/embedding", "embedding_add_rows",
                                        embedding_defines(grad.dtype())),
                LaunchConfig::linear(n * dim),
                {out.storage(), grad.storage(), wide.storage(), links.storage(),
                 static_cast<uint64_t>(out.offset()), static_cast<uint64_t>(grad.offset()),
                 static_cast<uint64_t>(wide.offset()), dim, static_cast<uint64_t>(out.size(0)), n});
}

}  // namespace hal::ops
