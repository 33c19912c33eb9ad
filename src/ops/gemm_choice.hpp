// Per shape, who multiplies on a device with both a vendor BLAS and hal's own GEMM: what the
// tuning cache measured faster for the shape's class (or the nearest tuned class), else the
// default for the kind of device.
#pragma once

#include <string>

#include "hal/backend.hpp"
#include "ops/portable_gemm.hpp"

namespace hal::ops {

// "NN m2048 n2048 k2048": transposes of A and B, then sizes rounded up to powers of two.
std::string gemm_shape_class(const GemmDesc& gemm);

// "CLBlast", "cuBLAS": the BLAS the device's backend calls.
std::string vendor_blas(const DeviceInfo& device);

struct GemmChoice {
  bool own_kernel = false;  // hal's GEMM with `params`; else the vendor BLAS
  GemmParams params;
};
// Untuned devices: hal's kernel with its defaults on OpenCL CPUs (PoCL, where it measured 3-8x
// CLBlast), the vendor BLAS elsewhere; only f32 runs hal's kernel.
GemmChoice gemm_choice(const DeviceInfo& device, const GemmDesc& gemm);

// The matmul op's kernel on OpenCL and CUDA devices.
void chosen_gemm(const GemmDesc& gemm, Stream& stream);

}  // namespace hal::ops
