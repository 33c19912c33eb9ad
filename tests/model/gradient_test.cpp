// ONNX's Gradient op over small graphs in f64, each gradient checked against central finite
// differences of the graph's own forward output (the sum of y's elements, which is what a seed
// of ones differentiates) or a formula worked out here; and the errors of graphs it cannot
// differentiate.
#include <cmath>
#include <numeric>

#include "hal/execution_plan.hpp"
#include "hal/model.hpp"
#include "model_builder.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using onnx::TensorProto;
constexpr int32_t kF64 = TensorProto::DOUBLE;
constexpr const char* kTraining = "ai.onnx.preview.training";

// A model of `opset` that imports the training domain too.
ModelBuilder training_model(int64_t opset = 13) {
  ModelBuilder builder(opset);
  auto* import = builder.proto().add_opset_import();
  import->set_domain(kTraining);
  import->set_version(1);
  return builder;
}

onnx::NodeProto& gradient_node(ModelBuilder& builder, const std::vector<std::string>& xs,
                               const std::vector<std::string>& zs, const std::string& y,
                               const std::vector<std::string>& outputs) {
  std::vector<std::string> inputs = xs;
  inputs.insert(inputs.end(), zs.begin(), zs.end());
  auto& node = builder.node("Gradient", inputs, outputs, "grad");
  node.set_domain(kTraining);
  ModelBuilder::set_strings(node, "xs", xs);
  if (!zs.empty()) ModelBuilder::set_strings(node, "zs", zs);
  ModelBuilder::set_string(node, "y", y);
  return node;
}

void add_f64_initializer(ModelBuilder& builder, const std::string& name, std::vector<int64_t> dims,
                         const std::vector<double>& values) {
  auto& tensor = builder.raw_initializer(name);
  tensor.set_data_type(kF64);
  for (int64_t d : dims) tensor.add_dims(d);
  for (double v : values) tensor.add_double_data(v);
}
void add_i64_initializer(ModelBuilder& builder, const std::string& name,
                         const std::vector<int64_t>& values) {
  auto& tensor = builder.raw_initializer(name);
  tensor.set_data_type(TensorProto::INT64);
  tensor.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) tensor.add_int64_data(v);
}

std::vector<std::string> dims_of(const Shape& shape) {
  std::vector<std::string> dims;
  for (int64_t d : shape) dims.push_back(std::to_string(d));
  return dims;
}

// `count` values spread over [low, high), none within `gap` of 0 (Relu's kink).
std::vector<double> spread(int64_t count, double low, double high, unsigned seed,
                           double gap = 0.0) {
  std::vector<double> values;
  for (int64_t i = 0; i < count; ++i) {
    const double t = std::fmod(0.618034 * static_cast<double>(i + 1) + 0.1 * seed, 1.0);
    double v = low + (high - low) * t;
    if (std::abs(v) < gap) v = v < 0 ? -gap : gap;
    values.push_back(v);
  }
  return values;
}

struct Value {
  std::string name;
  Shape shape;
  std::vector<double> values;
};

// The forward nodes go into `builder` first; then y and a gradient output per x are declared,
// the Gradient node added, and each d(sum y)/dx compared with central differences.
struct GradientCase {
  ModelBuilder builder = training_model();
  std::vector<Value> xs, zs;  // graph inputs, differentiated and not
  std::string y = "y";
  Shape y_shape;

  GradientCase& x(const std::string& name, Shape shape, std::vector<double> values) {
    xs.push_back(Value{name, std::move(shape), std::move(values)});
    return *this;
  }
  GradientCase& z(const std::string& name, Shape shape, std::vector<double> values) {
    zs.push_back(Value{name, std::move(shape), std::move(values)});
    return *this;
  }

  Model load() {
    std::vector<std::string> x_names, z_names, outputs;
    for (const Value& v : xs) x_names.push_back(v.name);
    for (const Value& v : zs) z_names.push_back(v.name);
    for (const auto* list : {&xs, &zs})
      for (const Value& v : *list) builder.input(v.name, kF64, dims_of(v.shape));
    builder.output(y, kF64, dims_of(y_shape));
    for (const Value& v : xs) {
      outputs.push_back("d_" + v.name);
      builder.output(outputs.back(), kF64, dims_of(v.shape));
    }
    gradient_node(builder, x_names, z_names, y, outputs);
    return load_onnx_bytes(builder.bytes(), "gradient");
  }

  std::map<std::string, Tensor> run(const Model& model, const std::vector<Value>& at,
                                    Stream& stream) const {
    std::map<std::string, Tensor> feeds;
    for (const auto* list : {&at, &zs})
      for (const Value& v : *list) feeds[v.name] = from_vector(v.values, v.shape, stream);
    return model.run(feeds, stream);
  }

  void expect_matches_differences(double tolerance = 1e-6) {
    const Model model = load();
    Stream stream = device("cpu:0").create_stream();
    const auto out = run(model, xs, stream);
    auto total = [&](const std::vector<Value>& at) {
      const auto values = run(model, at, stream).at(y).to_vector<double>(stream);
      return std::accumulate(values.begin(), values.end(), 0.0);
    };
    constexpr double h = 1e-6;
    for (size_t i = 0; i < xs.size(); ++i) {
      const Tensor& grad = out.at("d_" + xs[i].name);
      ASSERT_EQ(grad.shape(), xs[i].shape) << xs[i].name;
      const std::vector<double> got = grad.to_vector<double>(stream);
      for (size_t j = 0; j < got.size(); ++j) {
        std::vector<Value> up = xs, down = xs;
        up[i].values[j] += h;
        down[i].values[j] -= h;
        const double want = (total(up) - total(down)) / (2 * h);
        EXPECT_NEAR(got[j], want, tolerance * std::max(1.0, std::abs(want)))
            << "d" << y << "/d" << xs[i].name << " at " << j;
      }
    }
  }
};

// (a + b) * c * a: b and c broadcast, a read twice (its gradients summed).
TEST(Gradient, BroadcastAddAndAMulChainMatchDifferences) {
  GradientCase c;
  c.x("a", {2, 3}, spread(6, -1, 1, 1)).x("b", {3}, spread(3, -1, 1, 2));
  c.x("c", {2, 1}, spread(2, 0.5, 1.5, 3));
  c.builder.node("Add", {"a", "b"}, {"s"});
  c.builder.node("Mul", {"s", "c"}, {"p"});
  c.builder.node("Mul", {"p", "a"}, {"y"});
  c.y_shape = {2, 3};
  c.expect_matches_differences();
}

// -((a - b) / d): b broadcast over rows.
TEST(Gradient, SubDivAndNegMatchDifferences) {
  GradientCase c;
  c.x("a", {2, 3}, spread(6, -1, 1, 4)).x("b", {1, 3}, spread(3, -1, 1, 5));
  c.x("d", {2, 3}, spread(6, 0.5, 2, 6));
  c.builder.node("Sub", {"a", "b"}, {"u"});
  c.builder.node("Div", {"u", "d"}, {"v"});
  c.builder.node("Neg", {"v"}, {"y"});
  c.y_shape = {2, 3};
  c.expect_matches_differences();
}

// A batched product whose weight broadcasts over the batch, plus a vector-matrix product.
TEST(Gradient, BatchedAndVectorMatMulMatchDifferences) {
  GradientCase c;
  c.x("x", {2, 2, 3}, spread(12, -1, 1, 7)).x("w", {3, 4}, spread(12, -1, 1, 8));
  c.x("v", {3}, spread(3, -1, 1, 9));
  c.builder.node("MatMul", {"x", "w"}, {"h"});
  c.builder.node("MatMul", {"v", "w"}, {"g"});
  c.builder.node("Add", {"h", "g"}, {"y"});
  c.y_shape = {2, 2, 4};
  c.expect_matches_differences();
}

TEST(Gradient, MatrixVectorMatMulMatchesDifferences) {
  GradientCase c;
  c.x("m", {2, 3}, spread(6, -1, 1, 10)).x("v", {3}, spread(3, -1, 1, 11));
  c.builder.node("MatMul", {"m", "v"}, {"y"});
  c.y_shape = {2};
  c.expect_matches_differences();
}

// 0.5 * A^T B^T + 2 * c, c broadcast over rows.
TEST(Gradient, GemmWithTransposesAlphaBetaMatchesDifferences) {
  GradientCase c;
  c.x("a", {3, 2}, spread(6, -1, 1, 12)).x("b", {4, 3}, spread(12, -1, 1, 13));
  c.x("c", {4}, spread(4, -1, 1, 14));
  auto& gemm = c.builder.node("Gemm", {"a", "b", "c"}, {"y"});
  ModelBuilder::set_int(gemm, "transA", 1);
  ModelBuilder::set_int(gemm, "transB", 1);
  ModelBuilder::set_float(gemm, "alpha", 0.5f);
  ModelBuilder::set_float(gemm, "beta", 2.0f);
  c.y_shape = {2, 4};
  c.expect_matches_differences();
}

// tanh(sigmoid(relu(x) * w)), x kept away from Relu's kink.
TEST(Gradient, ReluSigmoidTanhMatchDifferences) {
  GradientCase c;
  c.x("x", {2, 3}, spread(6, -1, 1, 15, 0.1)).x("w", {2, 3}, spread(6, -2, 2, 16));
  c.builder.node("Relu", {"x"}, {"r"});
  c.builder.node("Mul", {"r", "w"}, {"m"});
  c.builder.node("Sigmoid", {"m"}, {"s"});
  c.builder.node("Tanh", {"s"}, {"y"});
  c.y_shape = {2, 3};
  c.expect_matches_differences();
}

// softmax(x) * w + log_softmax(x) * w along the last axis; w is a zs, not differentiated.
TEST(Gradient, SoftmaxAndLogSoftmaxMatchDifferences) {
  GradientCase c;
  c.x("x", {2, 4}, spread(8, -2, 2, 17));
  c.z("w", {2, 4}, spread(8, -1, 1, 18));
  c.builder.node("Softmax", {"x"}, {"p"});
  c.builder.node("LogSoftmax", {"x"}, {"l"});
  c.builder.node("Mul", {"p", "w"}, {"pw"});
  c.builder.node("Mul", {"l", "w"}, {"lw"});
  c.builder.node("Add", {"pw", "lw"}, {"y"});
  c.y_shape = {2, 4};
  c.expect_matches_differences();
}

// Before opset 13 Softmax normalises the input seen as 2-d: [2, 2 * 3] for axis 1.
TEST(Gradient, Opset11SoftmaxOverTheFlattenedTailMatchesDifferences) {
  GradientCase c;
  c.builder = training_model(11);
  c.x("x", {2, 2, 3}, spread(12, -2, 2, 19));
  c.z("w", {2, 2, 3}, spread(12, -1, 1, 20));
  ModelBuilder::set_int(c.builder.node("Softmax", {"x"}, {"p"}), "axis", 1);
  c.builder.node("Mul", {"p", "w"}, {"y"});
  c.y_shape = {2, 2, 3};
  c.expect_matches_differences();
}

// ReduceSum over axis 1 (axes an input, keepdims 0), squared; plus the mean of the squares of
// ReduceMean over axes 0 and 2 (an attribute, dimensions kept), which broadcasts.
TEST(Gradient, ReduceSumAndReduceMeanMatchDifferences) {
  GradientCase c;
  c.x("x", {2, 3, 4}, spread(24, -1, 1, 21));
  add_i64_initializer(c.builder, "axes", {1});
  ModelBuilder::set_int(c.builder.node("ReduceSum", {"x", "axes"}, {"s"}), "keepdims", 0);
  c.builder.node("Mul", {"s", "s"}, {"t"});
  ModelBuilder::set_ints(c.builder.node("ReduceMean", {"x"}, {"m"}), "axes", {0, 2});
  c.builder.node("Mul", {"m", "m"}, {"mm"});
  c.builder.node("ReduceMean", {"mm"}, {"r"});  // every axis, kept: [1, 1, 1]
  c.builder.node("Add", {"t", "r"}, {"y"});
  c.y_shape = {1, 2, 4};
  c.expect_matches_differences();
}

// exp(x) + log(x) + sqrt(x) + x^3 (a constant exponent) + x^k (k differentiated too), summed.
TEST(Gradient, ExpLogSqrtPowAndSumMatchDifferences) {
  GradientCase c;
  c.x("x", {2, 3}, spread(6, 0.5, 2, 22)).x("k", {2, 3}, spread(6, 0.5, 1.5, 23));
  add_f64_initializer(c.builder, "three", {}, {3.0});
  c.builder.node("Exp", {"x"}, {"e"});
  c.builder.node("Log", {"x"}, {"l"});
  c.builder.node("Sqrt", {"x"}, {"q"});
  c.builder.node("Pow", {"x", "three"}, {"p"});
  c.builder.node("Pow", {"x", "k"}, {"pk"});
  c.builder.node("Sum", {"e", "l", "q", "p", "pk"}, {"y"});
  c.y_shape = {2, 3};
  c.expect_matches_differences();
}

// x^e where x = 0: the formulas' 0 * inf (e * x^(e - 1) at e = 0, y * log x at x = 0, e >= 0)
// gave NaN and -inf where the derivative, and hal's autograd and PyTorch, give 0.
TEST(Gradient, PowAtZeroIsZeroWhereTheFormulaIsZeroTimesInfinity) {
  GradientCase c;
  c.x("x", {4}, {0, 0, 2, 0}).x("e", {4}, {0, 2, 0, 1});
  c.builder.node("Pow", {"x", "e"}, {"y"});
  c.y_shape = {4};
  const Model model = c.load();
  Stream stream = device("cpu:0").create_stream();
  const auto out = c.run(model, c.xs, stream);
  EXPECT_EQ(out.at("d_x").to_vector<double>(stream), (std::vector<double>{0, 0, 0, 1}));
  const std::vector<double> de = out.at("d_e").to_vector<double>(stream);
  EXPECT_EQ(de[0], 0);
  EXPECT_EQ(de[1], 0);
  EXPECT_NEAR(de[2], std::log(2.0), 1e-15);
  EXPECT_EQ(de[3], 0);
}

// Transpose, Reshape (its shape an initializer), Identity, Unsqueeze, Flatten, then * w.
TEST(Gradient, ShapeOpsPassGradientsThroughMatchingDifferences) {
  GradientCase c;
  c.x("x", {2, 3, 4}, spread(24, -1, 1, 24));
  c.z("w", {4, 6}, spread(24, -1, 1, 25));
  add_i64_initializer(c.builder, "shape", {4, 6});
  add_i64_initializer(c.builder, "zero", {0});
  ModelBuilder::set_ints(c.builder.node("Transpose", {"x"}, {"t"}), "perm", {2, 0, 1});
  c.builder.node("Reshape", {"t", "shape"}, {"r"});
  c.builder.node("Identity", {"r"}, {"i"});
  c.builder.node("Unsqueeze", {"i", "zero"}, {"u"});
  c.builder.node("Flatten", {"u"}, {"f"});  // axis 1: [1, 24]
  c.builder.node("Reshape", {"f", "shape"}, {"back"});
  c.builder.node("Mul", {"back", "w"}, {"y"});
  c.y_shape = {4, 6};
  c.expect_matches_differences();
}

// Against an intermediate value (ONNX's dY/dH): y = tanh(h), h = a * b, xs = [h]: 1 - y^2.
TEST(Gradient, WithRespectToAnIntermediateValueIsTheFormula) {
  ModelBuilder builder = training_model();
  builder.input("a", kF64, {"3"}).input("b", kF64, {"3"});
  builder.output("y", kF64, {"3"}).output("dy_dh", kF64, {"3"});
  builder.node("Mul", {"a", "b"}, {"h"});
  builder.node("Tanh", {"h"}, {"y"});
  gradient_node(builder, {"h"}, {}, "y", {"dy_dh"});
  const Model model = load_onnx_bytes(builder.bytes(), "intermediate");
  Stream stream = device("cpu:0").create_stream();
  const std::vector<double> a{0.5, -1.0, 2.0}, b{1.0, 0.3, -0.2};
  const auto out =
      model.run({{"a", from_vector(a, {3}, stream)}, {"b", from_vector(b, {3}, stream)}}, stream);
  const auto got = out.at("dy_dh").to_vector<double>(stream);
  for (size_t i = 0; i < 3; ++i) {
    const double y = std::tanh(a[i] * b[i]);
    EXPECT_NEAR(got[i], 1 - y * y, 1e-12) << i;
  }
}

// An x that y does not depend on gets zeros; an output left empty is skipped; a second
// Gradient of the same y reads the same kept values.
TEST(Gradient, AnXYDoesNotDependOnGetsZerosAndOutputsMayBeSkipped) {
  ModelBuilder builder = training_model();
  builder.input("a", kF64, {"2"}).input("b", kF64, {"2"});
  builder.output("db", kF64, {"2"}).output("da", kF64, {"2"});
  builder.node("Exp", {"a"}, {"y"});
  gradient_node(builder, {"a", "b"}, {}, "y", {"", "db"});
  auto& second = builder.node("Gradient", {"a"}, {"da"}, "grad2");
  second.set_domain(kTraining);
  ModelBuilder::set_strings(second, "xs", {"a"});
  ModelBuilder::set_string(second, "y", "y");
  const Model model = load_onnx_bytes(builder.bytes(), "zeros");
  Stream stream = device("cpu:0").create_stream();
  const std::vector<double> a{0.5, -1.0};
  const auto out = model.run({{"a", from_vector(a, {2}, stream)},
                              {"b", from_vector(std::vector<double>{1, 2}, {2}, stream)}},
                             stream);
  EXPECT_EQ(out.at("db").to_vector<double>(stream), (std::vector<double>{0, 0}));
  const auto da = out.at("da").to_vector<double>(stream);
  EXPECT_NEAR(da[0], std::exp(0.5), 1e-12);
  EXPECT_NEAR(da[1], std::exp(-1.0), 1e-12);
}

// The planner places the Gradient like any node (its kept forward values as inputs), and the
// planned run gives ONNX's own example: d(a * (a + b))/da = 2a + b, /db = a.
TEST(Gradient, PlannedRunGivesTheSameGradients) {
  ModelBuilder builder = training_model(12);
  builder.input("a", TensorProto::FLOAT, {}).input("b", TensorProto::FLOAT, {});
  builder.output("d", TensorProto::FLOAT, {}).output("dd_da", TensorProto::FLOAT, {});
  builder.output("dd_db", TensorProto::FLOAT, {});
  builder.node("Add", {"a", "b"}, {"c"});
  builder.node("Mul", {"c", "a"}, {"d"});
  gradient_node(builder, {"a", "b"}, {}, "d", {"dd_da", "dd_db"});
  const Model model = load_onnx_bytes(builder.bytes(), "planned");
  PlanOptions options;
  options.device = "cpu:0";
  const ExecutionPlan plan = plan_model(model, options);
  ASSERT_EQ(plan.nodes.size(), 3u);
  EXPECT_EQ(plan.nodes[2].op, "Gradient");
  Stream stream = device("cpu:0").create_stream();
  const Tensor a = from_vector(std::vector<float>{3}, {}, stream);
  const Tensor b = from_vector(std::vector<float>{-1}, {}, stream);
  stream.synchronize();
  const PlannedRun run = run_planned(model, plan, {{"a", a}, {"b", b}});
  EXPECT_FLOAT_EQ(run.outputs.at("dd_da").to_vector<float>(stream)[0], 5.0f);
  EXPECT_FLOAT_EQ(run.outputs.at("dd_db").to_vector<float>(stream)[0], 3.0f);
  EXPECT_FLOAT_EQ(run.outputs.at("d").to_vector<float>(stream)[0], 6.0f);
}

// x -> Mul -> `op` -> y, differentiated with respect to x.
ModelBuilder through(const std::string& op) {
  ModelBuilder builder = training_model();
  builder.input("x", kF64, {"2"}).input("w", kF64, {"2"});
  builder.output("dx", kF64, {"2"});
  builder.node("Mul", {"x", "w"}, {"m"}, "mul");
  builder.node(op, {"m"}, {"y"}, "f");
  return builder;
}

TEST(GradientErrors, ANodeWithoutARuleIsUnsupportedNamingIt) {
  ModelBuilder builder = through("Floor");
  gradient_node(builder, {"x"}, {"w"}, "y", {"dx"});
  expect_error([&] { load_onnx_bytes(builder.bytes(), "floor.onnx"); }, ErrorCode::Unsupported,
               {"node 'grad' (ai.onnx.preview.training.Gradient, opset 1)",
                "cannot differentiate through node 'f' (Floor, opset 13)",
                "no gradient rule for Floor", "MatMul"});
}

TEST(GradientErrors, XsNamingAValueNotInTheGraphIsInvalid) {
  ModelBuilder builder = through("Exp");
  auto& node = builder.node("Gradient", {"x"}, {"dx"}, "grad");
  node.set_domain(kTraining);
  ModelBuilder::set_strings(node, "xs", {"ghost"});
  ModelBuilder::set_string(node, "y", "y");
  expect_error([&] { load_onnx_bytes(builder.bytes(), "ghost.onnx"); }, ErrorCode::InvalidArgument,
               {"node 'grad'", "xs names 'ghost', which the graph does not define"});
}

TEST(GradientErrors, AYThatDependsOnNoneOfXsIsInvalid) {
  ModelBuilder builder = through("Exp");
  gradient_node(builder, {"w"}, {}, "x", {"dx"});  // y = x, a graph input
  expect_error([&] { load_onnx_bytes(builder.bytes(), "unreachable.onnx"); },
               ErrorCode::InvalidArgument, {"node 'grad'", "y names 'x'", "none of xs (w)"});
}

TEST(GradientErrors, AYComputedAfterTheGradientNodeIsUnsupported) {
  ModelBuilder builder = training_model();
  builder.input("x", kF64, {"2"});
  builder.output("dx", kF64, {"2"}).output("y", kF64, {"2"});
  gradient_node(builder, {"x"}, {}, "y", {"dx"});
  builder.node("Exp", {"x"}, {"y"}, "late");
  expect_error([&] { load_onnx_bytes(builder.bytes(), "late.onnx"); }, ErrorCode::Unsupported,
               {"y names 'y', which node 'late' (Exp, opset 13) computes after it"});
}

TEST(GradientErrors, InputsOtherThanTheValuesXsNameAreUnsupported) {
  ModelBuilder builder = through("Exp");
  auto& node = builder.node("Gradient", {"w"}, {"dx"}, "grad");
  node.set_domain(kTraining);
  ModelBuilder::set_strings(node, "xs", {"x"});
  ModelBuilder::set_string(node, "y", "y");
  expect_error([&] { load_onnx_bytes(builder.bytes(), "fed.onnx"); }, ErrorCode::Unsupported,
               {"input 0 is 'w', not 'x'"});
}

TEST(GradientErrors, XsComputedFromOtherXsAreInvalid) {
  ModelBuilder builder = through("Exp");
  gradient_node(builder, {"x", "m"}, {}, "y", {"dx"});
  expect_error([&] { load_onnx_bytes(builder.bytes(), "dependent.onnx"); },
               ErrorCode::InvalidArgument,
               {"xs names 'm', which node 'mul' (Mul, opset 13) computes from other xs"});
}

}  // namespace
}  // namespace hal::test
