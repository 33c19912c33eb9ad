#include "backends/cpu/cpu_onednn.hpp"

#if HAL_HAVE_ONEDNN

namespace hal::cpu::onednn {

using dnnl::memory;

const dnnl::engine& engine() {
  static const dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

memory::desc matrices(memory::data_type type, int64_t batch, int64_t rows, int64_t cols,
                      const GemmOperand& operand) {
  const int64_t count = operand.batch_stride == 0 ? 1 : batch;
  // One matrix: a batch stride past its end, so that oneDNN sees a plain layout and picks its
  // fast kernels (a stride of 0 sends it to its reference loops).
  const int64_t extent = operand.transposed ? cols * operand.ld : rows * operand.ld;
  const int64_t batch_stride = count == 1 ? extent : operand.batch_stride;
  const memory::dims dims{count, rows, cols};
  const memory::dims strides = operand.transposed ? memory::dims{batch_stride, 1, operand.ld}
                                                  : memory::dims{batch_stride, operand.ld, 1};
  return memory::desc(dims, type, strides);
}

memory::data_type data_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return memory::data_type::f32;
    case DType::bf16:
      return memory::data_type::bf16;
    case DType::f16:
      return memory::data_type::f16;
    default:
      return memory::data_type::undef;
  }
}

}  // namespace hal::cpu::onednn

#endif
