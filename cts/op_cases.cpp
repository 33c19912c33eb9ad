// op.*: the tensor ops of include/hal/ops.hpp on the device, compared with the same ops on
// cpu:0 on the same inputs (cpu:0's ops are themselves checked against plain loops by hal's
// tests). An op the device cannot run is not supported, with hal's reason.
#include <cmath>
#include <functional>

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
    default:
      return 0;
  }
}

// Makes the inputs on cpu:0 (integers: reals truncated), runs `fn` there and on `d` on copies,
// and compares the results element by element.
void differential(const Device& d, const std::vector<Input>& inputs, const OpFn& fn) {
  Device cpu = device("cpu:0");
  Stream on_cpu = cpu.create_stream(), here = d.create_stream();
  std::vector<Tensor> cpu_inputs, device_inputs;
  uint64_t seed = 1;
  for (const Input& in : inputs) {
    const bool real = in.dtype == DType::f32 || in.dtype == DType::f64;
    Tensor t = uniform(in.shape, real ? in.dtype : DType::f32, seed++, on_cpu, in.low, in.high);
    if (!real) t = cast(t, in.dtype, on_cpu);
    cpu_inputs.push_back(t);
  }
  on_cpu.synchronize();
  for (const Tensor& t : cpu_inputs) device_inputs.push_back(t.to(d, here));
  const Tensor want = fn(cpu_inputs, on_cpu);
  const Tensor got = unless_unsupported([&] { return fn(device_inputs, here); });
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
    check(std::fabs(g[i] - w[i]) <= tol * std::max(1.0, std::fabs(w[i])),
          "element " + std::to_string(i) + " is " + std::to_string(g[i]) + ", cpu:0 gives " +
              std::to_string(w[i]));
  }
}

std::string lower(std::string_view name) { return std::string(name); }

}  // namespace

void add_op_cases(Cases& cases) {
  const DType numeric[] = {DType::f32, DType::f64, DType::i32, DType::i64};
  using Binary = Tensor (*)(const Tensor&, const Tensor&, Stream&);
  const std::pair<const char*, Binary> binaries[] = {{"add", add},         {"sub", sub},
                                                     {"mul", mul},         {"div", div},
                                                     {"maximum", maximum}, {"minimum", minimum}};
  for (const auto& [name, op] : binaries)
    for (DType dtype : numeric) {
      const bool divides = std::string(name) == "div";
      cases.push_back(
          {"op.binary." + lower(name) + "." + std::string(to_string(dtype)),
           [op, dtype, divides](const Device& d) {
             differential(
                 d, {{{4, 5}, dtype, -20, 20}, {{5}, dtype, divides ? 1.0 : -20, 9}},
                 [op](const std::vector<Tensor>& in, Stream& s) { return op(in[0], in[1], s); });
           }});
    }
  for (DType dtype : {DType::f32, DType::f64})
    cases.push_back({"op.binary.pow." + std::string(to_string(dtype)), [dtype](const Device& d) {
                       differential(d, {{{3, 4}, dtype, 0.5, 3}, {{4}, dtype, -2, 2}},
                                    [](const std::vector<Tensor>& in, Stream& s) {
                                      return pow(in[0], in[1], s);
                                    });
                     }});
  const std::pair<const char*, Binary> comparisons[] = {{"eq", eq}, {"ne", ne}, {"lt", lt},
                                                        {"le", le}, {"gt", gt}, {"ge", ge}};
  for (const auto& [name, op] : comparisons)
    cases.push_back({"op.compare." + lower(name) + ".i32", [op](const Device& d) {
                       differential(d, {{{6, 7}, DType::i32, -3, 3}, {{7}, DType::i32, -3, 3}},
                                    [op](const std::vector<Tensor>& in, Stream& s) {
                                      return op(in[0], in[1], s);
                                    });
                     }});
  cases.push_back(
      {"op.where.f32", [](const Device& d) {
         differential(
             d,
             {{{5, 1}, DType::f32, -1, 1}, {{5, 3}, DType::f32, -9, 9}, {{3}, DType::f32, -9, 9}},
             [](const std::vector<Tensor>& in, Stream& s) {
               const Tensor cond = gt(in[0], zeros({}, DType::f32, s), s);
               return where(cond, in[1], in[2], s);
             });
       }});
  const std::pair<DType, DType> casts[] = {{DType::f32, DType::i32},
                                           {DType::i32, DType::f32},
                                           {DType::f32, DType::f16},
                                           {DType::f32, DType::bf16},
                                           {DType::i64, DType::u8}};
  for (const auto& [from, to] : casts)
    cases.push_back(
        {"op.cast." + std::string(to_string(from)) + "_to_" + std::string(to_string(to)),
         [from, to](const Device& d) {
           differential(
               d, {{{64}, from, -300, 300}},
               [to](const std::vector<Tensor>& in, Stream& s) { return cast(in[0], to, s); });
         }});
  using Unary = Tensor (*)(const Tensor&, Stream&);
  const std::tuple<const char*, Unary, double, double> unaries[] = {
      {"neg", neg, -3, 3},       {"abs", abs, -3, 3},   {"relu", relu, -3, 3},
      {"exp", exp, -5, 5},       {"log", log, 0.05, 9}, {"sqrt", sqrt, 0, 9},
      {"rsqrt", rsqrt, 0.05, 9}, {"tanh", tanh, -4, 4}, {"sigmoid", sigmoid, -6, 6},
      {"gelu", gelu, -4, 4},     {"silu", silu, -6, 6}};
  for (const auto& [name, op, low, high] : unaries)
    for (DType dtype : {DType::f32, DType::f64})
      cases.push_back(
          {"op.unary." + lower(name) + "." + std::string(to_string(dtype)),
           [op, low, high, dtype](const Device& d) {
             differential(d, {{{7, 9}, dtype, low, high}},
                          [op](const std::vector<Tensor>& in, Stream& s) { return op(in[0], s); });
           }});
  using Reduce = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool, Stream&);
  const std::pair<const char*, Reduce> reductions[] = {
      {"sum", sum}, {"mean", mean}, {"max", max}, {"min", min}, {"argmax", argmax}};
  for (const auto& [name, op] : reductions)
    for (DType dtype : {DType::f32, DType::f64})
      cases.push_back({"op.reduce." + lower(name) + "." + std::string(to_string(dtype)),
                       [op, dtype](const Device& d) {
                         differential(d, {{{6, 33, 5}, dtype, -4, 4}},
                                      [op](const std::vector<Tensor>& in, Stream& s) {
                                        return op(in[0], {0, 2}, false, s);
                                      });
                       }});
  cases.push_back({"op.softmax.f32", [](const Device& d) {
                     differential(d, {{{8, 10}, DType::f32, -50, 50}},
                                  [](const std::vector<Tensor>& in, Stream& s) {
                                    return softmax(in[0], -1, s);
                                  });
                   }});
  cases.push_back({"op.log_softmax.f32", [](const Device& d) {
                     differential(d, {{{8, 10}, DType::f32, -5, 5}},
                                  [](const std::vector<Tensor>& in, Stream& s) {
                                    return log_softmax(in[0], 0, s);
                                  });
                   }});
  cases.push_back(
      {"op.layer_norm.f32", [](const Device& d) {
         differential(
             d,
             {{{4, 16}, DType::f32, -3, 3}, {{16}, DType::f32, 0.5, 2}, {{16}, DType::f32, -1, 1}},
             [](const std::vector<Tensor>& in, Stream& s) {
               return layer_norm(in[0], {16}, in[1], in[2], 1e-5, s);
             });
       }});
  cases.push_back({"op.rms_norm.f32", [](const Device& d) {
                     differential(d, {{{4, 16}, DType::f32, -3, 3}, {{16}, DType::f32, 0.5, 2}},
                                  [](const std::vector<Tensor>& in, Stream& s) {
                                    return rms_norm(in[0], {16}, in[1], 1e-5, s);
                                  });
                   }});
  for (DType dtype : {DType::f32, DType::f64})
    cases.push_back({"op.matmul." + std::string(to_string(dtype)), [dtype](const Device& d) {
                       differential(d, {{{17, 33}, dtype, -1, 1}, {{33, 9}, dtype, -1, 1}},
                                    [](const std::vector<Tensor>& in, Stream& s) {
                                      return matmul(in[0], in[1], s);
                                    });
                     }});
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
  cases.push_back({"op.errors.dtypes_that_differ", [](const Device& d) {
                     Stream s = d.create_stream();
                     const Tensor a = zeros({2}, DType::f32, s), b = zeros({2}, DType::f64, s);
                     check_error([&] { mul(a, b, s); }, ErrorCode::InvalidArgument,
                                 {"f32", "f64", "dtypes differ"}, "mul of f32 and f64");
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
