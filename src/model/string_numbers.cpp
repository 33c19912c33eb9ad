#include "model/string_numbers.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <type_traits>

#include "core/storage_types.hpp"
#include "hal/error.hpp"
#include "tensor/element_codec.hpp"

namespace hal::model {
namespace {

// The shortest decimal that reads back as the same value, as "d.ddde±x" (std::to_chars does
// this exactly for float and double).
std::string shortest_scientific(double value, DType dtype) {
  char buffer[64];
  if (dtype == DType::f32 || dtype == DType::f64) {
    const auto result =
        dtype == DType::f32
            ? std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(value),
                            std::chars_format::scientific)
            : std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
    return std::string(buffer, result.ptr);
  }
  // f16 and bf16: the first precision whose correctly rounded digits round back to the same
  // bits (at most 5 significant digits for f16, 4 for bf16).
  const auto bits = [&](double v) {
    return dtype == DType::f16 ? tensor::f64_to_f16(v) : tensor::f64_to_bf16(v);
  };
  const uint16_t want = bits(value);
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*e", digits - 1, value);
    if (bits(std::strtod(buffer, nullptr)) == want) break;
  }
  return buffer;
}

}  // namespace

std::string format_float(double value, DType dtype) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  // "-d.ddde-x": the sign, the significant digits and the exponent of the first digit.
  const std::string text = shortest_scientific(value, dtype);
  const bool negative = text[0] == '-';
  const size_t e = text.find('e');
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i)
    if (text[i] != '.') digits += text[i];
  const int exponent = std::atoi(text.c_str() + e + 1);
  const auto count = static_cast<int>(digits.size());
  std::string out = negative ? "-" : "";
  const double magnitude = std::abs(value);
  if (magnitude >= 1e-4 && magnitude < 1e16) {  // NumPy's positional range
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (exponent >= count - 1) {
      out += digits + std::string(static_cast<size_t>(exponent - count + 1), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exponent + 1)) + "." +
             digits.substr(static_cast<size_t>(exponent + 1));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (count > 1) out += "." + digits.substr(1);
  char exponent_text[16];
  std::snprintf(exponent_text, sizeof exponent_text, "e%c%02d", exponent < 0 ? '-' : '+',
                std::abs(exponent));
  return out + exponent_text;
}

std::vector<std::string> format_numbers(const Tensor& x, Stream& stream) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(x.numel()));
  using hal::detail::BF16Bits, hal::detail::BoolByte, hal::detail::F16Bits;
  hal::detail::with_storage_type<F16Bits, BF16Bits, BoolByte>(x.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, F16Bits> || std::is_same_v<T, BF16Bits>) {
      for (uint16_t bits : x.to_vector<uint16_t>(stream))
        out.push_back(std::is_same_v<T, F16Bits>
                          ? format_float(tensor::f16_to_f32(bits), DType::f16)
                          : format_float(tensor::bf16_to_f32(bits), DType::bf16));
    } else if constexpr (std::is_same_v<T, BoolByte>) {
      for (uint8_t value : x.to_vector<uint8_t>(stream)) out.push_back(value ? "True" : "False");
    } else if constexpr (std::is_floating_point_v<T>) {
      for (T value : x.to_vector<T>(stream)) out.push_back(format_float(value, x.dtype()));
    } else {
      for (T value : x.to_vector<T>(stream)) out.push_back(std::to_string(value));
    }
  });
  return out;
}

namespace {

std::string_view trimmed(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// The whole of `text` as T, or nothing. from_chars takes no '+', so one is dropped first.
template <class T>
std::optional<T> read_whole(std::string_view text) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+') text.remove_prefix(1);
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

[[noreturn]] void not_a(size_t index, std::string_view text, DType dtype, const char* why) {
  std::string shown(text.substr(0, 40));
  if (text.size() > 40) shown += "...";
  throw Error(ErrorCode::InvalidArgument, "element " + std::to_string(index) + " ('" + shown +
                                              "') " + why + " " + std::string(to_string(dtype)));
}

// One element of `dtype` into `out`.
void parse_one(std::string_view raw, size_t index, DType dtype, std::byte* out) {
  const std::string_view text = trimmed(raw);
  if (dtype == DType::f32) {
    const auto value = read_whole<float>(text);
    if (!value) not_a(index, raw, dtype, "is not a number of");
    std::memcpy(out, &*value, sizeof(float));
    return;
  }
  if (dtype == DType::boolean) {
    if (equals_ignoring_case(text, "true") || equals_ignoring_case(text, "false")) {
      const uint8_t value = equals_ignoring_case(text, "true") ? 1 : 0;
      std::memcpy(out, &value, 1);
      return;
    }
    const auto value = read_whole<double>(text);
    if (!value || std::isnan(*value)) not_a(index, raw, dtype, "is not a number or a");
    const uint8_t truth = *value != 0 ? 1 : 0;
    std::memcpy(out, &truth, 1);
    return;
  }
  const bool integer = is_integer(dtype);
  if (dtype == DType::u64) {  // past int64's range, and exact past 2^53
    if (const auto exact = read_whole<uint64_t>(text)) {
      std::memcpy(out, &*exact, sizeof(uint64_t));
      return;
    }
  }
  if (integer) {
    if (const auto exact = read_whole<int64_t>(text)) {
      if (dtype == DType::i64) {
        std::memcpy(out, &*exact, sizeof(int64_t));
        return;
      }
      try {
        tensor::encode(static_cast<double>(*exact), dtype, out, "Cast");
      } catch (const Error&) {
        not_a(index, raw, dtype, "is out of range for");
      }
      return;
    }
  }
  const auto value = read_whole<double>(text);
  if (!value) not_a(index, raw, dtype, "is not a number of");
  if (!integer) {  // f64, f16, bf16
    tensor::encode(*value, dtype, out, "Cast");
    return;
  }
  const double whole = std::trunc(*value);
  if (!std::isfinite(whole)) not_a(index, raw, dtype, "is not a whole number of");
  try {
    tensor::encode(whole, dtype, out, "Cast");
  } catch (const Error&) {
    not_a(index, raw, dtype, "is out of range for");
  }
}

}  // namespace

Tensor parse_numbers(const StringTensor& x, DType dtype, Stream& stream) {
  const size_t size = size_of(dtype);
  std::vector<std::byte> bytes(x.data.size() * size);
  for (size_t i = 0; i < x.data.size(); ++i)
    parse_one(x.data[i], i, dtype, bytes.data() + i * size);
  return from_host(bytes.data(), x.shape, dtype, stream);
}

}  // namespace hal::model
