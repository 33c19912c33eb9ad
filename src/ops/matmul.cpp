// matmul: the definition (shapes, batch broadcasting, layouts the BLAS takes) and the GEMM the
// op table plans (the stream's backend's BLAS: OpenBLAS, CLBlast, cuBLAS; f16 and bf16 in f32).
// Operands whose memory a BLAS cannot describe (neither rows nor columns contiguous, or batches not
// one stride apart) are copied contiguous first. The product with an epilogue (bias, activation)
// has hal's own GEMM apply it as it stores each block where that GEMM runs the product, or the
// backend's library where it takes one (oneDNN on the CPU); else one fused pass follows.
#include <limits>
#include <optional>

#include "autograd/record.hpp"
#include "hal/backend.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "ops/fallback.hpp"
#include "ops/gemm_choice.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_table.hpp"
#include "ops/portable_gemm.hpp"

namespace hal {
namespace {

// The stride between consecutive batch entries of `t` (row-major over its leading dims), if one
// stride describes them all.
std::optional<int64_t> batch_stride(const Tensor& t) {
  const size_t batch_dims = t.shape().size() - 2;
  std::optional<int64_t> stride;
  int64_t span = 0;  // elements one step of the current dim must skip
  for (size_t d = batch_dims; d-- > 0;) {
    const int64_t size = t.shape()[d], step = t.strides()[d];
    if (size == 1) continue;
    if (!stride) {
      stride = step;
      span = step * size;
    } else if (step == span) {
      span *= size;
    } else {
      return std::nullopt;
    }
  }
  return stride.value_or(0);
}

// How the BLAS reads `in`'s matrices, copying it contiguous into `packed` first when it cannot.
GemmOperand operand_of(const Tensor& in, std::optional<Tensor>& packed, Stream& stream) {
  const Tensor* operand = &in;
  const size_t rank = in.shape().size();
  const int64_t rows = in.shape()[rank - 2], cols = in.shape()[rank - 1];
  const int64_t row_stride = in.strides()[rank - 2], col_stride = in.strides()[rank - 1];
  std::optional<int64_t> batch = batch_stride(in);
  GemmOperand out;
  // Read in place only with a leading dimension the BLAS's 32-bit ints hold: OpenBLAS refused a
  // larger one with a message on stderr and left the result zero.
  constexpr int64_t kLdMax = std::numeric_limits<int32_t>::max();
  const auto fits = [&](int64_t ld) { return ld <= kLdMax; };
  if (batch && (col_stride == 1 || cols == 1) && (row_stride >= cols || rows == 1) &&
      fits(row_stride)) {
    out.ld = rows == 1 ? std::max<int64_t>(cols, 1) : row_stride;
  } else if (batch && (row_stride == 1 || rows == 1) && (col_stride >= rows || cols == 1) &&
             fits(col_stride)) {
    out.transposed = true;
    out.ld = cols == 1 ? std::max<int64_t>(rows, 1) : col_stride;
  } else {
    operand = &packed.emplace(in.contiguous(stream));
    batch = batch_stride(*operand);
    out.ld = std::max<int64_t>(cols, 1);
  }
  out.buffer = operand->storage().impl();
  out.offset = static_cast<uint64_t>(operand->offset());
  out.batch_stride = *batch;
  return out;
}

void check_operands(const Tensor& a, const Tensor& b, const Stream& stream) {
  if (!a.defined() || !b.defined())
    throw Error(ErrorCode::InvalidArgument, "matmul of an undefined tensor");
  const auto both = [&] {  // built only for an error
    return "matmul of " + a.describe() + " and " + b.describe();
  };
  if (!(a.device() == b.device()))
    throw Error(ErrorCode::InvalidArgument, both() + ": the tensors are on different devices (" +
                                                a.device().id() + " and " + b.device().id() +
                                                "); copy one with to() first");
  if (a.dim() == 0 || b.dim() == 0)
    throw Error(ErrorCode::InvalidArgument, both() + ": a 0-d tensor has no matrix");
  if (!(stream.device() == a.device()))
    throw Error(ErrorCode::InvalidArgument, both() + " on a stream of " + stream.device().id() +
                                                ": use a stream of " + a.device().id());
}

// The element functions an epilogue may end with, as the ops they are.
using ElementFunction = Tensor (*)(const Tensor&, Stream&);
ElementFunction activation_op(std::string_view name) {
  static const std::pair<std::string_view, ElementFunction> known[] = {
      {"relu", relu}, {"gelu", gelu}, {"tanh", tanh}, {"sigmoid", sigmoid}, {"silu", silu}};
  static_assert(std::size(known) == std::size(ops::kGemmActivations));
  for (const auto& [known_name, function] : known)
    if (known_name == name) return function;
  return nullptr;
}

// Refuses an epilogue that does not fit the product of a and b: before anything is enqueued.
void check_epilogue(const Tensor& a, const Tensor& b, const MatmulEpilogue& epilogue) {
  const auto what = [&] {
    return "matmul of " + a.describe() + " and " + b.describe() + " with an epilogue";
  };
  if (!epilogue.activation.empty() && !activation_op(epilogue.activation))
    throw Error(ErrorCode::InvalidArgument,
                what() + ": no activation '" + epilogue.activation +
                    "' (it takes relu, gelu, tanh, sigmoid, silu, or none)");
  const Tensor& bias = epilogue.bias;
  if (!bias.defined()) return;
  if (!(bias.device() == a.device()))
    throw Error(ErrorCode::InvalidArgument, what() + ": the bias is on " + bias.device().id() +
                                                ", the operands on " + a.device().id());
  if (b.dim() == 1)
    throw Error(ErrorCode::InvalidArgument,
                what() + ": a product with a vector b has no columns to add a bias to");
  const int64_t n = b.size(-1);
  if (bias.dim() != 1 || bias.size(0) != n)
    throw Error(ErrorCode::InvalidArgument,
                what() + ": the bias " + bias.describe() + " must be a vector of the result's " +
                    std::to_string(n) + " columns, [" + std::to_string(n) + "]");
  const DType product = promote_types(a.dtype(), b.dtype());
  if (bias.dtype() != product)
    throw Error(ErrorCode::InvalidArgument,
                what() + ": the bias is " + std::string(to_string(bias.dtype())) +
                    ", the product " + std::string(to_string(product)) + "; cast it first");
}

// The epilogue as ops on the product: one fused pass where the device has the kernel.
Tensor apply_epilogue(Tensor out, const Tensor& bias, const std::string& activation,
                      Stream& stream) {
  if (!bias.defined() && activation.empty()) return out;
  if (supports_op(out.device(), "fused_elementwise", out.dtype())) {
    ElementwiseProgram program;
    std::vector<Tensor> inputs{out};
    if (bias.defined()) {
      inputs.push_back(bias);
      program.steps.push_back({"add", {0, 1}});
    }
    if (!activation.empty())
      program.steps.push_back(
          {activation, {static_cast<int>(inputs.size() + program.steps.size()) - 1}});
    return fused_elementwise(program, inputs, stream);
  }
  if (bias.defined()) out = add(out, bias, stream);
  return activate(out, activation, stream);
}

Tensor matmul_of(const Tensor& a_in, const Tensor& b_in, Stream& stream,
                 const MatmulEpilogue* epilogue = nullptr) {
  check_operands(a_in, b_in, stream);
  const ops::OpPlan plan = ops::plan_or_throw(
      ops::matmul_descriptor(), promote_types(a_in.dtype(), b_in.dtype()), {&a_in, &b_in});
  // The operands as the product reads them: views and casts only where needed, so that two
  // matrices of the compute type are read in place, without copies of their shapes.
  std::optional<Tensor> a_view, b_view;
  const Tensor* a = &a_in;
  const Tensor* b = &b_in;
  // Vectors are a row of A or a column of B, squeezed out of the result again.
  if (a->dim() == 1) a = &a_view.emplace(a->unsqueeze(0));
  if (b->dim() == 1) b = &b_view.emplace(b->unsqueeze(1));
  if (a->dtype() != plan.compute) a = &a_view.emplace(ops::cast_of(*a, plan.compute, stream));
  if (b->dtype() != plan.compute) b = &b_view.emplace(ops::cast_of(*b, plan.compute, stream));
  // A batch of A's against one B is one product with the batches' rows stacked: a single GEMM
  // instead of a call per batch entry (a sequence of [1, k] rows times a weight matrix).
  if (a->dim() > 2 && b->dim() == 2 && a->is_contiguous() && a->size(-1) == b->size(0) &&
      a->numel() > 0) {
    Shape shape = a->shape();
    shape.back() = b->size(1);
    Tensor out =
        matmul_of(a->reshape({a->numel() / a->size(-1), a->size(-1)}), *b, stream, epilogue)
            .reshape(shape);
    if (b_in.dim() == 1) out = out.squeeze(-1);
    return ops::as_result(std::move(out), plan, stream);
  }
  const int64_t m = a->size(-2), k = a->size(-1), n = b->size(-1);
  if (b->size(-2) != k)
    throw Error(ErrorCode::InvalidArgument,
                "matmul of " + a_in.describe() + " and " + b_in.describe() +
                    ": the inner dimensions differ (" + std::to_string(k) + " and " +
                    std::to_string(b->size(-2)) + ")");
  const Shape a_batch(a->shape().begin(), a->shape().end() - 2);
  const Shape b_batch(b->shape().begin(), b->shape().end() - 2);
  const Shape batch_shape = ops::broadcast_named(a_batch, b_batch, [&] {
    return "matmul of " + a_in.describe() + " and " + b_in.describe() + ": the batch dimensions";
  });
  const int64_t batch = numel(batch_shape);
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  if (m > kIntMax || n > kIntMax || k > kIntMax || batch > kIntMax)
    throw Error(ErrorCode::Unsupported, "matmul of " + a_in.describe() + " and " + b_in.describe() +
                                            ": a dimension exceeds the BLAS's 32-bit sizes");

  Shape shape = batch_shape;
  shape.insert(shape.end(), {m, n});
  Tensor out = empty(shape, a->dtype(), a->device());
  // The epilogue's bias in the product's compute dtype, contiguous (n elements: cheap).
  std::optional<Tensor> bias;
  if (epilogue && epilogue->bias.defined()) {
    bias = epilogue->bias.dtype() == plan.compute
               ? epilogue->bias
               : ops::cast_of(epilogue->bias, plan.compute, stream);
    if (!bias->is_contiguous()) bias = bias->contiguous(stream);
  }
  // What of the epilogue the product applied: all of it, the bias alone, or nothing.
  bool bias_applied = false, activation_applied = false;
  if (out.numel() > 0 && k == 0) {
    stream.fill(out.storage(), uint8_t{0}, out.nbytes());  // an empty sum
  } else if (out.numel() > 0) {
    // Only an operand whose batch is broadcast needs a new view.
    const auto broadcast = [&](const Tensor*& t, std::optional<Tensor>& view, const Shape& own,
                               int64_t rows, int64_t cols) {
      if (own == batch_shape) return;
      Shape full = batch_shape;
      full.insert(full.end(), {rows, cols});
      t = &view.emplace(t->expand(full));
    };
    broadcast(a, a_view, a_batch, m, k);
    broadcast(b, b_view, b_batch, k, n);
    std::optional<Tensor> a_packed, b_packed;
    GemmDesc gemm;
    gemm.dtype = a->dtype();
    gemm.m = m;
    gemm.n = n;
    gemm.k = k;
    gemm.batch = batch;
    gemm.a = operand_of(*a, a_packed, stream);
    gemm.b = operand_of(*b, b_packed, stream);
    gemm.c = {out.storage().impl(), 0, n, m * n, false};
    const ops::GemmKernel kernel = std::get<ops::GemmKernel>(plan.implementation->kernel);
    if (epilogue) {
      GemmEpilogue in_product{nullptr, 0, epilogue->activation};
      if (bias) {
        in_product.bias = bias->storage().impl();
        in_product.bias_offset = static_cast<uint64_t>(bias->offset());
      }
      // hal's GEMM where it runs the product; else the backend's library where it takes an
      // epilogue (oneDNN's post-ops on the CPU).
      const ops::GemmChoice choice = kernel == &ops::chosen_gemm
                                         ? ops::gemm_choice(stream.device().info(), gemm)
                                         : ops::GemmChoice{};
      if (choice.own_kernel) {
        ops::portable_gemm(gemm, choice.params, stream, in_product);
        bias_applied = activation_applied = true;
      } else if (stream.impl()->gemm_with_epilogue(gemm, in_product)) {
        bias_applied = activation_applied = true;
      } else if (bias && !in_product.activation.empty()) {
        // A library may take the bias but not this activation (oneDNN's relu turns NaN into 0,
        // where hal's keeps it): the activation then follows as its own op.
        in_product.activation.clear();
        bias_applied = stream.impl()->gemm_with_epilogue(gemm, in_product);
      }
    }
    if (!bias_applied && !activation_applied) kernel(gemm, stream);
  }
  if (epilogue && !activation_applied)
    out = apply_epilogue(std::move(out), bias && !bias_applied ? *bias : Tensor(),
                         epilogue->activation, stream);
  if (a_in.dim() == 1) out = out.squeeze(-2);
  if (b_in.dim() == 1) out = out.squeeze(-1);
  return ops::as_result(std::move(out), plan, stream);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, Stream& stream) {
  if (autograd::recording({&a, &b})) return autograd::record_matmul(a, b, stream);
  const Tensor* operands[] = {&a, &b};
  return ops::run_op("matmul", operands, stream,
                     [](ops::OpInputs in, Stream& s) { return matmul_of(*in[0], *in[1], s); });
}

Tensor activate(const Tensor& x, std::string_view activation, Stream& stream) {
  if (activation.empty()) return x;
  if (const ElementFunction function = activation_op(activation)) return function(x, stream);
  throw Error(ErrorCode::InvalidArgument, "no activation '" + std::string(activation) + "' for " +
                                              x.describe() +
                                              " (relu, gelu, tanh, sigmoid, silu, or none)");
}

Tensor matmul(const Tensor& a, const Tensor& b, const MatmulEpilogue& epilogue, Stream& stream) {
  check_operands(a, b, stream);
  check_epilogue(a, b, epilogue);
  if (autograd::recording({&a, &b, &epilogue.bias})) {
    // Recorded as the ops it is made of, each with its own backward.
    Tensor out = matmul(a, b, stream);
    if (epilogue.bias.defined()) out = add(out, epilogue.bias, stream);
    return activate(out, epilogue.activation, stream);
  }
  const Tensor* operands[] = {&a, &b, &epilogue.bias};
  return ops::run_op("matmul", operands, stream, [&](ops::OpInputs in, Stream& s) {
    const MatmulEpilogue on_inputs{*in[2], epilogue.activation};
    return matmul_of(*in[0], *in[1], s, &on_inputs);
  });
}

}  // namespace hal
