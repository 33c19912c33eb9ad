// NumPy's .npy files (format versions 1 to 3) as tensors: what `hal run` reads its inputs from
// and writes its outputs to, and what np.save / np.load exchange with Python. Part of hal_model.
#pragma once

#include <filesystem>

#include "hal/tensor.hpp"

namespace hal {

// Reads an array of f32, f64, f16, i8, u8, i32, i64 or bool (little-endian; Fortran order is
// transposed to row-major) into a tensor on `stream`'s device. InvalidArgument naming the file
// for a missing file, a header that is not NumPy's, or data of the wrong size; Unsupported for a
// dtype hal has not (naming NumPy's descr, e.g. '<c8') or big-endian data.
Tensor read_npy(const std::filesystem::path& path, Stream& stream);

// Writes `tensor` as a version 1.0 .npy file (bf16, which NumPy has not, as f32). Waits for
// `stream`. InvalidArgument naming the file when it cannot be written.
void write_npy(const std::filesystem::path& path, const Tensor& tensor, Stream& stream);

}  // namespace hal
