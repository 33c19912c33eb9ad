// ONNX's optimizers (Adagrad, Adam, Momentum of ai.onnx.preview.training) for one step, and
// BatchNormalization in training mode, against the spec's formulas computed here in double.
#include <algorithm>
#include <cmath>

#include "hal/model.hpp"
#include "model_builder.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using onnx::TensorProto;
using Floats = std::vector<float>;
constexpr const char* kTraining = "ai.onnx.preview.training";

// One optimizer node over groups of tensors: inputs R, T then per group kind ("X", "G", ...)
// the tensors "X0", "X1", ...; outputs likewise "X0_new", ... for `out_kinds`.
struct OptimizerCase {
  ModelBuilder builder{13};
  onnx::NodeProto* node = nullptr;
  std::vector<Shape> shapes;  // one per group
  std::vector<std::string> kinds;

  OptimizerCase(const std::string& op, const std::vector<std::string>& in_kinds,
                const std::vector<std::string>& out_kinds, std::vector<Shape> group_shapes)
      : shapes(std::move(group_shapes)), kinds(in_kinds) {
    auto* import = builder.proto().add_opset_import();
    import->set_domain(kTraining);
    import->set_version(1);
    builder.input("R", TensorProto::FLOAT, {}).input("T", TensorProto::INT64, {});
    std::vector<std::string> inputs{"R", "T"}, outputs;
    for (const auto& kind : in_kinds)
      for (size_t g = 0; g < shapes.size(); ++g) {
        inputs.push_back(kind + std::to_string(g));
        builder.input(inputs.back(), TensorProto::FLOAT, dims(shapes[g]));
      }
    for (const auto& kind : out_kinds)
      for (size_t g = 0; g < shapes.size(); ++g) {
        outputs.push_back(kind + std::to_string(g) + "_new");
        builder.output(outputs.back(), TensorProto::FLOAT, dims(shapes[g]));
      }
    node = &builder.node(op, inputs, outputs, "step");
    node->set_domain(kTraining);
  }

  static std::vector<std::string> dims(const Shape& shape) {
    std::vector<std::string> out;
    for (int64_t d : shape) out.push_back(std::to_string(d));
    return out;
  }

  // Runs with R, T and those of the named group tensors the op takes.
  std::map<std::string, Tensor> run(float r, int64_t t, const std::map<std::string, Floats>& values,
                                    Stream& stream) {
    const Model model = load_onnx_bytes(builder.bytes(), node->op_type());
    std::map<std::string, Tensor> feeds{{"R", from_vector(Floats{r}, {}, stream)},
                                        {"T", from_vector(std::vector<int64_t>{t}, {}, stream)}};
    for (const auto& [name, v] : values)
      if (std::find(kinds.begin(), kinds.end(), name.substr(0, 1)) != kinds.end())
        feeds[name] = from_vector(v, shapes.at(static_cast<size_t>(name.back() - '0')), stream);
    return model.run(feeds, stream);
  }
};

void expect_close(const Tensor& tensor, Stream& stream, const std::vector<double>& want,
                  const std::string& what) {
  const Floats got = tensor.to_vector<float>(stream);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::abs(want[i]))) << what << " at " << i;
}

const std::map<std::string, Floats> kTwoGroups{
    {"X0", {1.0f, -2.0f}},        {"X1", {0.5f, 1.5f, -0.25f}}, {"G0", {-0.1f, 0.2f}},
    {"G1", {0.3f, -0.4f, 0.05f}}, {"V0", {0.01f, -0.02f}},      {"V1", {0.1f, 0.0f, -0.1f}},
    {"H0", {0.2f, 0.1f}},         {"H1", {0.05f, 0.3f, 0.02f}},
};

// Adam per the spec's pseudo code, two groups, at T = 0 (no bias correction) and T = 3.
TEST(Optimizers, AdamStepsEachGroupWithBiasCorrectionAfterTheFirst) {
  OptimizerCase c("Adam", {"X", "G", "V", "H"}, {"X", "V", "H"}, {{2}, {3}});
  const double alpha = 0.8, beta = 0.95, eps = 1e-3, norm = 0.01, post = 0.1;
  ModelBuilder::set_float(*c.node, "alpha", 0.8f);
  ModelBuilder::set_float(*c.node, "beta", 0.95f);
  ModelBuilder::set_float(*c.node, "epsilon", 1e-3f);
  ModelBuilder::set_float(*c.node, "norm_coefficient", 0.01f);
  ModelBuilder::set_float(*c.node, "norm_coefficient_post", 0.1f);
  Stream stream = device("cpu:0").create_stream();
  for (const int64_t t : {int64_t{0}, int64_t{3}}) {
    const double r = 0.1;
    const auto out = c.run(0.1f, t, kTwoGroups, stream);
    const double a = static_cast<float>(alpha), b = static_cast<float>(beta);
    const double rate = t > 0 ? r * std::sqrt(1 - std::pow(b, t)) / (1 - std::pow(a, t)) : r;
    for (const std::string g : {"0", "1"}) {
      std::vector<double> x_new, v_new, h_new;
      for (size_t i = 0; i < kTwoGroups.at("X" + g).size(); ++i) {
        const double x = kTwoGroups.at("X" + g)[i];
        const double grad = static_cast<float>(norm) * x + kTwoGroups.at("G" + g)[i];
        const double v = a * kTwoGroups.at("V" + g)[i] + (1 - a) * grad;
        const double h = b * kTwoGroups.at("H" + g)[i] + (1 - b) * grad * grad;
        v_new.push_back(v);
        h_new.push_back(h);
        x_new.push_back((1 - static_cast<float>(post)) *
                        (x - rate * v / (std::sqrt(h) + static_cast<float>(eps))));
      }
      const std::string at = " (T " + std::to_string(t) + ")";
      expect_close(out.at("X" + g + "_new"), stream, x_new, "X" + g + at);
      expect_close(out.at("V" + g + "_new"), stream, v_new, "V" + g + at);
      expect_close(out.at("H" + g + "_new"), stream, h_new, "H" + g + at);
    }
  }
}

TEST(Optimizers, AdagradDecaysTheRateAndAccumulatesSquaredGradients) {
  OptimizerCase c("Adagrad", {"X", "G", "H"}, {"X", "H"}, {{2}, {3}});
  ModelBuilder::set_float(*c.node, "decay_factor", 0.5f);
  ModelBuilder::set_float(*c.node, "epsilon", 1e-4f);
  ModelBuilder::set_float(*c.node, "norm_coefficient", 0.02f);
  Stream stream = device("cpu:0").create_stream();
  const int64_t t = 2;
  const auto out = c.run(0.3f, t, kTwoGroups, stream);
  const double r = 0.3f / (1 + t * 0.5);
  for (const std::string g : {"0", "1"}) {
    std::vector<double> x_new, h_new;
    for (size_t i = 0; i < kTwoGroups.at("X" + g).size(); ++i) {
      const double x = kTwoGroups.at("X" + g)[i];
      const double grad = static_cast<double>(0.02f) * x + kTwoGroups.at("G" + g)[i];
      const double h = kTwoGroups.at("H" + g)[i] + grad * grad;
      h_new.push_back(h);
      x_new.push_back(x - r * grad / (std::sqrt(h) + static_cast<double>(1e-4f)));
    }
    expect_close(out.at("X" + g + "_new"), stream, x_new, "X" + g);
    expect_close(out.at("H" + g + "_new"), stream, h_new, "H" + g);
  }
}

// Standard and Nesterov momentum; at T = 0 the gradient's coefficient is 1, not beta.
TEST(Optimizers, MomentumStandardAndNesterovWithBetaFromTheSecondStep) {
  for (const std::string mode : {"standard", "nesterov"}) {
    OptimizerCase c("Momentum", {"X", "G", "V"}, {"X", "V"}, {{2}, {3}});
    ModelBuilder::set_float(*c.node, "alpha", 0.9f);
    ModelBuilder::set_float(*c.node, "beta", 0.5f);
    ModelBuilder::set_float(*c.node, "norm_coefficient", 0.1f);
    ModelBuilder::set_string(*c.node, "mode", mode);
    Stream stream = device("cpu:0").create_stream();
    for (const int64_t t : {int64_t{0}, int64_t{4}}) {
      const auto out = c.run(0.2f, t, kTwoGroups, stream);
      const double alpha = 0.9f, beta = t > 0 ? 0.5 : 1.0, r = 0.2f;
      for (const std::string g : {"0", "1"}) {
        std::vector<double> x_new, v_new;
        for (size_t i = 0; i < kTwoGroups.at("X" + g).size(); ++i) {
          const double x = kTwoGroups.at("X" + g)[i];
          const double grad = static_cast<double>(0.1f) * x + kTwoGroups.at("G" + g)[i];
          const double v = alpha * kTwoGroups.at("V" + g)[i] + beta * grad;
          v_new.push_back(v);
          x_new.push_back(mode == "standard" ? x - r * v : x - r * (grad + alpha * v));
        }
        const std::string at = " (" + mode + ", T " + std::to_string(t) + ")";
        expect_close(out.at("X" + g + "_new"), stream, x_new, "X" + g + at);
        expect_close(out.at("V" + g + "_new"), stream, v_new, "V" + g + at);
      }
    }
  }
}

TEST(Optimizers, MomentumWithAnUnknownModeIsInvalid) {
  OptimizerCase c("Momentum", {"X", "G", "V"}, {"X", "V"}, {{2}});
  ModelBuilder::set_float(*c.node, "alpha", 0.9f);
  ModelBuilder::set_float(*c.node, "beta", 0.5f);
  ModelBuilder::set_float(*c.node, "norm_coefficient", 0.1f);
  ModelBuilder::set_string(*c.node, "mode", "heavy");
  Stream stream = device("cpu:0").create_stream();
  expect_error(
      [&] {
        c.run(0.2f, 1, {{"X0", {1, 2}}, {"G0", {1, 2}}, {"V0", {1, 2}}}, stream);
      },
      ErrorCode::InvalidArgument, {"node 'step'", "mode 'heavy'"});
}

// x [2, 3, 2, 2]: per channel the batch's mean and population variance (over N, H, W)
// normalise x, and the running statistics move towards them by 1 - momentum.
TEST(BatchNormTraining, UsesBatchStatisticsAndUpdatesTheRunningOnes) {
  constexpr int64_t n = 2, ch = 3, hw = 4;
  Floats x(n * ch * hw), scale{1.0f, 0.5f, -2.0f}, bias{0.0f, 1.0f, 0.25f};
  Floats mean_in{0.1f, -0.2f, 0.3f}, var_in{1.0f, 2.0f, 0.5f};
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)) * 2.0 + 0.1 * (i % 5));
  ModelBuilder builder(15);
  builder.input("x", TensorProto::FLOAT, {"2", "3", "2", "2"});
  for (const char* name : {"scale", "bias", "mean", "var"})
    builder.input(name, TensorProto::FLOAT, {"3"});
  builder.output("y", TensorProto::FLOAT, {"2", "3", "2", "2"});
  builder.output("running_mean", TensorProto::FLOAT, {"3"});
  builder.output("running_var", TensorProto::FLOAT, {"3"});
  auto& node = builder.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"},
                            {"y", "running_mean", "running_var"}, "bn");
  ModelBuilder::set_int(node, "training_mode", 1);
  ModelBuilder::set_float(node, "momentum", 0.7f);
  ModelBuilder::set_float(node, "epsilon", 1e-3f);
  const Model model = load_onnx_bytes(builder.bytes(), "bn_training");
  Stream stream = device("cpu:0").create_stream();
  const auto out = model.run({{"x", from_vector(x, {n, ch, 2, 2}, stream)},
                              {"scale", from_vector(scale, {ch}, stream)},
                              {"bias", from_vector(bias, {ch}, stream)},
                              {"mean", from_vector(mean_in, {ch}, stream)},
                              {"var", from_vector(var_in, {ch}, stream)}},
                             stream);
  std::vector<double> y(x.size()), running_mean, running_var;
  const double momentum = 0.7f, eps = 1e-3f;
  for (int64_t c = 0; c < ch; ++c) {
    auto at = [&](int64_t b, int64_t i) { return static_cast<size_t>((b * ch + c) * hw + i); };
    double sum = 0, squares = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < hw; ++i) sum += x[at(b, i)];
    const double mean = sum / (n * hw);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < hw; ++i) squares += (x[at(b, i)] - mean) * (x[at(b, i)] - mean);
    const double var = squares / (n * hw);  // the population's, not the sample's
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < hw; ++i)
        y[at(b, i)] = (x[at(b, i)] - mean) / std::sqrt(var + eps) * scale[c] + bias[c];
    running_mean.push_back(mean_in[c] * momentum + mean * (1 - momentum));
    running_var.push_back(var_in[c] * momentum + var * (1 - momentum));
  }
  expect_close(out.at("y"), stream, y, "y");
  expect_close(out.at("running_mean"), stream, running_mean, "running_mean");
  expect_close(out.at("running_var"), stream, running_var, "running_var");
}

TEST(BatchNormTraining, StatisticsOutputsOutsideTrainingModeAreInvalid) {
  ModelBuilder builder(15);
  builder.input("x", TensorProto::FLOAT, {"1", "1", "2"});
  for (const char* name : {"scale", "bias", "mean", "var"})
    builder.input(name, TensorProto::FLOAT, {"1"});
  builder.output("y", TensorProto::FLOAT, {"1", "1", "2"});
  builder.output("running_mean", TensorProto::FLOAT, {"1"});
  builder.output("running_var", TensorProto::FLOAT, {"1"});
  builder.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"},
               {"y", "running_mean", "running_var"}, "bn");
  const Model model = load_onnx_bytes(builder.bytes(), "bn_outputs");
  Stream stream = device("cpu:0").create_stream();
  const Tensor one = from_vector(Floats{1}, {1}, stream);
  expect_error(
      [&] {
        model.run({{"x", from_vector(Floats{1, 2}, {1, 1, 2}, stream)},
                   {"scale", one},
                   {"bias", one},
                   {"mean", one},
                   {"var", one}},
                  stream);
      },
      ErrorCode::InvalidArgument, {"node 'bn'", "only in training mode"});
}

}  // namespace
}  // namespace hal::test
