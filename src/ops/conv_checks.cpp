#include "ops/conv_checks.hpp"

#include "hal/error.hpp"

namespace hal::ops {

void invalid_conv(std::string_view op, const Tensor& x, const Tensor& w, const std::string& why) {
  throw Error(ErrorCode::InvalidArgument, std::string(op) + " of " + x.describe() +
                                              " with weights " + w.describe() + ": " + why);
}

std::vector<int64_t> conv_attribute(std::string_view op, const Tensor& x, const Tensor& w,
                                    std::vector<int64_t> values, size_t spatial, int64_t fallback,
                                    int64_t low, const char* name) {
  if (values.empty()) values.assign(spatial, fallback);
  if (values.size() != spatial)
    invalid_conv(op, x, w,
                 std::string(name) + " " + to_string(values) + " has " +
                     std::to_string(values.size()) + " values for " + std::to_string(spatial) +
                     " spatial dimensions");
  constexpr int64_t kLimit = int64_t{1} << 24;
  for (int64_t v : values)
    if (v < low || v > kLimit)
      invalid_conv(op, x, w,
                   std::string(name) + " " + to_string(values) + " must lie in [" +
                       std::to_string(low) + ", " + std::to_string(kLimit) + "]");
  return values;
}

void check_conv_operands(std::string_view op, const Tensor& x, const Tensor& w, const Tensor& bias,
                         const Stream& stream) {
  if (!x.defined() || !w.defined())
    throw Error(ErrorCode::InvalidArgument, std::string(op) + " of an undefined tensor");
  for (const Tensor* t : {&w, &bias})
    if (t->defined() && !(t->device() == x.device()))
      invalid_conv(op, x, w,
                   "the tensors are on different devices (" + x.device().id() + " and " +
                       t->device().id() + "); copy one with to() first");
  if (!(stream.device() == x.device()))
    invalid_conv(op, x, w,
                 "on a stream of " + stream.device().id() + ": use a stream of " + x.device().id());
  if (x.dim() < 3 || x.dim() > 5)
    invalid_conv(op, x, w, "expects x of [N, C, D1] to [N, C, D1, D2, D3]");
  if (w.dim() != x.dim()) invalid_conv(op, x, w, "the weights' rank differs from x's");
}

void check_conv_bias(std::string_view op, const Tensor& x, const Tensor& w, const Tensor& bias,
                     int64_t features) {
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != features))
    invalid_conv(op, x, w,
                 "bias " + bias.describe() + " is not [" + std::to_string(features) + "]");
}

void bind_conv_operands(ConvDesc& desc, const Tensor& x, const Tensor& w, const Tensor& bias,
                        const Tensor& y) {
  desc.x = x.storage().impl();
  desc.x_offset = static_cast<uint64_t>(x.offset());
  desc.w = w.storage().impl();
  desc.w_offset = static_cast<uint64_t>(w.offset());
  if (bias.defined()) {
    desc.bias = bias.storage().impl();
    desc.bias_offset = static_cast<uint64_t>(bias.offset());
  }
  desc.y = y.storage().impl();
  desc.y_offset = static_cast<uint64_t>(y.offset());
  desc.x_shape = x.shape();
  desc.w_shape = w.shape();
  desc.y_shape = y.shape();
}

}  // namespace hal::ops
