// Random tensors from Philox4x32-10: the CPU runs philox.hpp in a host kernel on its thread
// pool, devices with portable kernels run kernels/tensor/random.kernel, and any other device
// gets the CPU's numbers uploaded. The draws are the same everywhere for the same seed.
#include <cmath>
#include <memory>

#include "core/program_kernels.hpp"
#include "hal/error.hpp"
#include "hal/tensor.hpp"
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

template <class T>
Tensor random(Distribution distribution, const Shape& shape, DType dtype, uint64_t seed, double a,
              double b, Stream& stream) {
  const Device device = stream.device();
  Tensor out = empty(shape, dtype, device);
  const auto n = static_cast<uint64_t>(out.numel());
  if (n == 0) return out;
  const uint64_t blocks = (n + kPerBlock<T> - 1) / kPerBlock<T>;
  const DeviceInfo& info = device.info();
  if (info.has_feature(feature::kHostKernels))
    on_host_threads<T>(distribution, seed, T(a), T(b), out, blocks, stream);
  else if (info.has_feature(feature::kPortableKernels) &&
           (std::is_same_v<T, float> || info.has_feature(feature::kFp64)))
    with_kernel<T>(distribution, seed, T(a), T(b), out, blocks, stream);
  else
    through_host<T>(distribution, seed, T(a), T(b), out, blocks, stream);
  return out;
}

Tensor random(Distribution distribution, const char* operation, const Shape& shape, DType dtype,
              uint64_t seed, double a, double b, Stream& stream) {
  if (!std::isfinite(a) || !std::isfinite(b))
    throw Error(ErrorCode::InvalidArgument, std::string(operation) + " of " + to_string(shape) +
                                                ": the parameters " + std::to_string(a) + " and " +
                                                std::to_string(b) + " must be finite");
  tensor::check_dtype(dtype, [&] { return std::string(operation) + " of " + to_string(shape); });
  switch (dtype) {
    case DType::f32:
      return random<float>(distribution, shape, dtype, seed, a, b, stream);
    case DType::f64:
      return random<double>(distribution, shape, dtype, seed, a, b, stream);
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
                                                std::to_string(low) + " is not below high " +
                                                std::to_string(high));
  return random(Distribution::uniform, "uniform", shape, dtype, seed, low, high - low, stream);
}

Tensor normal(const Shape& shape, DType dtype, uint64_t seed, Stream& stream, double mean,
              double stddev) {
  if (!(stddev >= 0))
    throw Error(ErrorCode::InvalidArgument, "normal of " + to_string(shape) +
                                                ": the standard deviation " +
                                                std::to_string(stddev) + " is negative");
  return random(Distribution::normal, "normal", shape, dtype, seed, mean, stddev, stream);
}

}  // namespace hal
