// hal::nn's modules: parameter names as PyTorch's state_dict gives them, forward passes against
// plain loops, moving to another device (tied and frozen parameters too), modes, and gradients
// reaching every parameter of a transformer block.
#include <gtest/gtest.h>

#include <cmath>

#include "hal/nn.hpp"
#include "hal/optim.hpp"
#include "support/far_backend.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

class NnModules : public ::testing::Test {
 protected:
  Device cpu = device("cpu:0");
  Stream s = cpu.create_stream();

  static std::vector<std::string> names(const nn::Module& m) {
    std::vector<std::string> out;
    for (const nn::NamedTensor& p : m.parameters()) out.push_back(p.name);
    return out;
  }
};

TEST_F(NnModules, ParametersAreNamedAsPyTorchNamesThem) {
  auto mlp = nn::make_mlp({4, 8, 3}, 1, s);
  EXPECT_EQ(names(*mlp), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(mlp->parameter("2.weight").shape(), (Shape{3, 8}));
  expect_error([&] { mlp->parameter("1.weight"); }, ErrorCode::NotFound, {"'1.weight'"});
  nn::TransformerBlock block({.dim = 8, .heads = 2, .hidden = 16}, 3, s);
  const std::vector<std::string> want{"ln1.weight", "ln1.bias", "query.weight", "query.bias",
                                      "key.weight", "key.bias", "value.weight", "value.bias",
                                      "out.weight", "out.bias", "ln2.weight",   "ln2.bias",
                                      "up.weight",  "up.bias",  "down.weight",  "down.bias"};
  EXPECT_EQ(names(block), want);
  for (const nn::NamedTensor& p : block.parameters()) {
    EXPECT_TRUE(p.tensor.requires_grad()) << p.name;
    EXPECT_TRUE(p.tensor.is_leaf()) << p.name;
  }
}

// One tensor registered under two names (a tied weight) is one parameter, listed under its
// first name as torch lists it, and an optimizer takes the list.
class TiedWeights : public nn::Module {
 public:
  explicit TiedWeights(Stream& s) {
    const Tensor shared = ones({2, 2}, DType::f32, s);
    register_parameter("embedding", shared);
    register_parameter("projection", shared);
  }
  Tensor forward(const Tensor& x, Stream&) override { return x; }
};

TEST_F(NnModules, ATiedWeightIsOneParameter) {
  TiedWeights tied(s);
  EXPECT_EQ(names(tied), (std::vector<std::string>{"embedding"}));
  optim::SGD sgd(tied.parameters(), {.lr = 0.1});
  EXPECT_EQ(sgd.parameters().size(), 1u);
}

TEST_F(NnModules, LinearAndEmbeddingAgreeWithLoops) {
  nn::Linear linear(3, 2, true, 7, s);
  const std::vector<float> w = linear.weight().detach().to_vector<float>(s);
  const std::vector<float> b = linear.bias()->detach().to_vector<float>(s);
  // PyTorch's initialisation bound, 1 / sqrt(in_features).
  for (float v : w) EXPECT_LE(std::fabs(v), 1 / std::sqrt(3.0f));
  const std::vector<float> x{1, -2, 0.5f, 3, 1, -1};
  const std::vector<float> y = linear.forward(from_vector(x, {2, 3}, s), s).to_vector<float>(s);
  for (int n = 0; n < 2; ++n)
    for (int o = 0; o < 2; ++o) {
      float want = b[o];
      for (int i = 0; i < 3; ++i) want += x[n * 3 + i] * w[o * 3 + i];
      EXPECT_NEAR(y[n * 2 + o], want, 1e-5);
    }
  nn::Embedding table(5, 3, 2, s);
  const std::vector<float> rows = table.weight().detach().to_vector<float>(s);
  const std::vector<float> picked =
      table.forward(from_vector<int64_t>({4, 0, 4}, {3}, s), s).to_vector<float>(s);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(picked[i], rows[12 + i]);
    EXPECT_EQ(picked[3 + i], rows[i]);
  }
}

TEST_F(NnModules, DropoutOnlyWhileTraining) {
  nn::Sequential net;
  net.add(std::make_shared<nn::Dropout>(0.5, 3));
  const Tensor x = ones({64}, DType::f32, s);
  const std::vector<float> trained = net.forward(x, s).to_vector<float>(s);
  int zeros = 0;
  for (float v : trained) {
    EXPECT_TRUE(v == 0 || v == 2) << v;
    zeros += v == 0;
  }
  EXPECT_GT(zeros, 10);
  EXPECT_LT(zeros, 54);
  EXPECT_EQ(net.extra_state().at("0.calls"), "1");
  for (const char* bad : {"-1", " 5", "+5", "x"})  // stoull alone wrapped "-1" to 2^64 - 1
    expect_error(
        [&] {
          net.load_extra_state({{"0.calls", bad}});
        },
        ErrorCode::InvalidArgument, {"saved call count", bad});
  EXPECT_EQ(net.extra_state().at("0.calls"), "1");
  net.train(false);
  EXPECT_EQ(net.forward(x, s).to_vector<float>(s), std::vector<float>(64, 1));
  expect_error([] { nn::Dropout(1.5, 0); }, ErrorCode::InvalidArgument, {"Dropout", "p 1.5"});
}

TEST_F(NnModules, ATransformerBlocksGradientReachesEveryParameter) {
  nn::TransformerBlock block({.dim = 8, .heads = 2, .hidden = 16, .causal = true}, 5, s);
  const Tensor x = normal({2, 5, 8}, DType::f32, 9, s);
  const Tensor y = block.forward(x, s);
  EXPECT_EQ(y.shape(), (Shape{2, 5, 8}));
  sum(mul(y, y, s), {}, false, s).backward(s);
  for (const nn::NamedTensor& p : block.parameters()) {
    const Tensor g = p.tensor.grad();
    ASSERT_TRUE(g.defined()) << p.name;
    double magnitude = 0;
    for (float v : g.to_vector<float>(s)) {
      ASSERT_TRUE(std::isfinite(v)) << p.name;
      magnitude += std::fabs(v);
    }
    EXPECT_GT(magnitude, 0) << p.name;
  }
  // Causal: the first position's output depends on the first position's input alone.
  Tensor probe = x.detach();
  probe.requires_grad_();
  block.zero_grad();
  sum(block.forward(probe, s).slice(1, 0, 1), {}, false, s).backward(s);
  const std::vector<float> g = probe.grad().to_vector<float>(s);
  for (int n = 0; n < 2; ++n)
    for (int t = 1; t < 5; ++t)
      for (int d = 0; d < 8; ++d) EXPECT_EQ(g[(n * 5 + t) * 8 + d], 0) << n << "," << t;
}

TEST_F(NnModules, ToMovesEveryParameterAsALeaf) {
  register_far_backend();
  const Device far = device("far:0");
  auto mlp = nn::make_mlp({4, 8, 3}, 1, s);
  const std::vector<float> before = mlp->parameter("0.weight").detach().to_vector<float>(s);
  mlp->to(far, s);
  s.synchronize();
  for (const nn::NamedTensor& p : mlp->parameters()) {
    EXPECT_EQ(p.tensor.device(), far) << p.name;
    EXPECT_TRUE(p.tensor.is_leaf() && p.tensor.requires_grad()) << p.name;
  }
  EXPECT_EQ(mlp->parameter("0.weight").to(cpu, s).to_vector<float>(s), before);
}

// to() moved each slot of a tied weight on its own: two leaves, trained apart, both listed.
TEST_F(NnModules, ToKeepsATiedWeightOneLeaf) {
  register_far_backend();
  TiedWeights tied(s);
  nn::Sequential seq;  // tied across children, as in a language model's embedding and head
  auto a = seq.add(std::make_shared<nn::Linear>(4, 4, false, 1, s));
  auto b = seq.add(std::make_shared<nn::Linear>(4, 4, false, 2, s));
  b->weight() = a->weight();
  for (const Device& to : {device("far:0"), cpu}) {
    tied.to(to, s);
    seq.to(to, s);
    s.synchronize();
    EXPECT_EQ(names(tied), (std::vector<std::string>{"embedding"}));
    EXPECT_EQ(names(seq), (std::vector<std::string>{"0.weight"}));
    EXPECT_EQ(a->weight().storage().impl(), b->weight().storage().impl());
  }
  // Both names reach one leaf: d/dw sum(w * w) = 2w, accumulated into each slot alike.
  const Tensor& embedding = tied.parameter("embedding");
  const Tensor& projection = tied.parameter("projection");
  ASSERT_TRUE(embedding.is_leaf() && embedding.requires_grad());
  sum(mul(embedding, projection, s), {}, false, s).backward(s);
  EXPECT_EQ(embedding.grad().to_vector<float>(s), std::vector<float>(4, 2));
  EXPECT_EQ(projection.grad().to_vector<float>(s), std::vector<float>(4, 2));
  // A slot holding another view of a tied weight cannot follow it: refused, nothing moved
  // (it became a leaf of its own, untied).
  nn::Sequential transposed;
  auto c = transposed.add(std::make_shared<nn::Linear>(4, 3, false, 1, s));
  auto d = transposed.add(std::make_shared<nn::Linear>(3, 4, false, 2, s));
  d->weight() = c->weight().transpose(0, 1);
  expect_error([&] { transposed.to(device("far:0"), s); }, ErrorCode::InvalidArgument,
               {"Module::to: '1.weight'", "another view of '0.weight''s memory",
                "tie them again after to()"});
  EXPECT_EQ(c->weight().device(), cpu);
  EXPECT_EQ(d->weight().device(), cpu);
}

// A frozen parameter made zero_grad() throw (set_grad of a tensor that does not require grad)
// and to() made it require grad again.
TEST_F(NnModules, AFrozenParameterStaysFrozen) {
  register_far_backend();
  auto mlp = nn::make_mlp({3, 4, 2}, 1, s);
  mlp->parameter("0.weight").requires_grad_(false);
  mlp->zero_grad();
  mlp->to(device("far:0"), s);
  s.synchronize();
  for (const nn::NamedTensor& p : mlp->parameters())
    EXPECT_EQ(p.tensor.requires_grad(), p.name != "0.weight") << p.name;
  mlp->zero_grad();
  EXPECT_EQ(mlp->parameter("0.bias").device(), device("far:0"));
  // Still a leaf, which an optimizer made after the moves takes (the documented order); once
  // thawed it trains. A move dropped its autograd state, and the optimizer refused it.
  EXPECT_NO_THROW(optim::SGD(mlp->parameters(), {}));
  mlp->to(cpu, s);
  optim::SGD sgd(mlp->parameters(), {.lr = 0.5});
  Tensor& weight = mlp->parameter("0.weight");
  EXPECT_FALSE(weight.requires_grad());
  const std::vector<float> before = weight.to_vector<float>(s);
  weight.requires_grad_();
  const Tensor x = ones({2, 3}, DType::f32, s);
  sum(mlp->forward(x, s), {}, false, s).backward(s);
  sgd.step(s);
  EXPECT_NE(weight.to_vector<float>(s), before);
}

}  // namespace
}  // namespace hal::test
