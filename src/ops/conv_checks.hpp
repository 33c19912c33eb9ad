// The argument checks conv and conv_transpose share, each an InvalidArgument led by "<op> of x
// with weights w: ", and how both hand their operands to a backend's ConvDesc.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hal/backend.hpp"
#include "hal/stream.hpp"
#include "hal/tensor.hpp"

namespace hal::ops {

[[noreturn]] void invalid_conv(std::string_view op, const Tensor& x, const Tensor& w,
                               const std::string& why);

// `values` (an attribute called `name`) for each of `spatial` dimensions: `fallback` where none
// are given; each in [low, 2^24].
std::vector<int64_t> conv_attribute(std::string_view op, const Tensor& x, const Tensor& w,
                                    std::vector<int64_t> values, size_t spatial, int64_t fallback,
                                    int64_t low, const char* name);

// x and w defined, on one device and the stream's, of one rank from 3 to 5; bias (may be
// undefined) on their device.
void check_conv_operands(std::string_view op, const Tensor& x, const Tensor& w, const Tensor& bias,
                         const Stream& stream);

// bias, where defined, is [features].
void check_conv_bias(std::string_view op, const Tensor& x, const Tensor& w, const Tensor& bias,
                     int64_t features);

// desc's buffers, offsets and shapes from x, w, bias (may be undefined) and y, each contiguous
// in desc's dtype.
void bind_conv_operands(ConvDesc& desc, const Tensor& x, const Tensor& w, const Tensor& bias,
                        const Tensor& y);

}  // namespace hal::ops
