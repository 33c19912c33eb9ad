// op.*: the tensor ops of include/hal/ops.hpp on the device, compared with the same ops on
// cpu:0 on the same inputs (cpu:0's ops are themselves checked against plain loops by hal's
// tests). Every op of the op table in every dtype: what `hal ops` lists must run, what it does
// not list must refuse (Unsupported, reported as not supported with hal's reason).
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "case.hpp"
#include "hal/ops.hpp"

namespace hal::cts {
namespace {

using OpFn = std::function<Tensor(const std::vector<Tensor>&, Stream&)>;

struct Input {
  Shape shape;
  DType dtype;
  double low, high;
};

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return 2e-5;
    case DType::f64:
      return 1e-12;
    case DType::f16:  // computed in f32 on both sides, where a last bit may round either way
      return 1e-3;
    case DType::bf16:
      return 8e-3;
    default:
      return 0;
  }
}

// Runs `fn` on `cpu_inputs` (made on cpu:0 by `on_cpu`) and on `d` on copies, and compares the
// results element by element.
// `must_run`: the op table says the device runs it, so Unsupported is a failure.
void differential(const Device& d, const std::vector<Tensor>& cpu_inputs, Stream& on_cpu,
                  const OpFn& fn, bool must_run) {
  Device cpu = device("cpu:0");
  Stream here = d.create_stream();
  std::vector<Tensor> device_inputs;
  on_cpu.synchronize();
  for (const Tensor& t : cpu_inputs) device_inputs.push_back(t.to(d, here));
  const Tensor want = fn(cpu_inputs, on_cpu);
  const Tensor got = [&] {
    if (!must_run) return unless_unsupported([&] { return fn(device_inputs, here); });
    try {
      return fn(device_inputs, here);
    } catch (const Error& error) {
      if (error.code() != ErrorCode::Unsupported) throw;
      throw Failure("hal ops lists it for " + d.id() + ", which refused: " + error.message());
    }
  }();
  check(got.device() == d, "the result is on " + got.device().id());
  check(got.shape() == want.shape(),
        "shape " + to_string(got.shape()) + ", expected " + to_string(want.shape()));
  check(got.dtype() == want.dtype(), "dtype " + std::string(to_string(got.dtype())));
  const Tensor back = got.to(cpu, here);
  here.synchronize();
  const auto g = cast(back, DType::f64, on_cpu).to_vector<double>(on_cpu);
  const auto w = cast(want, DType::f64, on_cpu).to_vector<double>(on_cpu);
  const double tol = tolerance(want.dtype());
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i])) {
      check(std::isnan(g[i]), "element " + std::to_string(i) + " is not NaN");
      continue;
    }
    if (g[i] == w[i]) continue;  // equal infinities too
    check(std::fabs(g[i] - w[i]) <= tol * std::max(1.0, std::fabs(w[i])),
          "element " + std::to_string(i) + " is " + std::to_string(g[i]) + ", cpu:0 gives " +
              std::to_string(w[i]));
  }
}

// The same on inputs made on cpu:0 (integers: reals truncated).
void differential(const Device& d, const std::vector<Input>& inputs, const OpFn& fn,
                  bool must_run = false) {
  Stream on_cpu = device("cpu:0").create_stream();
  std::vector<Tensor> cpu_inputs;
  uint64_t seed = 1;
  for (const Input& in : inputs) {
    const bool real = in.dtype == DType::f32 || in.dtype == DType::f64;
    // Integers: reals truncated; bool: reals not 0 (half of them, for ranges around 0).
    Tensor t = uniform(in.shape, real ? in.dtype : DType::f32, seed++, on_cpu, in.low, in.high);
    if (!real) t = cast(t, in.dtype, on_cpu);
    cpu_inputs.push_back(t);
  }
  differential(d, cpu_inputs, on_cpu, fn, must_run);
}

// pow's edges, beyond its table inputs (positive bases): negative bases with integer exponents
// (odd ones keep the sign, -1 to the infinities is 1), zero and negative zero bases (0^0 is 1,
// 0 to a negative power an infinity), infinite bases and exponents, as C's pow gives them.
// GLSL's pow leaves all of these undefined.
std::vector<Tensor> pow_edge_inputs(DType dtype, Stream& on_cpu) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> base{-2,  -2,   -0.5, 0,    0,  -0.0, -1, -8,   -3,
                                 -3,  -0.0, 0,    -1,   -1, 0.5,  -2, -inf, -inf,
                                 inf, -1.5, -2.5, -0.5, 2,  -0.0, -4, 0};
  const std::vector<double> exponent{2,    3,  -2,   0,    -1,   3,   inf,  1.0 / 3, 5,
                                     -3,   -1, -inf, -inf, inf,  inf, -inf, 3,       -2,
                                     -0.5, -4, 2,    -inf, -inf, 0.5, 1.5,  2};
  const Shape shape{static_cast<int64_t>(base.size())};
  return {cast(from_vector(base, shape, on_cpu), dtype, on_cpu),
          cast(from_vector(exponent, shape, on_cpu), dtype, on_cpu)};
}

// The inputs every op of the table is checked on, by family, for inputs of `dtype`: ranges
// that keep functions defined (log of positives, division by non-zero integers).
std::vector<Input> table_inputs(const std::string& op, DType dtype) {
  const bool floating =
      dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16;
  if (op == "pow") return {{{3, 4}, dtype, 0.5, 3}, {{4}, dtype, -2, 2}};
  if (op == "div") return {{{4, 5}, dtype, -20, 20}, {{5}, dtype, 1, 9}};
  if (op == "log" || op == "sqrt" || op == "rsqrt") return {{{7, 9}, dtype, 1, 9}};
  if (op == "where")
    return {{{5, 1}, DType::f32, -1, 1}, {{5, 3}, dtype, -9, 9}, {{3}, dtype, -9, 9}};
  if (op == "matmul") return {{{17, 33}, dtype, -1, 1}, {{33, 9}, dtype, -1, 1}};
  if (op == "conv")
    return {{{2, 4, 7, 6}, dtype, -1, 1}, {{6, 2, 3, 3}, dtype, -1, 1}, {{6}, dtype, -1, 1}};
  if (op == "conv_transpose")
    return {{{2, 4, 5, 6}, dtype, -1, 1}, {{4, 3, 3, 3}, dtype, -1, 1}, {{6}, dtype, -1, 1}};
  if (op == "layer_norm")
    return {{{4, 16}, dtype, -3, 3}, {{16}, dtype, 0.5, 2}, {{16}, dtype, -1, 1}};
  if (op == "rms_norm") return {{{4, 16}, dtype, -3, 3}, {{16}, dtype, 0.5, 2}};
  if (op == "layer_norm_backward" || op == "rms_norm_backward")
    return {{{4, 16}, dtype, -3, 3}, {{4, 16}, dtype, -1, 1}, {{16}, dtype, 0.5, 2}};
  if (op == "softmax" || op == "log_softmax") return {{{8, 10}, dtype, -5, 5}};
  if (op == "fused_elementwise")
    return {{{4, 5}, dtype, -3, 3}, {{5}, dtype, -3, 3}, {{4, 1}, dtype, 0.5, 2}};
  // The layers: indices as reals truncated (in range), then the op's own attributes below.
  if (op == "concat") return {{{3, 2, 4}, dtype, -9, 9}, {{3, 5, 4}, dtype, -9, 9}};
  if (op == "embedding") return {{{7, 5}, dtype, -2, 2}, {{3, 4}, DType::i64, 0, 7}};
  if (op == "embedding_backward") return {{{6, 5}, dtype, -2, 2}, {{6}, DType::i32, 0, 4}};
  if (op == "cross_entropy") return {{{9, 6}, dtype, -4, 4}, {{9}, DType::i64, 0, 6}};
  if (op == "cross_entropy_backward")
    return {{{9, 6}, dtype, -4, 4}, {{9}, DType::i32, 0, 6}, {{}, dtype, 0.5, 2}};
  if (op == "dropout") return {{{7, 9}, dtype, -3, 3}};
  if (op == "max_pool" || op == "avg_pool") return {{{2, 3, 7, 6}, dtype, -3, 3}};
  if (op == "sum" || op == "mean" || op == "max" || op == "min" || op == "argmax")
    return {{{6, 33, 5}, dtype, -4, 4}};
  const bool is_unsigned =
      dtype == DType::u8 || dtype == DType::u16 || dtype == DType::u32 || dtype == DType::u64;
  const double low = is_unsigned ? 0 : floating ? -5 : -20;
  if (op == "asin" || op == "acos" || op == "atanh") return {{{7, 9}, dtype, -0.9, 0.9}};
  if (op == "acosh") return {{{7, 9}, dtype, 1.1, 9}};
  if (op == "tan") return {{{7, 9}, dtype, -1.4, 1.4}};
  static const std::set<std::string> functions{
      "cast",  "neg",  "abs",   "relu", "exp", "tanh", "sigmoid", "gelu", "silu", "erf",
      "floor", "ceil", "round", "sin",  "cos", "atan", "sinh",    "cosh", "asinh"};
  if (functions.contains(op)) return {{{7, 9}, dtype, low, floating ? 5.0 : 20.0}};
  return {{{4, 5}, dtype, low, 20}, {{5}, dtype, low, 9}};  // binary arithmetic, comparisons
}

// The op named `op` on `in`, with the attributes the table's cases use.
Tensor run_table_op(const std::string& op, const std::vector<Tensor>& in, Stream& s) {
  using Binary = Tensor (*)(const Tensor&, const Tensor&, Stream&);
  using Unary = Tensor (*)(const Tensor&, Stream&);
  using Reduce = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool, Stream&);
  static const std::pair<const char*, Binary> binaries[] = {
      {"add", add},         {"sub", sub}, {"mul", mul}, {"div", div},      {"maximum", maximum},
      {"minimum", minimum}, {"pow", pow}, {"eq", eq},   {"ne", ne},        {"lt", lt},
      {"le", le},           {"gt", gt},   {"ge", ge},   {"matmul", matmul}};
  static const std::pair<const char*, Unary> unaries[] = {
      {"neg", neg},    {"abs", abs},     {"relu", relu},   {"exp", exp},         {"log", log},
      {"sqrt", sqrt},  {"rsqrt", rsqrt}, {"tanh", tanh},   {"sigmoid", sigmoid}, {"gelu", gelu},
      {"silu", silu},  {"erf", erf},     {"floor", floor}, {"ceil", ceil},       {"round", round},
      {"sin", sin},    {"cos", cos},     {"tan", tan},     {"asin", asin},       {"acos", acos},
      {"atan", atan},  {"sinh", sinh},   {"cosh", cosh},   {"asinh", asinh},     {"acosh", acosh},
      {"atanh", atanh}};
  static const std::pair<const char*, Reduce> reductions[] = {
      {"sum", sum}, {"mean", mean}, {"max", max}, {"min", min}, {"argmax", argmax}};
  for (const auto& [name, fn] : binaries)
    if (op == name) return fn(in[0], in[1], s);
  for (const auto& [name, fn] : unaries)
    if (op == name) return fn(in[0], s);
  for (const auto& [name, fn] : reductions)
    if (op == name) return fn(in[0], {0, 2}, false, s);
  if (op == "where") return where(gt(in[0], zeros({}, DType::f32, s), s), in[1], in[2], s);
  if (op == "cast") return cast(in[0], in[0].dtype() == DType::f32 ? DType::f64 : DType::f32, s);
  if (op == "softmax") return softmax(in[0], -1, s);
  if (op == "fused_elementwise") {
    // (tanh(a + b) * a) / c, c broadcast along the rows.
    const ElementwiseProgram program{
        {{"add", {0, 1}}, {"tanh", {3}}, {"mul", {4, 0}}, {"div", {5, 2}}}};
    return fused_elementwise(program, in, s);
  }
  if (op == "log_softmax") return log_softmax(in[0], 0, s);
  if (op == "layer_norm") return layer_norm(in[0], {16}, in[1], in[2], 1e-5, s);
  if (op == "rms_norm") return rms_norm(in[0], {16}, in[1], 1e-5, s);
  if (op == "layer_norm_backward") return layer_norm_backward(in[0], in[1], {16}, in[2], 1e-5, s);
  if (op == "rms_norm_backward") return rms_norm_backward(in[0], in[1], {16}, in[2], 1e-5, s);
  if (op == "concat") return concat({in[0], in[1], in[0].slice(1, 0, 1)}, 1, s);
  if (op == "embedding") return embedding(in[0], in[1], s);
  if (op == "embedding_backward") return embedding_backward(in[0], in[1], 4, s);
  if (op == "cross_entropy") {
    // Row 0 ignored: its target made ignore_index.
    const Tensor targets = concat({full({1}, -1, in[1].dtype(), s), in[1].slice(0, 1, 9)}, 0, s);
    return cross_entropy(in[0], targets, -1, 0.1, s);
  }
  if (op == "cross_entropy_backward") return cross_entropy_backward(in[0], in[1], in[2], 2, 0.1, s);
  if (op == "dropout") return dropout(in[0], 0.3, 7, s);
  if (op == "max_pool" || op == "avg_pool") {
    PoolOptions options;
    options.kernel = {3, 2};
    options.strides = {2, 1};
    options.pads_before = {1, 0};
    options.pads_after = {1, 1};
    options.ceil_mode = true;
    options.count_include_pad = true;
    return op == "max_pool" ? max_pool(in[0], options, s) : avg_pool(in[0], options, s);
  }
  if (op == "conv") {
    ConvOptions options;
    options.strides = {1, 2};
    options.pads_before = {1, 0};
    options.pads_after = {1, 1};
    options.groups = 2;
    return conv(in[0], in[1], in[2], options, s);
  }
  if (op == "conv_transpose") {
    ConvTransposeOptions options;
    options.strides = {2, 1};
    options.pads_before = {1, 0};
    options.pads_after = {1, 1};
    options.output_padding = {1, 0};
    options.groups = 2;
    return conv_transpose(in[0], in[1], in[2], options, s);
  }
  throw Failure("the conformance suite has no inputs for op " + op);
}

// op.table.<op>.<dtype>: every op of the table in every dtype. Where `hal ops` says the device
// runs it, it must, and agree with cpu:0; where it says not, the op must refuse with
// Unsupported (reported as not supported, with hal's reason). CPU fallback is off.
void table_case(const Device& d, const std::string& op, DType dtype) {
  CpuFallback no_fallback(false);
  if (!supports_op(device("cpu:0"), op, dtype))
    throw NotSupported("cpu:0, the reference, does not run " + op + " in " +
                       std::string(to_string(dtype)) + " either");
  const std::vector<Input> inputs = table_inputs(op, dtype);
  const OpFn fn = [op](const std::vector<Tensor>& in, Stream& s) {
    return run_table_op(op, in, s);
  };
  if (supports_op(d, op, dtype)) {
    differential(d, inputs, fn, true);
    if (op == "pow") {
      Stream on_cpu = device("cpu:0").create_stream();
      differential(d, pow_edge_inputs(dtype, on_cpu), on_cpu, fn, true);
    }
    return;
  }
  try {
    differential(d, inputs, fn);
  } catch (const NotSupported&) {
    throw;  // refused, as the table says
  }
  throw Failure("hal ops says " + d.id() + " does not run it, yet it ran");
}

void add_op_table_cases(Cases& cases) {
  for (const OpSupport& op : supported_ops(device("cpu:0")))
    for (DType dtype : kAllDTypes)
      cases.push_back({"op.table." + op.name + "." + std::string(to_string(dtype)),
                       [name = op.name, dtype](const Device& d) { table_case(d, name, dtype); }});
}

}  // namespace

void add_op_cases(Cases& cases) {
  add_op_table_cases(cases);
  const std::pair<DType, DType> casts[] = {{DType::f32, DType::i32},
                                           {DType::i32, DType::f32},
                                           {DType::f32, DType::f16},
                                           {DType::f32, DType::bf16},
                                           {DType::i64, DType::u8}};
  // Named copies: Clang before 16 captures no structured bindings (the fuzz preset's Clang 14).
  for (const auto& pair : casts) {
    const DType from = pair.first, to = pair.second;
    cases.push_back(
        {"op.cast." + std::string(to_string(from)) + "_to_" + std::string(to_string(to)),
         [from, to](const Device& d) {
           differential(
               d, {{{64}, from, -300, 300}},
               [to](const std::vector<Tensor>& in, Stream& s) { return cast(in[0], to, s); });
         }});
  }
  cases.push_back({"op.matmul.batched_and_transposed.f32", [](const Device& d) {
                     differential(d,
                                  {{{3, 8, 5}, DType::f32, -1, 1}, {{3, 6, 5}, DType::f32, -1, 1}},
                                  [](const std::vector<Tensor>& in, Stream& s) {
                                    return matmul(in[0], in[1].transpose(1, 2), s);
                                  });
                   }});
  cases.push_back({"op.errors.shapes_that_do_not_broadcast", [](const Device& d) {
                     Stream s = d.create_stream();
                     const Tensor a = zeros({2, 3}, DType::f32, s), b = zeros({4}, DType::f32, s);
                     check_error([&] { add(a, b, s); }, ErrorCode::InvalidArgument,
                                 {"[2, 3]", "[4]", "broadcast"}, "add of [2, 3] and [4]");
                   }});
  cases.push_back({"op.promotion.mixed_dtypes", [](const Device& d) {
                     // f32 x i32 is f32, as in PyTorch and NumPy.
                     Stream s = d.create_stream();
                     Stream c = device("cpu:0").create_stream();
                     const Tensor a_cpu = full({2}, 1.5, DType::f32, c);
                     const Tensor b_cpu = full({2}, 3.0, DType::i32, c);
                     c.synchronize();
                     const Tensor a = a_cpu.to(d, s), b = b_cpu.to(d, s);
                     const Tensor product = unless_unsupported([&] { return mul(a, b, s); });
                     check(product.dtype() == DType::f32,
                           "mul of f32 and i32 gives " + std::string(to_string(product.dtype())));
                     check(product.to_vector<float>(s) == std::vector<float>{4.5f, 4.5f},
                           "mul of f32 and i32 computes 1.5 x 3");
                     const Tensor less = unless_unsupported([&] { return lt(b, a, s); });
                     check(less.dtype() == DType::boolean,
                           "lt of i32 and f32 gives " + std::string(to_string(less.dtype())));
                   }});
  cases.push_back({"op.errors.tensors_on_two_devices", [](const Device& d) {
                     Device cpu = device("cpu:0");
                     if (d == cpu) throw NotSupported("the device is cpu:0");
                     Stream s = d.create_stream(), c = cpu.create_stream();
                     const Tensor a = zeros({2}, DType::f32, s), b = zeros({2}, DType::f32, c);
                     c.synchronize();
                     check_error([&] { add(a, b, s); }, ErrorCode::InvalidArgument,
                                 {d.id(), "cpu:0", "different devices"}, "add across devices");
                   }});
  cases.push_back({"op.errors.axis_out_of_range", [](const Device& d) {
                     Stream s = d.create_stream();
                     const Tensor a = zeros({2, 3}, DType::f32, s);
                     check_error([&] { sum(a, {2}, false, s); }, ErrorCode::InvalidArgument,
                                 {"axis 2", "out of range"}, "sum over axis 2 of a matrix");
                   }});
}

}  // namespace hal::cts
