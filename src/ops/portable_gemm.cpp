#include "ops/portable_gemm.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "core/embedded_kernels.hpp"
#include "core/hash.hpp"
#include "core/program_kernels.hpp"
#include "hal/error.hpp"

namespace hal::ops {
namespace {

bool opencl(const DeviceInfo& device) { return device.backend() == "opencl"; }

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

std::string value_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "float";
    case DType::f16:
      return "half";
    case DType::bf16:
      return "ushort";
    default:
      throw Error(ErrorCode::Unsupported, "hal's GEMM kernel: dtype " +
                                              std::string(to_string(dtype)) +
                                              " (it takes f32, f16 and bf16)");
  }
}

std::vector<std::string> defines_of(const GemmDesc& gemm, const GemmParams& p,
                                    const GemmEpilogue& epilogue) {
  std::vector<std::string> defines{
      "VALUE_T=" + value_type(gemm.dtype), "TILE_M=" + std::to_string(p.tile_m),
      "TILE_N=" + std::to_string(p.tile_n), "VEC=" + std::to_string(p.vec)};
  if (p.direct) {
    defines.emplace_back("DIRECT");
  } else {
    defines.push_back("TILE_K=" + std::to_string(p.tile_k));
    defines.push_back("WG_M=" + std::to_string(p.wg_m));
    defines.push_back("WG_N=" + std::to_string(p.wg_n));
  }
  if (gemm.dtype == DType::f16) defines.emplace_back("T_F16");
  if (gemm.dtype == DType::bf16) defines.emplace_back("T_BF16");
  if (gemm.a.transposed) defines.emplace_back("TRANS_A");
  if (gemm.b.transposed) defines.emplace_back("TRANS_B");
  if (epilogue.bias) defines.emplace_back("EPI_BIAS");
  if (!epilogue.activation.empty()) {
    std::string define = "EPI_";
    for (char c : epilogue.activation) define += static_cast<char>(std::toupper(c));
    defines.push_back(std::move(define));
  }
  return defines;
}

}  // namespace

std::string GemmParams::text() const {
  char text[96];
  if (direct)
    std::snprintf(text, sizeof text, "direct %ux%u v%u", tile_m, tile_n, vec);
  else
    std::snprintf(text, sizeof text, "tiled %ux%ux%u wg%ux%u v%u", tile_m, tile_n, tile_k, wg_m,
                  wg_n, vec);
  return text;
}

std::optional<GemmParams> GemmParams::parse(const std::string& text) {
  GemmParams p;
  char tail = 0;
  if (std::sscanf(text.c_str(), "direct %ux%u v%u%c", &p.tile_m, &p.tile_n, &p.vec, &tail) == 3) {
    p.direct = true;
    p.tile_k = 0;
    p.wg_m = p.wg_n = 1;
    return p;
  }
  if (std::sscanf(text.c_str(), "tiled %ux%ux%u wg%ux%u v%u%c", &p.tile_m, &p.tile_n, &p.tile_k,
                  &p.wg_m, &p.wg_n, &p.vec, &tail) == 6) {
    p.direct = false;
    return p;
  }
  return std::nullopt;
}

std::optional<std::string> unusable(const GemmParams& p, const DeviceInfo& device) {
  const auto power_of_two = [](uint32_t v) { return v > 0 && (v & (v - 1)) == 0; };
  if (p.tile_m == 0 || p.tile_n == 0 || p.wg_m == 0 || p.wg_n == 0 || !power_of_two(p.vec) ||
      p.vec > 16)
    return "tile sizes and work-group sizes must be positive, the vector width 1 to 16, a "
           "power of two";
  if (p.vec > 1 && !opencl(device)) return "vector widths above 1 need OpenCL's vector types";
  if (p.tile_m % p.wg_m != 0 || p.tile_n % p.wg_n != 0 || (p.tile_n / p.wg_n) % p.vec != 0)
    return "the tile must divide by the work-group shape, the item's columns by the vector width";
  if (p.tile_m * p.tile_n / (p.wg_m * p.wg_n) > 512) return "more than 512 sums per item";
  if (!p.direct) {
    if (p.tile_k == 0) return "a tiled kernel needs a tile depth";
    if (p.wg_m * p.wg_n > device.limits.max_work_group_size)
      return "a work-group of " + std::to_string(p.wg_m * p.wg_n) + " items, more than " +
             device.id + " runs (" + std::to_string(device.limits.max_work_group_size) + ")";
    const uint64_t local = uint64_t{4} * p.tile_k * (p.tile_m + p.tile_n);
    if (device.limits.max_shared_memory_bytes > 0 && local > device.limits.max_shared_memory_bytes)
      return std::to_string(local) + " bytes of local memory, more than " + device.id + " has";
  }
  return std::nullopt;
}

GemmParams default_gemm_params(const DeviceInfo& device) {
  if (device.kind == DeviceKind::cpu && opencl(device)) return GemmParams{};  // direct 8x32 v16
  return GemmParams{false, 64, 64, 16, 16, 16, 1};
}

std::vector<GemmParams> gemm_candidates(const DeviceInfo& device) {
  std::vector<GemmParams> out{default_gemm_params(device)};
  auto add = [&](const GemmParams& p) {
    if (!unusable(p, device) && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  };
  const bool cpu = device.kind == DeviceKind::cpu;
  // Direct blocks first on CPUs: the rows and columns one item keeps in registers.
  if (cpu && opencl(device))
    for (uint32_t vec : {16u, 8u})
      for (uint32_t tile_n : {16u, 32u, 64u})
        for (uint32_t tile_m : {4u, 6u, 8u, 12u, 16u}) add({true, tile_m, tile_n, 0, 1, 1, vec});
  for (uint32_t tile : {64u, 128u, 32u})
    for (uint32_t tile_k : {16u, 8u, 32u})
      for (uint32_t wg : {16u, 8u})
        for (uint32_t vec : {1u, 4u, 2u}) add({false, tile, tile, tile_k, wg, wg, vec});
  if (!cpu || !opencl(device))
    for (uint32_t vec : {1u, 4u})
      for (uint32_t tile_m : {4u, 8u}) add({true, tile_m, 32, 0, 1, 1, vec});
  return out;
}

uint64_t gemm_kernel_hash() {
  static const uint64_t hash = detail::fnv1a_64(embedded_kernel("ops/gemm"));
  return hash;
}

void portable_gemm(const GemmDesc& gemm, const GemmParams& p, Stream& stream,
                   const GemmEpilogue& epilogue) {
  const DeviceInfo& info = stream.device().info();
  if (auto why = unusable(p, info))
    throw Error(ErrorCode::InvalidArgument,
                "hal's GEMM kernel with " + p.text() + " on " + info.id + ": " + *why);
  if (gemm.dtype == DType::f16 && !opencl(info))
    throw Error(ErrorCode::Unsupported,
                "hal's GEMM kernel: f16 on " + info.id +
                    " (the portable dialect has half on OpenCL only; the device's BLAS multiplies "
                    "f16)");
  if (!epilogue.activation.empty() &&
      std::find(std::begin(kGemmActivations), std::end(kGemmActivations), epilogue.activation) ==
          std::end(kGemmActivations))
    throw Error(ErrorCode::InvalidArgument, "hal's GEMM kernel: no epilogue activation '" +
                                                epilogue.activation +
                                                "' (it has relu, gelu, tanh, sigmoid and silu)");
  const Kernel kernel =
      detail::compile_program(stream.device(), "ops/gemm", "gemm", defines_of(gemm, p, epilogue));
  const auto m = static_cast<uint64_t>(gemm.m), n = static_cast<uint64_t>(gemm.n);
  LaunchConfig config;
  if (p.direct) {
    config.global = {ceil_div(m, p.tile_m), ceil_div(n, p.tile_n),
                     static_cast<uint64_t>(gemm.batch)};
    config.local = {1, 1, 1};
  } else {
    config.global = {ceil_div(n, p.tile_n) * p.wg_n, ceil_div(m, p.tile_m) * p.wg_m,
                     static_cast<uint64_t>(gemm.batch)};
    config.local = {p.wg_n, p.wg_m, 1};
  }
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  stream.launch(
      kernel, config,
      {Buffer(gemm.c.buffer), Buffer(gemm.a.buffer), Buffer(gemm.b.buffer), gemm.c.offset,
       gemm.a.offset, gemm.b.offset, u(gemm.m), u(gemm.n), u(gemm.k), u(gemm.c.ld), u(gemm.a.ld),
       u(gemm.b.ld), u(gemm.c.batch_stride), u(gemm.a.batch_stride), u(gemm.b.batch_stride),
       // Without a bias the kernel reads none: C stands in for the argument.
       Buffer(epilogue.bias ? epilogue.bias : gemm.c.buffer), epilogue.bias_offset});
}

}  // namespace hal::ops
