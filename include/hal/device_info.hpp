// DeviceInfo: what a device is and what it can do, as plain data.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hal/dtype.hpp"

namespace hal {

enum class DeviceKind : uint8_t { cpu, gpu, accelerator };
std::string_view to_string(DeviceKind kind) noexcept;

// How a figure was obtained, so that callers can tell a reading from a guess.
enum class Provenance : uint8_t { unknown, estimated, measured };
std::string_view to_string(Provenance provenance) noexcept;

struct MemoryFigure {
  uint64_t bytes = 0;
  Provenance provenance = Provenance::unknown;
};

struct CacheInfo {
  uint32_t level = 0;       // 1, 2, 3 ...
  std::string type;         // "data", "instruction" or "unified"
  uint64_t size_bytes = 0;  // of one instance
  uint32_t line_bytes = 0;
  uint32_t count = 0;  // instances in the device
};

// Peak figures worked out from a device's facts (CPU: cores x clock x FMA width; GPU: compute
// units x clock x FP32 lanes, memory clock x bus width; plugins: as the vendor states them).
// Upper bounds, never measured: calibration (hal/calibration.hpp) measures what a device
// reaches. 0 where a figure is unknown.
struct PeakFigures {
  double f32_gflops = 0;
  double bandwidth_gbps = 0;  // device memory, bytes read + written per second / 1e9
  double launch_latency_us = 0;
};

struct DeviceLimits {
  uint64_t max_allocation_bytes = 0;
  uint32_t max_work_group_size = 0;
  std::array<uint64_t, 3> max_work_group_dims{0, 0, 0};
  uint64_t max_shared_memory_bytes = 0;  // work-group shared (OpenCL local) memory
};

// Feature names shared across backends. Backends add their own (ISA extensions such as
// "avx2", driver extensions), all lower-case.
namespace feature {
inline constexpr std::string_view kFp16 = "fp16";
inline constexpr std::string_view kBf16 = "bf16";
inline constexpr std::string_view kFp64 = "fp64";
inline constexpr std::string_view kUnifiedMemory = "unified_memory";
inline constexpr std::string_view kPinnedHostMemory = "pinned_host_memory";
// The device runs kernels written as C++ callables (hal::host_kernel).
inline constexpr std::string_view kHostKernels = "host_kernels";
// The device compiles kernels written in hal's portable dialect (Device::compile).
inline constexpr std::string_view kPortableKernels = "portable_kernels";
// The device runs ops itself, without kernels (StreamImpl::run_builtin_op): elementwise binary
// and unary ops, reductions.
inline constexpr std::string_view kBuiltinBinary = "builtin_binary";
inline constexpr std::string_view kBuiltinUnary = "builtin_unary";
inline constexpr std::string_view kBuiltinReduce = "builtin_reduce";
inline constexpr std::string_view kBuiltinMatmul = "builtin_matmul";
// Streams capture their work into replayable graphs (Stream::begin_capture).
inline constexpr std::string_view kGraphs = "graphs";
}  // namespace feature

struct DeviceInfo {
  std::string id;    // "backend:index", e.g. "cpu:0"
  std::string uuid;  // stable across runs: 8-4-4-4-12 lower-case hex
  std::string name;
  std::string vendor;
  DeviceKind kind = DeviceKind::cpu;
  std::string architecture;    // "x86-64-v3", "sm_90", "gfx90a", ...
  std::string driver_version;  // of whatever drives the device (the kernel for the CPU)
  MemoryFigure memory_total;
  MemoryFigure memory_free;  // at discovery; Device::memory_free() reads it anew
  uint32_t compute_units = 0;
  uint32_t clock_mhz = 0;
  uint32_t numa_nodes = 0;
  std::vector<DType> dtypes;
  std::vector<std::string> features;  // sorted
  DeviceLimits limits;
  std::vector<CacheInfo> caches;
  PeakFigures peak;

  bool supports(DType dtype) const {
    return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
  }
  // A scan rather than a binary search of the sorted list: asked on every launch, and a
  // device has a dozen features or so, most of other lengths than the one asked for.
  bool has_feature(std::string_view feature_name) const {
    for (const std::string& each : features)
      if (each == feature_name) return true;
    return false;
  }
  std::string_view backend() const { return std::string_view(id).substr(0, id.find(':')); }
};

}  // namespace hal
