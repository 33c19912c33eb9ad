// hal's own GEMM (kernels/ops/gemm.kernel) on devices that compile portable kernels: its
// parameters (tile sizes, work-group shape, vector width), the defaults per kind of device, the
// candidates the tuner searches, and one launch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hal/backend.hpp"
#include "hal/stream.hpp"

namespace hal::ops {

struct GemmParams {
  // One item per work-group, straight from global memory (CPUs); else tiles staged in local
  // memory by a WG_M x WG_N work-group (GPUs).
  bool direct = true;
  uint32_t tile_m = 8, tile_n = 32, tile_k = 0, wg_m = 1, wg_n = 1, vec = 16;

  // "direct 8x32 v16", "tiled 64x64x16 wg16x16 v1": what the tuning cache stores.
  std::string text() const;
  static std::optional<GemmParams> parse(const std::string& text);
  bool operator==(const GemmParams&) const = default;
};

// Why `params` cannot run on `device` (work-group too large, local memory, vectors the dialect
// lacks there, sizes that do not divide), or nullopt when they can.
std::optional<std::string> unusable(const GemmParams& params, const DeviceInfo& device);

// What runs before any tuning: the parameters for the kind of device.
GemmParams default_gemm_params(const DeviceInfo& device);

// The tuner's search space for `device`, the default first; all usable.
std::vector<GemmParams> gemm_candidates(const DeviceInfo& device);

// The hash of gemm.kernel's source: part of the tuning cache's key, so that editing the kernel
// drops what was tuned for the old one.
uint64_t gemm_kernel_hash();

// The activations hal's GEMM kernel applies (gemm.kernel's EPI_* defines; GemmEpilogue).
inline constexpr std::string_view kGemmActivations[] = {"relu", "gelu", "tanh", "sigmoid", "silu"};

// C = op(A) * op(B) for each batch entry (GemmDesc), with `params`; f32, bf16, and f16 on OpenCL
// devices (Unsupported elsewhere), f32 sums; with the epilogue where given (InvalidArgument for
// an activation the kernel lacks).
void portable_gemm(const GemmDesc& gemm, const GemmParams& params, Stream& stream,
                   const GemmEpilogue& epilogue = {});

}  // namespace hal::ops
