// Fused elementwise chains on devices that compile portable kernels (OpenCL, CUDA): a kernel
// generated for the chain and the layout's rank, appended to kernels/ops/elementwise.kernel's
// functions (compiled with FUSED), so each op is the same function as its single-op kernel.
// Each work item walks its inputs' strides, keeps the chain's values in registers and writes
// one element. The device's kernel cache keeps each chain's kernel by its text.
#include <string>

#include "core/program_kernels.hpp"
#include "hal/error.hpp"
#include "ops/elementwise.hpp"
#include "ops/op_table.hpp"
#include "ops/portable_defines.hpp"

namespace hal::ops {
namespace {

std::string reg(size_t r) { return "r" + std::to_string(r); }

}  // namespace

// fused(out, in0 .. in<k-1>, n, size0 .. size<rank-1>, then per input its offset and strides).
std::string fused_kernel_source(const FusedProgram& program, size_t rank) {
  const size_t inputs = program.inputs;
  std::string code = "KERNEL void fused(GLOBAL value_t* out";
  for (size_t v = 0; v < inputs; ++v) code += ", GLOBAL const value_t* in" + std::to_string(v);
  code += ", ulong n";
  for (size_t d = 0; d < rank; ++d) code += ", ulong size" + std::to_string(d);
  for (size_t v = 0; v < inputs; ++v) {
    code += ", ulong o" + std::to_string(v);
    for (size_t d = 0; d < rank; ++d)
      code += ", ulong s" + std::to_string(v) + "_" + std::to_string(d);
  }
  code += ") {\n  ulong i = global_id(0);\n  if (i >= n) return;\n  ulong rest = i, index;\n";
  for (size_t v = 0; v < inputs; ++v)
    code += "  ulong at" + std::to_string(v) + " = o" + std::to_string(v) + ";\n";
  // The index's digits, the last dimension fastest.
  for (size_t d = rank; d-- > 0;) {
    const std::string size = "size" + std::to_string(d);
    code +=
        d > 0 ? "  index = rest % " + size + ";\n  rest /= " + size + ";\n" : "  index = rest;\n";
    for (size_t v = 0; v < inputs; ++v)
      code += "  at" + std::to_string(v) + " += index * s" + std::to_string(v) + "_" +
              std::to_string(d) + ";\n";
  }
  for (size_t v = 0; v < inputs; ++v)
    code +=
        "  value_t " + reg(v) + " = in" + std::to_string(v) + "[at" + std::to_string(v) + "];\n";
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const FusedStep& step = program.steps[s];
    const std::string fn = "hal_" + std::string(step.binary ? name(static_cast<Binary>(step.code))
                                                            : name(static_cast<Unary>(step.code)));
    code += "  value_t " + reg(inputs + s) + " = " + fn + "(" + reg(step.a) +
            (step.binary ? ", " + reg(step.b) : std::string()) + ");\n";
  }
  code += "  out[i] = " + reg(inputs + program.steps.size() - 1) + ";\n}\n";
  return code;
}

std::vector<std::string> fused_defines(DType dtype) {
  if (dtype == DType::f64) return {"FUSED", "VALUE_T=double", "T_F64"};
  return {"FUSED", "VALUE_T=float"};
}

void portable_fused(const FusedProgram& program, const std::vector<Tensor>& inputs,
                    const Tensor& out, const FusedLayout& layout, Stream& stream) {
  const size_t rank = layout.shape.size();
  if (rank > kMaxDims)
    throw Error(ErrorCode::Unsupported,
                "fused_elementwise of " + out.describe() + ": the operands walk " +
                    std::to_string(rank) + " separate dimensions, more than the " +
                    std::to_string(kMaxDims) + " the portable kernels take");
  const Kernel kernel =
      detail::compile_program(out.device(), "ops/elementwise", "fused", fused_defines(out.dtype()),
                              fused_kernel_source(program, rank));
  std::vector<KernelArg> args{out.storage()};
  for (const Tensor& input : inputs) args.emplace_back(input.storage());
  args.emplace_back(static_cast<uint64_t>(layout.count));
  for (int64_t size : layout.shape) args.emplace_back(static_cast<uint64_t>(size));
  for (size_t v = 0; v < inputs.size(); ++v) {
    args.emplace_back(static_cast<uint64_t>(layout.offsets[v]));
    for (int64_t stride : layout.strides[v]) args.emplace_back(static_cast<uint64_t>(stride));
  }
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)), args);
}

}  // namespace hal::ops
