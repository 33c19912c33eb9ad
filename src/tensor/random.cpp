// Random tensors from Philox4x32-10: the CPU runs philox.hpp in a host kernel on its thread
// pool, devices with portable kernels run kernels/tensor/random.kernel, and any other device
// gets the CPU's numbers uploaded. The draws are the same everywhere for the same seed.
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "core/program_kernels.hpp"
#include "hal/error.hpp"
#include "hal/tensor.hpp"
#include "tensor/element_codec.hpp"
#include "tensor/extent.hpp"
#include "tensor/philox.hpp"

namespace hal {
namespace {

enum class Distribution { uniform, normal };

// Elements per counter block: four f32 draws, or two f64 values of two draws each.
template <class T>
constexpr uint64_t kPerBlock = std::is_same_v<T, double> ? 2 : 4;

template <class T>
T unit(const tensor::Philox4& d, int j) {
  if constexpr (std::is_same_v<T, double>)
    return tensor::unit_f64(d[2 * j], d[2 * j + 1]);
  else
    return tensor::unit_f32(d[j]);
}

// Blocks [first, last) into `out` (element 0 of the tensor at out[0]), as the kernel does.
template <class T>
void generate(Distribution distribution, uint64_t seed, T a, T b, uint64_t n, uint64_t first,
              uint64_t last, T* out) {
  constexpr T kTwoPi = std::is_same_v<T, double> ? T(6.283185307179586) : T(6.2831853f);
  for (uint64_t block = first; block < last; ++block) {
    const tensor::Philox4 d = tensor::philox_block(seed, block);
    const uint64_t base = block * kPerBlock<T>;
    if (distribution == Distribution::uniform) {
      for (uint64_t j = 0; j < kPerBlock<T> && base + j < n; ++j)
        out[base + j] = a + unit<T>(d, static_cast<int>(j)) * b;
      continue;
    }
    for (uint64_t pair = 0; pair < kPerBlock<T> / 2; ++pair) {
      const T u1 = T(1) - unit<T>(d, static_cast<int>(2 * pair));
      const T u2 = unit<T>(d, static_cast<int>(2 * pair + 1));
      const T radius = std::sqrt(T(-2) * std::log(u1));
      const T theta = kTwoPi * u2;
      const uint64_t at = base + 2 * pair;
      if (at < n) out[at] = a + b * radius * std::cos(theta);
      if (at + 1 < n) out[at + 1] = a + b * radius * std::sin(theta);
    }
  }
}

template <class T>
void on_host_threads(Distribution distribution, uint64_t seed, T a, T b, const Tensor& out,
                     uint64_t blocks, Stream& stream) {
  const auto n = static_cast<uint64_t>(out.numel());
  const Kernel kernel = host_kernel("random", [=](const KernelChunk& chunk) {
    generate<T>(distribution, seed, a, b, n, chunk.begin[0], chunk.end[0], chunk.args.ptr<T>(0));
  });
  stream.launch(kernel, LaunchConfig::linear(blocks), {out.storage()});
}

template <class T>
void with_kernel(Distribution distribution, uint64_t seed, T a, T b, const Tensor& out,
                 uint64_t blocks, Stream& stream) {
  std::vector<std::string> defines;
  if constexpr (std::is_same_v<T, double>) defines.emplace_back("OUT_F64");
  const char* name = distribution == Distribution::uniform ? "random_uniform" : "random_normal";
  const Kernel kernel = detail::compile_program(out.device(), "tensor/random", name, defines);
  stream.launch(kernel, LaunchConfig::linear(blocks),
                {out.storage(), static_cast<uint64_t>(out.numel()), static_cast<uint32_t>(seed),
                 static_cast<uint32_t>(seed >> 32), a, b});
}

template <class T>
void through_host(Distribution distribution, uint64_t seed, T a, T b, const Tensor& out,
                  uint64_t blocks, Stream& stream) {
  const auto n = static_cast<uint64_t>(out.numel());
  auto values = std::make_shared<std::vector<T>>(blocks * kPerBlock<T>);
  generate<T>(distribution, seed, a, b, n, 0, blocks, values->data());
  stream.copy_from_host(out.storage(), values->data(), out.nbytes());
  stream.keep_until_done(values);  // until the upload has run
}

// The range b for uniform draws a + u * b, u below 1 in steps of 2^-24 (f32) or 2^-53 (f64), that
// keeps every draw below `high`: rounded, a + u * b can reach high itself (1e6 + 0.97 is 1e6 + 1
// in f32). The largest u gives the largest draw, rounding being monotonic, whether a device fuses
// the multiply-add or not; the largest range that keeps it below is found among the bit
// patterns of the positive floats, which order them. std::nullopt where no range does: the
// nearest T to low is not below high, so no T lies in [low, high).
template <class T>
std::optional<T> range_below(T a, double low, double high) {
  using Bits = std::conditional_t<std::is_same_v<T, double>, uint64_t, uint32_t>;
  constexpr T kLargestUnit = T(1) - (std::is_same_v<T, double> ? T(0x1p-53) : T(0x1p-24));
  const auto below_high = [&](T range) {
    const T separate = a + kLargestUnit * range;
    const T fused = std::fma(kLargestUnit, range, a);
    return static_cast<double>(separate) < high && static_cast<double>(fused) < high;
  };
  const double wide = high - low;  // infinite where f32 cannot hold it
  const T range = wide > std::numeric_limits<T>::max() ? std::numeric_limits<T>::infinity()
                                                       : static_cast<T>(wide);
  if (below_high(range)) return range;
  if (!below_high(T(0))) return std::nullopt;
  Bits fits = 0, too_far = std::bit_cast<Bits>(range);
  while (too_far - fits > 1) {
    const Bits middle = fits + (too_far - fits) / 2;
    (below_high(std::bit_cast<T>(middle)) ? fits : too_far) = middle;
  }
  return std::bit_cast<T>(fits);
}

// `a` and `b` are low and high for uniform, mean and standard deviation for normal.
template <class T>
Tensor random(Distribution distribution, const char* operation, const Shape& shape, DType dtype,
              uint64_t seed, double a, double b, Stream& stream) {
  const T first = T(a);
  T second = T(b);
  if (distribution == Distribution::uniform) {
    const std::optional<T> range = range_below<T>(first, a, b);
    if (!range)
      throw Error(ErrorCode::InvalidArgument, std::string(operation) + " of " + to_string(shape) +
                                                  ": no " + std::string(to_string(dtype)) +
                                                  " value lies in [" + tensor::number_text(a) +
                                                  ", " + tensor::number_text(b) + ")");
    second = *range;
  }
  const Device device = stream.device();
  Tensor out = empty(shape, dtype, device);
  const auto n = static_cast<uint64_t>(out.numel());
  if (n == 0) return out;
  const uint64_t blocks = (n + kPerBlock<T> - 1) / kPerBlock<T>;
  const DeviceInfo& info = device.info();
  if (info.has_feature(feature::kHostKernels))
    on_host_threads<T>(distribution, seed, first, second, out, blocks, stream);
  else if (info.has_feature(feature::kPortableKernels) &&
           (std::is_same_v<T, float> || info.has_feature(feature::kFp64)))
    with_kernel<T>(distribution, seed, first, second, out, blocks, stream);
  else
    through_host<T>(distribution, seed, first, second, out, blocks, stream);
  return out;
}

Tensor random(Distribution distribution, const char* operation, const Shape& shape, DType dtype,
              uint64_t seed, double a, double b, Stream& stream) {
  if (!std::isfinite(a) || !std::isfinite(b))
    throw Error(ErrorCode::InvalidArgument,
                std::string(operation) + " of " + to_string(shape) + ": the parameters " +
                    tensor::number_text(a) + " and " + tensor::number_text(b) + " must be finite");
  tensor::check_dtype(dtype, [&] { return std::string(operation) + " of " + to_string(shape); });
  switch (dtype) {
    case DType::f32:
      return random<float>(distribution, operation, shape, dtype, seed, a, b, stream);
    case DType::f64:
      return random<double>(distribution, operation, shape, dtype, seed, a, b, stream);
    default:
      throw Error(ErrorCode::Unsupported,
                  std::string(operation) + " of " + to_string(shape) + " on " +
                      stream.device().id() + ": random numbers are made in f32 and f64, not " +
                      std::string(to_string(dtype)) + " (make f32 and cast)");
  }
}

}  // namespace

Tensor uniform(const Shape& shape, DType dtype, uint64_t seed, Stream& stream, double low,
               double high) {
  if (!(low < high))
    throw Error(ErrorCode::InvalidArgument, "uniform of " + to_string(shape) + ": low " +
                                                tensor::number_text(low) + " is not below high " +
                                                tensor::number_text(high));
  return random(Distribution::uniform, "uniform", shape, dtype, seed, low, high, stream);
}

Tensor normal(const Shape& shape, DType dtype, uint64_t seed, Stream& stream, double mean,
              double stddev) {
  if (!(stddev >= 0))
    throw Error(ErrorCode::InvalidArgument, "normal of " + to_string(shape) +
                                                ": the standard deviation " +
                                                tensor::number_text(stddev) + " is negative");
  return random(Distribution::normal, "normal", shape, dtype, seed, mean, stddev, stream);
}

}  // namespace hal
