// The ops of hal/ops.hpp as functions (hal.add(a, b)), as tensor methods (x.relu()) and as
// operators (a + b, a @ b, -a, a < b). Each enqueues on the stream given, else on this
// thread's current stream of the inputs' device, with the GIL released while hal works.
//
// This is the path of every small op from Python, so it is kept short: tensors are read in place
// (no copies of hal::Tensor), the stream is the thread's cached current one, and a Python number
// beside a tensor becomes a 0-d tensor of the dtype PyTorch would give it.
#include <limits>
#include <memory>
#include <optional>

#include <pybind11/numpy.h>

#include "bindings.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"

namespace hal::python {
namespace {

using py::arg;
using BinaryFn = Tensor (*)(const Tensor&, const Tensor&, Stream&);
using UnaryFn = Tensor (*)(const Tensor&, Stream&);
using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool, Stream&);

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::f64;
}

Stream& stream_for(py::handle stream, const Tensor& like) {
  return given_or_current_stream(stream, like, [&] { return "an op on " + like.describe(); });
}

// A Python number (or NumPy value) beside `like`, as a tensor on its device: bools stay bool,
// ints take an integer tensor's dtype (i64 beside bool), floats a floating tensor's (f32 beside
// integers), as PyTorch promotes them; a NumPy scalar counts as the Python number of its kind,
// and an int is exact in i64. NumPy arrays are copied in with their dtype. Null for anything
// else.
std::optional<Tensor> operand_like(py::handle value, const Tensor& like, Stream& stream) {
  if (py::isinstance<py::array>(value)) {
    return tensor_from(value, std::nullopt, stream);
  }
  const std::optional<Scalar> number = to_scalar(value);
  if (!number) return std::nullopt;
  DType dtype = DType::boolean;
  if (number->kind == Scalar::Kind::integer)
    dtype = like.dtype() == DType::boolean ? DType::i64 : like.dtype();
  else if (number->kind == Scalar::Kind::floating)
    dtype = is_floating(like.dtype()) ? like.dtype() : DType::f32;
  py::gil_scoped_release unlocked;
  return fill_scalar({}, *number, dtype, stream);
}

// hal.add(a, b) and friends: at least one tensor; the other may be a number or an array.
template <BinaryFn op>
py::object binary(py::handle a, py::handle b, py::handle stream_arg, const char* name) {
  const Tensor* x = tensor_of(a);
  const Tensor* y = tensor_of(b);
  if (x && y) {
    Stream& stream = stream_for(stream_arg, *x);
    Tensor result = [&] {
      py::gil_scoped_release unlocked;
      return op(*x, *y, stream);
    }();
    return wrap(std::move(result));
  }
  const Tensor* like = x ? x : y;
  if (!like)
    throw Error(ErrorCode::InvalidArgument, std::string(name) +
                                                ": give at least one hal.Tensor (got " +
                                                py::repr(a).cast<std::string>() + " and " +
                                                py::repr(b).cast<std::string>() + ")");
  Stream& stream = stream_for(stream_arg, *like);
  py::handle other = x ? b : a;
  std::optional<Tensor> made = operand_like(other, *like, stream);
  if (!made)
    throw Error(ErrorCode::InvalidArgument, std::string(name) + ": " +
                                                py::repr(other).cast<std::string>() +
                                                " is not a hal.Tensor, a number or an array");
  Tensor result = [&] {
    py::gil_scoped_release unlocked;
    return x ? op(*x, *made, stream) : op(*made, *y, stream);
  }();
  return wrap(std::move(result));
}

// The operator form: NotImplemented for an operand it cannot take, so Python tries the other
// side's method. `reflected` swaps the operands (b - a for __rsub__).
template <BinaryFn op>
py::object operator_form(py::handle self_object, py::handle other, bool reflected) {
  const Tensor* self_tensor = tensor_of(self_object);  // null: Tensor.__add__(5, t) called as such
  if (!self_tensor) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  const Tensor& self = *self_tensor;
  Stream& stream = current_stream(self.device());
  const Tensor* tensor = tensor_of(other);
  std::optional<Tensor> made;
  if (!tensor) {
    made = operand_like(other, self, stream);
    if (!made) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    tensor = &*made;
  }
  Tensor result = [&] {
    py::gil_scoped_release unlocked;
    return reflected ? op(*tensor, self, stream) : op(self, *tensor, stream);
  }();
  return wrap(std::move(result));
}

template <UnaryFn op>
py::object unary(py::handle x_arg, py::handle stream_arg) {
  const Tensor* x = tensor_of(x_arg);
  if (!x)
    throw Error(ErrorCode::InvalidArgument,
                py::repr(x_arg).cast<std::string>() + " is not a hal.Tensor");
  Stream& stream = stream_for(stream_arg, *x);
  Tensor result = [&] {
    py::gil_scoped_release unlocked;
    return op(*x, stream);
  }();
  return wrap(std::move(result));
}

std::vector<int64_t> to_axes(py::handle axis) {
  if (axis.is_none()) return {};
  return to_shape(axis);
}

template <ReduceFn op>
Tensor reduce(const Tensor& x, py::handle axis, bool keepdim, py::handle stream_arg) {
  const std::vector<int64_t> axes = to_axes(axis);
  Stream& stream = stream_for(stream_arg, x);
  py::gil_scoped_release unlocked;
  return op(x, axes, keepdim, stream);
}

// An optional tensor argument (`function`'s `name`): None is no tensor. InvalidArgument naming
// both for anything else but a hal.Tensor (pybind11's cast would name neither).
Tensor optional_tensor(py::handle value, const char* function, const char* name) {
  if (value.is_none()) return Tensor();
  if (const Tensor* tensor = tensor_of(value)) return *tensor;
  throw Error(ErrorCode::InvalidArgument, std::string(function) + ": " + name + " is " +
                                              py::repr(value).cast<std::string>() +
                                              ", not a hal.Tensor or None");
}

std::vector<int64_t> optional_list(py::handle value) {
  if (value.is_none()) return {};
  return to_shape(value);
}

// What max_pool and avg_pool share of their options.
PoolOptions pool_options(py::handle kernel, py::handle strides, py::handle pads_before,
                         py::handle pads_after, bool ceil_mode) {
  PoolOptions options;
  options.kernel = optional_list(kernel);
  options.strides = optional_list(strides);
  options.pads_before = optional_list(pads_before);
  options.pads_after = optional_list(pads_after);
  options.ceil_mode = ceil_mode;
  return options;
}

// `with hal.cpu_fallback():` lets ops a device cannot run run on cpu:0, on this thread.
class FallbackGuard {
 public:
  explicit FallbackGuard(bool allowed) : allowed_(allowed) {}
  void enter() {
    if (scope_) throw Error(ErrorCode::InvalidState, "hal.cpu_fallback() is already entered");
    scope_ = std::make_unique<CpuFallback>(allowed_);
  }
  void exit() { scope_.reset(); }

 private:
  bool allowed_;
  std::unique_ptr<CpuFallback> scope_;
};

template <BinaryFn op>
void def_binary(py::module_& m, py::class_<Tensor>& tensor, const char* name, const char* doc,
                const char* dunder, const char* reflected_dunder) {
  m.def(
      name,
      [name](py::handle a, py::handle b, py::handle stream) {
        return binary<op>(a, b, stream, name);
      },
      arg("a"), arg("b"), arg("stream") = py::none(), doc);
  if (dunder)
    tensor.def(dunder, [](py::handle self, py::handle other) {
      return operator_form<op>(self, other, false);
    });
  if (reflected_dunder)
    tensor.def(reflected_dunder, [](py::handle self, py::handle other) {
      return operator_form<op>(self, other, true);
    });
}

template <UnaryFn op>
void def_unary(py::module_& m, py::class_<Tensor>& tensor, const char* name) {
  m.def(name, &unary<op>, arg("x"), arg("stream") = py::none());
  tensor.def(name, &unary<op>, arg("stream") = py::none());
}

template <ReduceFn op>
void def_reduce(py::module_& m, py::class_<Tensor>& tensor, const char* name, const char* doc) {
  m.def(name, &reduce<op>, arg("x"), arg("axis") = py::none(), arg("keepdim") = false,
        arg("stream") = py::none(), doc);
  tensor.def(name, &reduce<op>, arg("axis") = py::none(), arg("keepdim") = false,
             arg("stream") = py::none(), doc);
}

}  // namespace

void bind_ops(py::module_& m, py::class_<Tensor>& tensor) {
  // NumPy defers to these operators (ndarray + hal.Tensor calls Tensor.__radd__) instead of
  // reading the tensor as an array.
  tensor.attr("__array_ufunc__") = py::none();

  def_binary<hal::add>(m, tensor, "add", "a + b, broadcast, promoted.", "__add__", "__radd__");
  def_binary<hal::sub>(m, tensor, "sub", "a - b.", "__sub__", "__rsub__");
  def_binary<hal::mul>(m, tensor, "mul", "a * b.", "__mul__", "__rmul__");
  def_binary<hal::div>(m, tensor, "div", "a / b (integers truncate toward zero).", "__truediv__",
                       "__rtruediv__");
  def_binary<hal::pow>(m, tensor, "pow", "a ** b (floating dtypes).", "__pow__", "__rpow__");
  def_binary<hal::maximum>(m, tensor, "maximum", "Elementwise maximum; NaN if either is.", nullptr,
                           nullptr);
  def_binary<hal::minimum>(m, tensor, "minimum", "Elementwise minimum; NaN if either is.", nullptr,
                           nullptr);
  def_binary<hal::matmul>(m, tensor, "matmul", "Matrix product (batched, broadcast).", "__matmul__",
                          "__rmatmul__");
  def_binary<hal::eq>(m, tensor, "eq", "a == b, as bool.", "__eq__", nullptr);
  def_binary<hal::ne>(m, tensor, "ne", "a != b, as bool.", "__ne__", nullptr);
  def_binary<hal::lt>(m, tensor, "lt", "a < b, as bool.", "__lt__", nullptr);
  def_binary<hal::le>(m, tensor, "le", "a <= b, as bool.", "__le__", nullptr);
  def_binary<hal::gt>(m, tensor, "gt", "a > b, as bool.", "__gt__", nullptr);
  def_binary<hal::ge>(m, tensor, "ge", "a >= b, as bool.", "__ge__", nullptr);
  // __eq__ makes Python drop the default hash; tensors stay usable as keys, by identity.
  tensor.attr("__hash__") = py::module_::import("builtins").attr("object").attr("__hash__");

  def_unary<hal::neg>(m, tensor, "neg");
  def_unary<hal::abs>(m, tensor, "abs");
  def_unary<hal::relu>(m, tensor, "relu");
  def_unary<hal::exp>(m, tensor, "exp");
  def_unary<hal::log>(m, tensor, "log");
  def_unary<hal::sqrt>(m, tensor, "sqrt");
  def_unary<hal::rsqrt>(m, tensor, "rsqrt");
  def_unary<hal::tanh>(m, tensor, "tanh");
  def_unary<hal::sigmoid>(m, tensor, "sigmoid");
  def_unary<hal::gelu>(m, tensor, "gelu");
  def_unary<hal::silu>(m, tensor, "silu");
  def_unary<hal::erf>(m, tensor, "erf");
  def_unary<hal::floor>(m, tensor, "floor");
  def_unary<hal::ceil>(m, tensor, "ceil");
  def_unary<hal::round>(m, tensor, "round");
  def_unary<hal::sin>(m, tensor, "sin");
  def_unary<hal::cos>(m, tensor, "cos");
  def_unary<hal::tan>(m, tensor, "tan");
  def_unary<hal::asin>(m, tensor, "asin");
  def_unary<hal::acos>(m, tensor, "acos");
  def_unary<hal::atan>(m, tensor, "atan");
  def_unary<hal::sinh>(m, tensor, "sinh");
  def_unary<hal::cosh>(m, tensor, "cosh");
  def_unary<hal::asinh>(m, tensor, "asinh");
  def_unary<hal::acosh>(m, tensor, "acosh");
  def_unary<hal::atanh>(m, tensor, "atanh");
  tensor.def("__neg__", [](py::handle x) { return unary<hal::neg>(x, py::none()); });
  tensor.def("__abs__", [](py::handle x) { return unary<hal::abs>(x, py::none()); });

  def_reduce<hal::sum>(m, tensor, "sum", "Sum over `axis` (an int, ints, or None for all).");
  def_reduce<hal::mean>(m, tensor, "mean", "Mean over `axis`.");
  def_reduce<hal::max>(m, tensor, "max", "Largest element over `axis`; NaN wins.");
  def_reduce<hal::min>(m, tensor, "min", "Smallest element over `axis`; NaN wins.");
  def_reduce<hal::argmax>(m, tensor, "argmax", "i64 position of the largest over `axis`.");

  for (auto [name, fn] :
       {std::pair{"softmax", &hal::softmax}, std::pair{"log_softmax", &hal::log_softmax}}) {
    auto along = [fn](const Tensor& x, int64_t axis, py::handle stream_arg) {
      Stream& stream = stream_for(stream_arg, x);
      py::gil_scoped_release unlocked;
      return fn(x, axis, stream);
    };
    m.def(name, along, arg("x"), arg("axis") = -1, arg("stream") = py::none());
    tensor.def(name, along, arg("axis") = -1, arg("stream") = py::none());
  }

  auto cast_to = [](const Tensor& x, py::handle dtype, py::handle stream_arg) {
    const DType target = to_dtype(dtype);
    Stream& stream = stream_for(stream_arg, x);
    py::gil_scoped_release unlocked;
    return cast(x, target, stream);
  };
  m.def("cast", cast_to, arg("x"), arg("dtype"), arg("stream") = py::none(),
        "Converts between any two dtypes (floats to integers truncate and saturate).");
  tensor.def("cast", cast_to, arg("dtype"), arg("stream") = py::none());

  m.def(
      "where",
      [](const Tensor& cond, py::handle a, py::handle b, py::handle stream_arg) {
        Stream& stream = stream_for(stream_arg, cond);
        auto operand = [&](py::handle value) {
          if (const Tensor* t = tensor_of(value)) return *t;
          const Tensor* other = tensor_of(value.is(a) ? b : a);
          std::optional<Tensor> made = operand_like(value, other ? *other : cond, stream);
          if (!made)
            throw Error(ErrorCode::InvalidArgument,
                        "where: " + py::repr(value).cast<std::string>() +
                            " is not a hal.Tensor, a number or an array");
          return *made;
        };
        const Tensor x = operand(a), y = operand(b);
        py::gil_scoped_release unlocked;
        return where(cond, x, y, stream);
      },
      arg("cond"), arg("a"), arg("b"), arg("stream") = py::none(),
      "Elements of a where cond (bool) holds, else of b; all three broadcast.");

  m.def(
      "linear",
      [](const Tensor& x, const Tensor& weight, py::handle bias, py::handle activation,
         py::handle stream_arg) {
        if (!activation.is_none() && !py::isinstance<py::str>(activation))
          throw Error(ErrorCode::InvalidArgument, "linear: activation is " +
                                                      py::repr(activation).cast<std::string>() +
                                                      ", not a str or None");
        MatmulEpilogue epilogue{optional_tensor(bias, "linear", "bias"),
                                activation.is_none() ? "" : activation.cast<std::string>()};
        Stream& stream = stream_for(stream_arg, x);
        if (weight.dim() != 2)
          throw Error(ErrorCode::InvalidArgument,
                      "linear: weight " + weight.describe() + " must be 2-d, [out, in]");
        py::gil_scoped_release unlocked;
        // weight [out, in] as torch.nn.functional.linear takes it: its transposed view goes to
        // the product as it is.
        return matmul(x, weight.transpose(0, 1), epilogue, stream);
      },
      arg("x"), arg("weight"), arg("bias") = py::none(), arg("activation") = py::none(),
      arg("stream") = py::none(),
      "activation(x @ weight.T + bias), weight [out, in] as torch's linear takes it; the bias "
      "and the activation (relu, gelu, tanh, sigmoid, silu) applied in the product's epilogue.");
  m.def(
      "layer_norm",
      [](const Tensor& x, py::handle normalized_shape, py::handle weight, py::handle bias,
         double eps, py::handle stream_arg) {
        const Shape shape = to_shape(normalized_shape);
        const Tensor w = optional_tensor(weight, "layer_norm", "weight");
        const Tensor b = optional_tensor(bias, "layer_norm", "bias");
        Stream& stream = stream_for(stream_arg, x);
        py::gil_scoped_release unlocked;
        return layer_norm(x, shape, w, b, eps, stream);
      },
      arg("x"), arg("normalized_shape"), arg("weight") = py::none(), arg("bias") = py::none(),
      arg("eps") = 1e-5, arg("stream") = py::none(),
      "(x - mean) / sqrt(var + eps) * weight + bias over the trailing dimensions.");
  m.def(
      "rms_norm",
      [](const Tensor& x, py::handle normalized_shape, py::handle weight, double eps,
         py::handle stream_arg) {
        const Shape shape = to_shape(normalized_shape);
        const Tensor w = optional_tensor(weight, "rms_norm", "weight");
        Stream& stream = stream_for(stream_arg, x);
        py::gil_scoped_release unlocked;
        return rms_norm(x, shape, w, eps, stream);
      },
      arg("x"), arg("normalized_shape"), arg("weight") = py::none(), arg("eps") = 1e-5,
      arg("stream") = py::none(), "x / sqrt(mean(x^2) + eps) * weight over the trailing dims.");
  m.def(
      "conv",
      [](const Tensor& x, const Tensor& weight, py::handle bias, py::handle strides,
         py::handle dilations, py::handle pads_before, py::handle pads_after, int64_t groups,
         bool relu, py::handle residual, bool constant_weights, py::handle stream_arg) {
        ConvOptions options;
        options.strides = optional_list(strides);
        options.dilations = optional_list(dilations);
        options.pads_before = optional_list(pads_before);
        options.pads_after = optional_list(pads_after);
        options.groups = groups;
        options.relu = relu;
        options.residual = optional_tensor(residual, "conv", "residual");
        options.constant_weights = constant_weights;
        const Tensor b = optional_tensor(bias, "conv", "bias");
        Stream& stream = stream_for(stream_arg, x);
        py::gil_scoped_release unlocked;
        return conv(x, weight, b, options, stream);
      },
      arg("x"), arg("weight"), arg("bias") = py::none(), arg("strides") = py::none(),
      arg("dilations") = py::none(), arg("pads_before") = py::none(),
      arg("pads_after") = py::none(), arg("groups") = 1, arg("relu") = false,
      arg("residual") = py::none(), arg("constant_weights") = false, arg("stream") = py::none(),
      "Convolution over 1 to 3 spatial dimensions (cross-correlation, as PyTorch's).");
  m.def(
      "conv_transpose",
      [](const Tensor& x, const Tensor& weight, py::handle bias, py::handle strides,
         py::handle dilations, py::handle pads_before, py::handle pads_after,
         py::handle output_padding, int64_t groups, py::handle stream_arg) {
        ConvTransposeOptions options;
        options.strides = optional_list(strides);
        options.dilations = optional_list(dilations);
        options.pads_before = optional_list(pads_before);
        options.pads_after = optional_list(pads_after);
        options.output_padding = optional_list(output_padding);
        options.groups = groups;
        const Tensor b = optional_tensor(bias, "conv_transpose", "bias");
        Stream& stream = stream_for(stream_arg, x);
        py::gil_scoped_release unlocked;
        return conv_transpose(x, weight, b, options, stream);
      },
      arg("x"), arg("weight"), arg("bias") = py::none(), arg("strides") = py::none(),
      arg("dilations") = py::none(), arg("pads_before") = py::none(),
      arg("pads_after") = py::none(), arg("output_padding") = py::none(), arg("groups") = 1,
      arg("stream") = py::none(),
      "Transposed convolution over 1 to 3 spatial dimensions (PyTorch's conv_transposeNd); "
      "weight is [C, M/groups, K...].");
  m.def(
      "concat",
      [](const std::vector<Tensor>& tensors, int64_t axis, py::handle stream_arg) {
        if (tensors.empty()) throw Error(ErrorCode::InvalidArgument, "concat: no tensors to join");
        Stream& stream = stream_for(stream_arg, tensors.front());
        py::gil_scoped_release unlocked;
        return concat(tensors, axis, stream);
      },
      arg("tensors"), arg("axis") = 0, arg("stream") = py::none(),
      "The tensors joined along axis: one dtype and device, equal sizes off the axis.");
  m.def(
      "embedding",
      [](const Tensor& indices, const Tensor& weight, py::handle stream_arg) {
        Stream& stream = stream_for(stream_arg, weight);
        py::gil_scoped_release unlocked;
        return embedding(weight, indices, stream);
      },
      arg("indices"), arg("weight"), arg("stream") = py::none(),
      "Rows of weight [num_embeddings, dim] at indices (i32 or i64, any shape): [..., dim]. "
      "Arguments in torch.nn.functional.embedding's order.");
  m.def(
      "dropout",
      [](const Tensor& x, double p, uint64_t seed, py::handle stream_arg) {
        Stream& stream = stream_for(stream_arg, x);
        py::gil_scoped_release unlocked;
        return dropout(x, p, seed, stream);
      },
      arg("x"), arg("p"), arg("seed"), arg("stream") = py::none(),
      "Inverted dropout: each element kept with probability 1 - p and scaled by 1 / (1 - p); the "
      "mask is Philox's draws for seed, the same on every device.");
  m.def(
      "max_pool",
      [](const Tensor& x, py::handle kernel, py::handle strides, py::handle dilations,
         py::handle pads_before, py::handle pads_after, bool ceil_mode, py::handle stream_arg) {
        PoolOptions options = pool_options(kernel, strides, pads_before, pads_after, ceil_mode);
        options.dilations = optional_list(dilations);
        Stream& stream = stream_for(stream_arg, x);
        py::gil_scoped_release unlocked;
        return max_pool(x, options, stream);
      },
      arg("x"), arg("kernel"), arg("strides") = py::none(), arg("dilations") = py::none(),
      arg("pads_before") = py::none(), arg("pads_after") = py::none(), arg("ceil_mode") = false,
      arg("stream") = py::none(),
      "Maxima of windows over x [N, C, D1 ...] (1 to 3 spatial dims), as torch's "
      "max_pool1d/2d/3d.");
  m.def(
      "avg_pool",
      [](const Tensor& x, py::handle kernel, py::handle strides, py::handle pads_before,
         py::handle pads_after, bool ceil_mode, bool count_include_pad, py::handle stream_arg) {
        PoolOptions options = pool_options(kernel, strides, pads_before, pads_after, ceil_mode);
        options.count_include_pad = count_include_pad;
        Stream& stream = stream_for(stream_arg, x);
        py::gil_scoped_release unlocked;
        return avg_pool(x, options, stream);
      },
      arg("x"), arg("kernel"), arg("strides") = py::none(), arg("pads_before") = py::none(),
      arg("pads_after") = py::none(), arg("ceil_mode") = false, arg("count_include_pad") = false,
      arg("stream") = py::none(),
      "Means of windows over x [N, C, D1 ...] (1 to 3 spatial dims), as torch's avg_pool1d/2d/3d.");
  m.def(
      "fused_elementwise",
      [](py::handle steps, const std::vector<Tensor>& inputs, py::handle stream_arg) {
        ElementwiseProgram program;
        for (py::handle step : steps) {
          const auto refuse = [&] {
            throw Error(ErrorCode::InvalidArgument,
                        "fused_elementwise: each step is (op name, [operand indices]), not " +
                            py::repr(step).cast<std::string>());
          };
          if (!py::isinstance<py::sequence>(step) || py::isinstance<py::str>(step)) refuse();
          auto pair = py::reinterpret_borrow<py::sequence>(step);
          if (pair.size() != 2 || !py::isinstance<py::str>(pair[0]) ||
              !py::isinstance<py::sequence>(pair[1]))
            refuse();
          std::vector<int> operands;
          for (py::handle operand : py::reinterpret_borrow<py::sequence>(pair[1])) {
            const std::optional<int64_t> at =
                is_integer(operand) ? to_int64(operand) : std::nullopt;
            if (!at || *at < std::numeric_limits<int>::min() ||
                *at > std::numeric_limits<int>::max())
              refuse();
            operands.push_back(static_cast<int>(*at));
          }
          program.steps.push_back({pair[0].cast<std::string>(), std::move(operands)});
        }
        if (inputs.empty()) throw Error(ErrorCode::InvalidArgument, "fused_elementwise: no inputs");
        Stream& stream = stream_for(stream_arg, inputs.front());
        py::gil_scoped_release unlocked;
        return fused_elementwise(program, inputs, stream);
      },
      arg("steps"), arg("inputs"), arg("stream") = py::none(),
      "A chain of elementwise ops in one pass: steps are (op, [operands]), an operand an input "
      "index or inputs + an earlier step's index.");

  m.def(
      "promote_types",
      [](py::handle a, py::handle b) { return promote_types(to_dtype(a), to_dtype(b)); }, arg("a"),
      arg("b"));
  m.def(
      "broadcast_shapes",
      [](py::handle a, py::handle b) {
        return to_tuple(broadcast_shapes(to_shape(a), to_shape(b)));
      },
      arg("a"), arg("b"));
  m.def(
      "supports_op",
      [](py::handle device, const std::string& op, py::handle dtype) {
        return supports_op(to_device(device), op, to_dtype(dtype));
      },
      arg("device"), arg("op"), arg("dtype"), "Whether `device` runs `op` for inputs of `dtype`.");

  py::class_<FallbackGuard>(m, "CpuFallback")
      .def("__enter__", &FallbackGuard::enter)
      .def("__exit__", [](FallbackGuard& guard, py::args) { guard.exit(); });
  m.def(
      "cpu_fallback", [](bool allowed) { return FallbackGuard(allowed); }, arg("allowed") = true,
      "`with hal.cpu_fallback():` ops a device cannot run run on cpu:0 (this thread).");
}

}  // namespace hal::python
