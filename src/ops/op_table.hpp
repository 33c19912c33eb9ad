// The op table: what each op is (one descriptor: name, family, arity, attributes, the dtypes it
// takes, how its result's dtype follows) and who implements it (kernels registered per device
// kind x op x dtype: host kernels, portable kernels, a plugin's built-in ops, a vendor library
// that outranks them). Every op's definition asks the table for its plan; `hal ops` prints the
// same table, so what hal says a device runs is what it runs.
//
// Adding an op: one descriptor in op_descriptors.cpp, its kernels in op_kernels.cpp.
// Overriding one op on one backend: an implementation with a higher priority whose `runs_on`
// names that backend (op_kernels.cpp's matrix products: OpenBLAS, CLBlast, cuBLAS).
#pragma once

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "hal/backend.hpp"
#include "ops/dtype_set.hpp"
#include "ops/elementwise.hpp"
#include "ops/reduce.hpp"

namespace hal::ops {

enum class OpFamily : uint8_t {
  binary,
  unary,
  where,
  cast,
  reduce,
  matmul,
  composite,  // built from other ops where a device has no kernel of its own for it
  fused       // fused_elementwise: a chain of binary and unary ops in one kernel
};

// How an op's result dtype follows from the dtype its inputs are promoted to (promote_types).
enum class ResultRule : uint8_t {
  same,      // the inputs' dtype
  boolean,   // comparisons
  index,     // i64 positions (argmax)
  counting,  // bool and integers sum into i64; floating dtypes keep theirs
  floating,  // bool and integers give f32 (PyTorch's default float); floating dtypes keep theirs
  given,     // the dtype the caller names (cast)
};

struct OpDescriptor {
  std::string_view name;
  OpFamily family;
  uint8_t code;  // the family's enum value (Binary, Unary, Reduce); 0 for the others
  uint8_t arity;
  std::string_view attributes;  // "axes, keepdim", "" for none
  DTypeSet dtypes;              // the (promoted) input dtypes the op takes
  ResultRule result;
  std::span<const std::string_view> built_from;  // composite ops: the ops they are made of
};

std::span<const OpDescriptor> op_descriptors();
// NotFound naming the op for an unknown name.
const OpDescriptor& descriptor(std::string_view name);
const OpDescriptor& descriptor(Binary op);
const OpDescriptor& descriptor(Unary op);
const OpDescriptor& descriptor(Reduce op);
const OpDescriptor& cast_descriptor();
const OpDescriptor& where_descriptor();
const OpDescriptor& matmul_descriptor();
const OpDescriptor& conv_descriptor();
const OpDescriptor& conv_transpose_descriptor();
const OpDescriptor& fused_descriptor();
const OpDescriptor& concat_descriptor();

DType result_dtype(const OpDescriptor& op, DType input);

// Kernels, one signature per family.
using BinaryKernel = void (*)(Binary op, const Tensor& a, const Tensor& b, const Tensor& out,
                              const ElementwiseLayout<2>& layout, Stream& stream);
using UnaryKernel = void (*)(Unary op, const Tensor& x, const Tensor& out,
                             const ElementwiseLayout<1>& layout, Stream& stream);
using WhereKernel = void (*)(const Tensor& cond, const Tensor& a, const Tensor& b,
                             const Tensor& out, const ElementwiseLayout<3>& layout, Stream& stream);
using CastKernel = void (*)(const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                            Stream& stream);
using ReduceKernel = void (*)(Reduce op, const Tensor& x, const Tensor& out,
                              const ReduceLayout& layout, const std::vector<bool>& reduced_axes,
                              Stream& stream);
using GemmKernel = void (*)(const GemmDesc& gemm, Stream& stream);
using ConvKernel = void (*)(const ConvDesc& conv, Stream& stream);
// A composite op computed by one kernel of its own, over the rows of a contiguous x (the last
// `cols` elements: softmax's axis, a norm's trailing dimensions); weight and bias may be
// undefined; `out` is contiguous like x.
struct RowwiseArgs {
  const Tensor& x;
  const Tensor& weight;
  const Tensor& bias;
  const Tensor& out;
  int64_t rows = 0, cols = 0;
  double eps = 0;
};
using RowwiseKernel = void (*)(const OpDescriptor& op, const RowwiseArgs& args, Stream& stream);
void host_rowwise(const OpDescriptor& op, const RowwiseArgs& args, Stream& stream);  // the CPU's
// OpenCL's and CUDA's (portable_rowwise.cpp)
void portable_rowwise(const OpDescriptor& op, const RowwiseArgs& args, Stream& stream);
// layer_norm_backward and rms_norm_backward (the op says which): x's gradient `dx` from x and
// the output's gradient `grad` over the rows of their last `cols` elements; weight may be
// undefined; all contiguous. Where weight_grad (bias_grad), of `cols` elements, is defined, the
// weight's (bias's) gradient too: the sum over rows of grad * xhat (grad).
struct NormBackwardArgs {
  const Tensor& x;
  const Tensor& grad;
  const Tensor& weight;
  const Tensor& dx;
  int64_t rows = 0, cols = 0;
  double eps = 0;
  Tensor weight_grad = {}, bias_grad = {};
};
using NormBackwardKernel = void (*)(const OpDescriptor& op, const NormBackwardArgs& args,
                                    Stream& stream);
void host_norm_backward(const OpDescriptor& op, const NormBackwardArgs& args, Stream& stream);
void portable_norm_backward(const OpDescriptor& op, const NormBackwardArgs& args, Stream& stream);
using FusedKernel = void (*)(const FusedProgram& program, const std::vector<Tensor>& inputs,
                             const Tensor& out, const FusedLayout& layout, Stream& stream);
// The layers' kernels (docs/training.md): each op's own signature.
using ConcatKernel = void (*)(const std::vector<Tensor>& parts, int64_t axis, const Tensor& out,
                              Stream& stream);
// embedding (rows of `table` gathered into out) and embedding_backward (rows of `table` added
// into out, zeroed first).
using RowsKernel = void (*)(const Tensor& table, const Tensor& indices, const Tensor& out,
                            Stream& stream);
using CrossEntropyKernel = void (*)(const Tensor& logits, const Tensor& targets, const Tensor& out,
                                    int64_t ignore_index, double label_smoothing, Stream& stream);
using CrossEntropyBackwardKernel = void (*)(const Tensor& logits, const Tensor& targets,
                                            const Tensor& grad, const Tensor& out,
                                            int64_t ignore_index, double label_smoothing,
                                            Stream& stream);
using DropoutKernel = void (*)(const Tensor& x, const Tensor& out, double p, uint64_t seed,
                               Stream& stream);
struct Window;
using PoolKernel = void (*)(bool max, const Tensor& x, const Tensor& out, const Window& window,
                            bool count_include_pad, Stream& stream);
using OpKernel = std::variant<BinaryKernel, UnaryKernel, WhereKernel, CastKernel, ReduceKernel,
                              GemmKernel, ConvKernel, RowwiseKernel, NormBackwardKernel,
                              FusedKernel, ConcatKernel, RowsKernel, CrossEntropyKernel,
                              CrossEntropyBackwardKernel, DropoutKernel, PoolKernel>;

struct OpImplementation {
  std::string_view provider;  // "host kernels", "portable kernels", "OpenBLAS", ...
  // The devices it runs on (a feature they list, or their backend).
  bool (*runs_on)(const DeviceInfo& device);
  DTypeSet dtypes;  // the dtypes it computes in (for cast: both sides)
  // Narrows `dtypes` per device (f64 only with the fp64 feature, a plugin's own list); null
  // when `dtypes` is the whole story.
  bool (*takes)(DType dtype, const DeviceInfo& device) = nullptr;
  int priority = 0;  // a backend's override (a vendor library) outranks the defaults (0)
  OpKernel kernel;
};

// The implementation of `op` in `dtype` on `device` with the highest priority, or null.
const OpImplementation* find_implementation(const OpDescriptor& op, DType dtype,
                                            const DeviceInfo& device);

// How an op runs for one input dtype on one device: in `compute` (the input's dtype, or the
// one it is converted to first: f32 for f16/bf16 where the device has no kernel for them, i64
// for integer sums, f32 for floating functions of integers), by `implementation` (null for
// composite ops that run their parts; a composite op may have a fused kernel of its own). `refusal`
// says why not when it cannot run.
struct OpPlan {
  const OpDescriptor* op = nullptr;
  DType input{};
  DType compute{};
  DType result{};
  const OpImplementation* implementation = nullptr;
  std::string refusal;  // empty when the op runs
  bool runs() const { return refusal.empty(); }
};

OpPlan plan(const OpDescriptor& op, DType input, const DeviceInfo& device);
// The plan on the operands' device, or Unsupported naming the op, the operands (dtypes, shapes,
// device) and why.
OpPlan plan_or_throw(const OpDescriptor& op, DType input,
                     std::initializer_list<const Tensor*> operands);

// Operand `x` in the plan's compute dtype: x itself when it has it (a tensor's copy copies its
// shape and strides, allocations a small op would spend on nothing), else its cast on `stream`,
// kept in `cast` (an optional: a tiny op should not spend the zeroing of two unused Tensors).
const Tensor& in_compute_dtype(const Tensor& x, const OpPlan& plan, Stream& stream,
                               std::optional<Tensor>& cast);
// The op's result in the plan's result dtype (f16 computed in f32 goes back to f16).
Tensor as_result(Tensor out, const OpPlan& plan, Stream& stream);

}  // namespace hal::ops
