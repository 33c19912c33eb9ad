// The layers: Linear, Embedding, LayerNorm, Conv2d, Dropout, Sequential.
#include <cmath>

#include "hal/error.hpp"
#include "hal/nn.hpp"

namespace hal::nn {
namespace {

// U(-bound, bound), PyTorch's default for a layer with `fan_in` inputs per output.
Tensor fan_in_uniform(const Shape& shape, int64_t fan_in, uint64_t seed, Stream& s) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(fan_in, 1)));
  return uniform(shape, DType::f32, seed, s, -bound, bound);
}

// A second stream of draws from one seed (bias after weight).
uint64_t next_seed(uint64_t seed, uint64_t k) { return seed * 0x9E3779B97F4A7C15ull + k + 1; }

void check_positive(const char* layer, std::initializer_list<int64_t> sizes) {
  for (int64_t size : sizes)
    if (size <= 0)
      throw Error(ErrorCode::InvalidArgument,
                  std::string(layer) + ": sizes must be positive, got " + std::to_string(size));
}

}  // namespace

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, uint64_t seed,
               Stream& stream) {
  check_positive("Linear", {in_features, out_features});
  weight_ = &register_parameter(
      "weight", fan_in_uniform({out_features, in_features}, in_features, seed, stream));
  if (bias)
    bias_ = &register_parameter(
        "bias", fan_in_uniform({out_features}, in_features, next_seed(seed, 0), stream));
}

Tensor Linear::forward(const Tensor& x, Stream& stream) { return forward(x, "", stream); }

Tensor Linear::forward(const Tensor& x, const std::string& activation, Stream& stream) {
  const Tensor weight_t = weight_->transpose(0, 1);
  // A bias of another dtype than the product's (parameters cast apart) is added as an op, which
  // promotes as add does; the epilogue takes the product's dtype only.
  if (bias_ && bias_->dtype() != promote_types(x.dtype(), weight_->dtype())) {
    return activate(add(matmul(x, weight_t, stream), *bias_, stream), activation, stream);
  }
  return matmul(x, weight_t, {bias_ ? *bias_ : Tensor(), activation}, stream);
}

Embedding::Embedding(int64_t num_embeddings, int64_t dim, uint64_t seed, Stream& stream) {
  check_positive("Embedding", {num_embeddings, dim});
  weight_ = &register_parameter("weight", normal({num_embeddings, dim}, DType::f32, seed, stream));
}

Tensor Embedding::forward(const Tensor& indices, Stream& stream) {
  return embedding(*weight_, indices, stream);
}

LayerNorm::LayerNorm(Shape shape, double eps, Stream& stream)
    : shape_(std::move(shape)), eps_(eps) {
  weight_ = &register_parameter("weight", ones(shape_, DType::f32, stream));
  bias_ = &register_parameter("bias", zeros(shape_, DType::f32, stream));
}

Tensor LayerNorm::forward(const Tensor& x, Stream& stream) {
  return layer_norm(x, shape_, *weight_, *bias_, eps_, stream);
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel,
               const Conv2dOptions& options, uint64_t seed, Stream& stream)
    : options_(options) {
  check_positive("Conv2d", {in_channels, out_channels, kernel, options.groups});
  if (in_channels % options.groups != 0 || out_channels % options.groups != 0)
    throw Error(ErrorCode::InvalidArgument, "Conv2d: groups " + std::to_string(options.groups) +
                                                " does not divide the channels");
  const int64_t fan_in = in_channels / options.groups * kernel * kernel;
  weight_ = &register_parameter(
      "weight", fan_in_uniform({out_channels, in_channels / options.groups, kernel, kernel}, fan_in,
                               seed, stream));
  if (options.bias)
    bias_ = &register_parameter("bias",
                                fan_in_uniform({out_channels}, fan_in, next_seed(seed, 0), stream));
}

Tensor Conv2d::forward(const Tensor& x, Stream& stream) {
  ConvOptions o;
  o.strides = {options_.stride, options_.stride};
  o.dilations = {options_.dilation, options_.dilation};
  o.pads_before = {options_.padding, options_.padding};
  o.pads_after = o.pads_before;
  o.groups = options_.groups;
  return conv(x, *weight_, bias_ ? *bias_ : Tensor(), o, stream);
}

Dropout::Dropout(double p, uint64_t seed) : p_(p), seed_(seed) {
  if (!(p >= 0 && p <= 1))
    throw Error(ErrorCode::InvalidArgument,
                "Dropout: p " + std::to_string(p) + " is not in [0, 1]");
}

Tensor Dropout::forward(const Tensor& x, Stream& stream) {
  if (!training() || p_ == 0) return x;
  return dropout(x, p_, next_seed(seed_, calls_++), stream);
}

std::map<std::string, std::string> Dropout::own_extra_state() const {
  return {{"calls", std::to_string(calls_)}};
}

void Dropout::load_own_extra_state(const std::map<std::string, std::string>& state) {
  const auto found = state.find("calls");
  if (found == state.end()) return;
  try {
    // Digits only: stoull takes a sign or spaces ("-1" wraps to 2^64 - 1).
    if (found->second.empty() || found->second.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("not digits");
    size_t used = 0;
    calls_ = std::stoull(found->second, &used);
    if (used != found->second.size()) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw Error(ErrorCode::InvalidArgument,
                "Dropout: the saved call count '" + found->second + "' is not a number");
  }
}

Tensor Sequential::forward(const Tensor& x, Stream& stream) {
  Tensor y = x;
  for (const auto& layer : layers_) y = layer->forward(y, stream);
  return y;
}

std::shared_ptr<Sequential> make_mlp(const std::vector<int64_t>& sizes, uint64_t seed,
                                     Stream& stream) {
  if (sizes.size() < 2)
    throw Error(ErrorCode::InvalidArgument, "make_mlp: needs at least an input and output size");
  auto mlp = std::make_shared<Sequential>();
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    if (i > 0) mlp->add(std::make_shared<ReLU>());
    mlp->add(
        std::make_shared<Linear>(sizes[i], sizes[i + 1], true, next_seed(seed, 2 * i + 1), stream));
  }
  return mlp;
}

}  // namespace hal::nn
