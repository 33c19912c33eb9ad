// The recurrent ONNX ops (RNN, GRU, LSTM) and Einsum against plain loops written here, and
// the errors for bad inputs and what they leave unsupported.
#include <cmath>

#include "hal/model.hpp"
#include "model_builder.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using onnx::TensorProto;
using Matrix = std::vector<float>;  // row-major

float sigmoid_of(float x) { return 1.0f / (1.0f + std::exp(-x)); }

Matrix ramp(size_t count, float scale, float shift) {
  Matrix values(count);
  for (size_t i = 0; i < count; ++i) values[i] = scale * static_cast<float>((i * 7) % 11) - shift;
  return values;
}

// sum over k of m[row, k] * v[k], m being [rows, cols].
float dot_row(const Matrix& m, size_t row, size_t cols, const float* v) {
  float total = 0.0f;
  for (size_t k = 0; k < cols; ++k) total += m[row * cols + k] * v[k];
  return total;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << "at " << i;
}

constexpr size_t kSeq = 3, kBatch = 2, kInput = 2, kHidden = 2;

TEST(RecurrentOps, LstmWithBiasPeepholesAndInitialStateMatchesALoop) {
  const size_t gates = 4 * kHidden;
  const Matrix w = ramp(gates * kInput, 0.1f, 0.4f), r = ramp(gates * kHidden, 0.08f, 0.3f);
  const Matrix b = ramp(2 * gates, 0.05f, 0.2f), p = ramp(3 * kHidden, 0.1f, 0.5f);
  const Matrix h0 = ramp(kBatch * kHidden, 0.2f, 1.0f), c0 = ramp(kBatch * kHidden, 0.3f, 1.0f);
  const Matrix x = ramp(kSeq * kBatch * kInput, 0.25f, 1.2f);

  ModelBuilder builder(14);
  builder.input("x", TensorProto::FLOAT, {"3", "2", "2"});
  builder.initializer("w", {1, 8, 2}, w).initializer("r", {1, 8, 2}, r);
  builder.initializer("b", {1, 16}, b).initializer("p", {1, 6}, p);
  builder.initializer("h0", {1, 2, 2}, h0).initializer("c0", {1, 2, 2}, c0);
  builder.output("y", TensorProto::FLOAT, {"3", "1", "2", "2"})
      .output("y_h", TensorProto::FLOAT, {"1", "2", "2"})
      .output("y_c", TensorProto::FLOAT, {"1", "2", "2"});
  auto& node = builder.node("LSTM", {"x", "w", "r", "b", "", "h0", "c0", "p"}, {"y", "y_h", "y_c"});
  ModelBuilder::set_int(node, "hidden_size", kHidden);

  // The gates in ONNX's order i, o, f, c; peepholes i, o, f.
  Matrix y, h = h0, c = c0;
  for (size_t t = 0; t < kSeq; ++t) {
    Matrix next_h(h.size()), next_c(c.size());
    for (size_t n = 0; n < kBatch; ++n)
      for (size_t j = 0; j < kHidden; ++j) {
        auto pre = [&](size_t g) {
          const size_t row = g * kHidden + j;
          return dot_row(w, row, kInput, &x[(t * kBatch + n) * kInput]) +
                 dot_row(r, row, kHidden, &h[n * kHidden]) + b[row] + b[gates + row];
        };
        const float c_prev = c[n * kHidden + j];
        const float i = sigmoid_of(pre(0) + p[j] * c_prev);
        const float f = sigmoid_of(pre(2) + p[2 * kHidden + j] * c_prev);
        const float cell = f * c_prev + i * std::tanh(pre(3));
        const float o = sigmoid_of(pre(1) + p[kHidden + j] * cell);
        next_c[n * kHidden + j] = cell;
        next_h[n * kHidden + j] = o * std::tanh(cell);
      }
    h = next_h;
    c = next_c;
    y.insert(y.end(), h.begin(), h.end());
  }

  const Model model = load_onnx_bytes(builder.bytes(), "lstm");
  Stream stream = device("cpu:0").create_stream();
  auto out = model.run({{"x", from_vector(x, {3, 2, 2}, stream)}}, stream);
  EXPECT_EQ(out.at("y").shape(), (Shape{3, 1, 2, 2}));
  expect_near_all(out.at("y").to_vector<float>(stream), y);
  expect_near_all(out.at("y_h").to_vector<float>(stream), h);
  expect_near_all(out.at("y_c").to_vector<float>(stream), c);
}

// A reverse GRU with linear_before_reset over sequences of lengths 3 and 1: the second
// sequence runs its one step alone, its later outputs are zeros, and Y_h is each sequence's
// state after its first step (the last one that reverse reaches).
TEST(RecurrentOps, ReverseGruOverUnequalSequencesMatchesALoop) {
  const size_t gates = 3 * kHidden;
  const Matrix w = ramp(gates * kInput, 0.1f, 0.4f), r = ramp(gates * kHidden, 0.08f, 0.3f);
  const Matrix b = ramp(2 * gates, 0.05f, 0.2f);
  const Matrix x = ramp(kSeq * kBatch * kInput, 0.25f, 1.2f);
  const std::vector<int32_t> lengths{3, 1};

  ModelBuilder builder(14);
  builder.input("x", TensorProto::FLOAT, {"3", "2", "2"}).input("lens", TensorProto::INT32, {"2"});
  builder.initializer("w", {1, 6, 2}, w).initializer("r", {1, 6, 2}, r);
  builder.initializer("b", {1, 12}, b);
  builder.output("y", TensorProto::FLOAT, {"3", "1", "2", "2"})
      .output("y_h", TensorProto::FLOAT, {"1", "2", "2"});
  auto& node = builder.node("GRU", {"x", "w", "r", "b", "lens"}, {"y", "y_h"});
  ModelBuilder::set_int(node, "linear_before_reset", 1);
  ModelBuilder::set_string(node, "direction", "reverse");

  Matrix y(kSeq * kBatch * kHidden, 0.0f), y_h(kBatch * kHidden);
  for (size_t n = 0; n < kBatch; ++n) {
    std::vector<float> h(kHidden, 0.0f);
    for (size_t t = static_cast<size_t>(lengths[n]); t-- > 0;) {
      std::vector<float> next(kHidden);
      for (size_t j = 0; j < kHidden; ++j) {
        auto input_part = [&](size_t g) {
          return dot_row(w, g * kHidden + j, kInput, &x[(t * kBatch + n) * kInput]) +
                 b[g * kHidden + j];
        };
        auto recurrent_part = [&](size_t g) {
          return dot_row(r, g * kHidden + j, kHidden, h.data()) + b[gates + g * kHidden + j];
        };
        const float z = sigmoid_of(input_part(0) + recurrent_part(0));
        const float reset = sigmoid_of(input_part(1) + recurrent_part(1));
        const float candidate = std::tanh(input_part(2) + reset * recurrent_part(2));
        next[j] = (1.0f - z) * candidate + z * h[j];
      }
      h = next;
      for (size_t j = 0; j < kHidden; ++j) y[(t * kBatch + n) * kHidden + j] = h[j];
    }
    for (size_t j = 0; j < kHidden; ++j) y_h[n * kHidden + j] = h[j];
  }

  const Model model = load_onnx_bytes(builder.bytes(), "gru");
  Stream stream = device("cpu:0").create_stream();
  auto out = model.run(
      {{"x", from_vector(x, {3, 2, 2}, stream)}, {"lens", from_vector(lengths, {2}, stream)}},
      stream);
  expect_near_all(out.at("y").to_vector<float>(stream), y);
  expect_near_all(out.at("y_h").to_vector<float>(stream), y_h);
}

// An RNN with X [3, 2, 2] and hidden size 2; `edit` changes the node before loading and running.
void run_rnn(const std::function<void(onnx::NodeProto&)>& edit,
             std::vector<int64_t> w_dims = {1, 2, 2}, std::vector<int32_t> lengths = {3, 3}) {
  ModelBuilder builder(14);
  builder.input("x", TensorProto::FLOAT, {"3", "2", "2"}).input("lens", TensorProto::INT32, {"2"});
  size_t w_count = 1;
  for (int64_t d : w_dims) w_count *= static_cast<size_t>(d);
  builder.initializer("w", w_dims, Matrix(w_count, 0.1f));
  builder.initializer("r", {1, 2, 2}, Matrix(4, 0.1f));
  builder.output("y_h", TensorProto::FLOAT, {"1", "2", "2"});
  auto& node = builder.node("RNN", {"x", "w", "r", "", "lens"}, {"", "y_h"}, "rnn");
  edit(node);
  const Model model = load_onnx_bytes(builder.bytes(), "rnn");
  Stream stream = device("cpu:0").create_stream();
  model.run({{"x", from_vector(Matrix(12, 1.0f), {3, 2, 2}, stream)},
             {"lens", from_vector(lengths, {2}, stream)}},
            stream);
}

TEST(RecurrentOps, BadInputsAreInvalidNamingWhatWasWrong) {
  const auto nothing = [](onnx::NodeProto&) {};
  expect_error(
      [&] {
        run_rnn(nothing, {1, 2, 5});
      },
      ErrorCode::InvalidArgument,
      {"node 'rnn'", "input W has shape [1, 2, 5]", "expected [1, 2, 2]"});
  expect_error(
      [&] {
        run_rnn(nothing, {1, 2, 2}, {3, 9});
      },
      ErrorCode::InvalidArgument, {"sequence_lens holds 9", "outside [0, 3]"});
  expect_error(
      [&] { run_rnn([](onnx::NodeProto& n) { ModelBuilder::set_int(n, "hidden_size", 4); }); },
      ErrorCode::InvalidArgument, {"hidden_size 4 differs from R's 2"});
  expect_error(
      [&] {
        run_rnn([](onnx::NodeProto& n) { ModelBuilder::set_string(n, "direction", "sideways"); });
      },
      ErrorCode::InvalidArgument, {"direction 'sideways'"});
  expect_error(
      [&] {
        run_rnn([](onnx::NodeProto& n) {
          ModelBuilder::set_strings(n, "activations", {"Tanh", "Relu"});
        });
      },
      ErrorCode::InvalidArgument, {"'activations' has 2 names, expected 1"});
}

TEST(RecurrentOps, WhatIsNotImplementedIsUnsupportedNamingIt) {
  expect_error(
      [&] {
        run_rnn([](onnx::NodeProto& n) { ModelBuilder::set_strings(n, "activations", {"Gelu"}); });
      },
      ErrorCode::Unsupported, {"node 'rnn'", "activation Gelu"});
  expect_error(
      [&] {
        run_rnn(
            [](onnx::NodeProto& n) { ModelBuilder::set_strings(n, "activations", {"Affine"}); });
      },
      ErrorCode::Unsupported, {"activation Affine without a value in activation_alpha"});
  expect_error(
      [&] {
        run_rnn([](onnx::NodeProto&) {}, {1, 2, 2}, {3, 0});
      },
      ErrorCode::Unsupported, {"sequence_lens of 0"});
}

// Einsum of a [2, 3, 3] and b [3, 4] by `equation`, on cpu:0.
Tensor run_einsum(const std::string& equation, const Matrix& a, const Matrix& b, Stream& stream) {
  ModelBuilder builder(12);
  builder.input("a", TensorProto::FLOAT, {"2", "3", "3"})
      .input("b", TensorProto::FLOAT, {"3", "4"})
      .output("y", TensorProto::FLOAT, {});
  auto& node = builder.node("Einsum", {"a", "b"}, {"y"}, "einsum");
  ModelBuilder::set_string(node, "equation", equation);
  const Model model = load_onnx_bytes(builder.bytes(), "einsum");
  return model
      .run({{"a", from_vector(a, {2, 3, 3}, stream)}, {"b", from_vector(b, {3, 4}, stream)}},
           stream)
      .at("y");
}

// y[k, n] = sum over i of a[n, i, i] * b[i, k]: a diagonal, a contraction and a transpose.
TEST(EinsumOp, DiagonalContractionAndTransposeMatchALoop) {
  const Matrix a = ramp(18, 0.5f, 2.0f), b = ramp(12, 0.25f, 1.0f);
  Matrix want(4 * 2, 0.0f);
  for (size_t k = 0; k < 4; ++k)
    for (size_t n = 0; n < 2; ++n)
      for (size_t i = 0; i < 3; ++i) want[k * 2 + n] += a[n * 9 + i * 3 + i] * b[i * 4 + k];
  Stream stream = device("cpu:0").create_stream();
  const Tensor y = run_einsum("nii, ik -> kn", a, b, stream);
  EXPECT_EQ(y.shape(), (Shape{4, 2}));
  expect_near_all(y.to_vector<float>(stream), want);
}

TEST(EinsumOp, BadEquationsAreInvalidNamingWhatWasWrong) {
  Stream stream = device("cpu:0").create_stream();
  const Matrix a(18, 1.0f), b(12, 1.0f);
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"nij,ij->n", {"node 'einsum'", "label 'j' has sizes 3 and 4"}},
      {"nij", {"has 1 terms for 2 inputs"}},
      {"ni,jk", {"term 'ni' does not fit input 0 of shape [2, 3, 3]"}},
      {"ni$j,jk", {"holds '$'"}},
      {"nij,jk->nq", {"output label 'q' is repeated or in no input"}},
  };
  for (const auto& [equation, parts] : cases)
    expect_error([&] { run_einsum(equation, a, b, stream); }, ErrorCode::InvalidArgument, parts);
}

}  // namespace
}  // namespace hal::test
