// max_pool and avg_pool on cpu:0 against a loop over every window position written from the
// definition: 1-, 2- and 3-D, strides, dilations, asymmetric padding, ceil mode, windows that
// reach into the padding, count_include_pad, and NaN (a window holding one gives NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hal/hal.hpp"
#include "hal/ops.hpp"

namespace hal {
namespace {

struct Case {
  std::string name;
  Shape shape;  // [N, C, spatial...]
  PoolOptions options;
};

// Output size of one dimension, as PyTorch's: floor or ceil, without a last window that would
// start in the end padding.
int64_t out_size(int64_t size, int64_t kernel, int64_t stride, int64_t dilation, int64_t before,
                 int64_t after, bool ceil_mode) {
  const int64_t span = dilation * (kernel - 1) + 1;
  const int64_t room = size + before + after - span;
  int64_t out = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= size + before) --out;
  return out;
}

std::vector<double> reference(bool max, const std::vector<float>& x, const Case& c, Shape& shape) {
  const size_t spatial = c.shape.size() - 2;
  auto pick = [](const std::vector<int64_t>& v, size_t i, int64_t fallback) {
    return v.empty() ? fallback : v[i];
  };
  std::vector<int64_t> size(3, 1), kernel(3, 1), stride(3, 1), dilation(3, 1), before(3, 0),
      after(3, 0), out(3, 1);
  for (size_t i = 0; i < spatial; ++i) {
    const size_t d = 3 - spatial + i;
    size[d] = c.shape[i + 2];
    kernel[d] = c.options.kernel[i];
    stride[d] = pick(c.options.strides, i, kernel[d]);
    dilation[d] = pick(c.options.dilations, i, 1);
    before[d] = pick(c.options.pads_before, i, 0);
    after[d] = pick(c.options.pads_after, i, 0);
    out[d] = out_size(size[d], kernel[d], stride[d], dilation[d], before[d], after[d],
                      c.options.ceil_mode);
  }
  shape = {c.shape[0], c.shape[1]};
  for (size_t i = 0; i < spatial; ++i) shape.push_back(out[3 - spatial + i]);
  const int64_t planes = c.shape[0] * c.shape[1];
  std::vector<double> y;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t a = 0; a < out[0]; ++a)
      for (int64_t b = 0; b < out[1]; ++b)
        for (int64_t e = 0; e < out[2]; ++e) {
          double best = -std::numeric_limits<double>::infinity(), total = 0;
          bool nan = false;
          int64_t valid = 0, covered = 0;
          for (int64_t i = 0; i < kernel[0]; ++i)
            for (int64_t j = 0; j < kernel[1]; ++j)
              for (int64_t k = 0; k < kernel[2]; ++k) {
                const int64_t at[3] = {a * stride[0] - before[0] + i * dilation[0],
                                       b * stride[1] - before[1] + j * dilation[1],
                                       e * stride[2] - before[2] + k * dilation[2]};
                bool inside = true, padded = true;
                for (int d = 0; d < 3; ++d) {
                  inside = inside && at[d] >= 0 && at[d] < size[d];
                  padded = padded && at[d] >= -before[d] && at[d] < size[d] + after[d];
                }
                covered += padded;
                if (!inside) continue;
                ++valid;
                const double v = x[static_cast<size_t>(
                    ((p * size[0] + at[0]) * size[1] + at[1]) * size[2] + at[2])];
                nan = nan || std::isnan(v);
                best = std::max(best, v);
                total += v;
              }
          if (max)
            y.push_back(nan ? std::nan("") : best);
          else
            y.push_back(total / static_cast<double>(c.options.count_include_pad ? covered : valid));
        }
  return y;
}

TEST(CpuPool, MaxAndAveragePoolingMatchTheDefinition) {
  const std::vector<Case> cases = {
      {"resnet stem 3x3/2 pad 1", {1, 3, 12, 12}, {{3, 3}, {2, 2}, {}, {1, 1}, {1, 1}}},
      {"2x2/2", {2, 2, 8, 6}, {{2, 2}, {}, {}, {}, {}}},
      {"asymmetric pads, ceil", {1, 2, 7, 9}, {{3, 2}, {2, 3}, {}, {1, 0}, {0, 1}, true}},
      {"dilated", {1, 1, 9, 9}, {{2, 3}, {1, 2}, {2, 2}, {1, 0}, {0, 2}}},
      {"include pad", {1, 2, 5, 5}, {{3, 3}, {2, 2}, {}, {1, 1}, {1, 1}, false, true}},
      {"1-D", {2, 3, 11}, {{4}, {3}, {}, {2}, {1}}},
      {"3-D", {1, 2, 4, 5, 6}, {{2, 3, 2}, {2, 1, 2}, {}, {0, 1, 1}, {1, 1, 0}, true}},
      {"padding wider than the window's reach", {1, 1, 3, 3}, {{2, 2}, {1, 1}, {}, {1, 1}, {1, 1}}},
  };
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (const Case& c : cases)
    for (bool max : {true, false}) {
      if (!max && !c.options.dilations.empty()) continue;  // dilation is max pooling's only
      SCOPED_TRACE(c.name + (max ? ", max" : ", average"));
      std::vector<float> x(static_cast<size_t>(numel(c.shape)));
      for (float& v : x) v = normal(rng);
      if (max) x[x.size() / 3] = std::nanf("");
      Shape want_shape;
      const std::vector<double> want = reference(max, x, c, want_shape);
      const Tensor input = from_vector(x, c.shape, stream);
      const Tensor y =
          max ? max_pool(input, c.options, stream) : avg_pool(input, c.options, stream);
      ASSERT_EQ(y.shape(), want_shape);
      const std::vector<float> got = y.to_vector<float>(stream);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
          continue;
        }
        EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << "element " << i;
      }
    }
}

}  // namespace
}  // namespace hal
