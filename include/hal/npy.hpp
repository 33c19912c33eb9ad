// NumPy's .npy files (format versions 1 to 3) as tensors: what `hal run` reads its inputs from
// and writes its outputs to, and what np.save / np.load exchange with Python. Part of hal_model.
#pragma once

#include <filesystem>

#include "hal/string_tensor.hpp"
#include "hal/tensor.hpp"

namespace hal {

// Reads an array of f32, f64, f16, i8, u8, i32, i64 or bool (little-endian; Fortran order is
// transposed to row-major) into a tensor on `stream`'s device. InvalidArgument naming the file
// for a missing file, a header that is not NumPy's, a shape of more elements than int64 counts,
// or data of the wrong size; Unsupported for a dtype hal has not (naming NumPy's descr, e.g.
// '<c8', or a structured dtype's list of fields; strings: read_npy_strings) or big-endian data.
Tensor read_npy(const std::filesystem::path& path, Stream& stream);

// What a numeric .npy file holds, from its header and its size alone (its elements are not
// read): for splitting a data set before reading it. Errors as read_npy's, the size too.
struct NpyInfo {
  DType dtype = DType::f32;
  Shape shape;
  bool fortran_order = false;
};
NpyInfo read_npy_info(const std::filesystem::path& path);

// Rows [begin, end) of axis 0 of a numeric .npy file; of a row-major file (NumPy's default) only
// their bytes are read. OutOfRange naming the file and its rows for a range outside them;
// InvalidArgument for a scalar; otherwise errors as read_npy's.
Tensor read_npy_rows(const std::filesystem::path& path, int64_t begin, int64_t end, Stream& stream);

// Writes `tensor` as a version 1.0 .npy file (bf16, which NumPy has not, as f32: exact, widened
// on the host, so on every device). Waits for `stream`. InvalidArgument naming the file when it
// cannot be written.
void write_npy(const std::filesystem::path& path, const Tensor& tensor, Stream& stream);

// Reads an array of NumPy strings, '<U<n>' (n UTF-32 code points each; '>U<n>' big-endian) or
// '|S<n>' (n bytes each), as a string tensor: UTF-8 text (bytes as they are), the trailing NULs
// NumPy pads with dropped. InvalidArgument naming the file as for read_npy, and for an array of
// numbers or a code point that is not Unicode.
StringTensor read_npy_strings(const std::filesystem::path& path);

// Writes `tensor` as '<U<n>', n the most code points of any element (at least 1).
// InvalidArgument naming the file (and the element) for a string that is not UTF-8, strings
// not as many as the shape's elements, or a file that cannot be written.
void write_npy(const std::filesystem::path& path, const StringTensor& tensor);

}  // namespace hal
