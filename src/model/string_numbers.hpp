// Numbers as ONNX's Cast writes them as strings and reads them back. ONNX's reference is
// NumPy's astype(str) and astype(<number>), whose text its test data holds: a float in the
// fewest digits that read back to the same value of its own dtype, positional from 1e-4 up to
// 1e16 ("0.9767611", "100000.0") and scientific outside ("1e-05", "1.5e+16"), "nan", "inf",
// "-inf"; integers in decimal; bools "True" and "False".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hal/stream.hpp"
#include "hal/string_tensor.hpp"
#include "hal/tensor.hpp"

namespace hal::model {

// One value of a floating dtype (f32, f64, f16, bf16: `value` holds it exactly) as text.
std::string format_float(double value, DType dtype);

// Every element of `x` as text, row-major; waits for `stream`.
std::vector<std::string> format_numbers(const Tensor& x, Stream& stream);

// Each string read as a number of `dtype`: plain or scientific notation, surrounding spaces
// and a leading '+' allowed, "NaN", "INF", "+INF", "-INF" in any case; for an integer dtype a
// fraction is cut off ("100.5" is 100); for bool a number (non-zero is true) or "true"/"false".
// InvalidArgument naming the element for a string that is no number or one the dtype cannot
// hold. The tensor is made on `stream`'s device.
Tensor parse_numbers(const StringTensor& x, DType dtype, Stream& stream);

}  // namespace hal::model
