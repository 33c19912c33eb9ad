#include "serve/kserve_datatype.hpp"

#include <array>
#include <utility>

#include "serve/host_tensor.hpp"

namespace hal::serve {
namespace {

constexpr std::array<std::pair<DType, std::string_view>, 13> kNames = {{
    {DType::f32, "FP32"},
    {DType::f16, "FP16"},
    {DType::bf16, "BF16"},
    {DType::f64, "FP64"},
    {DType::i8, "INT8"},
    {DType::u8, "UINT8"},
    {DType::i16, "INT16"},
    {DType::u16, "UINT16"},
    {DType::i32, "INT32"},
    {DType::u32, "UINT32"},
    {DType::i64, "INT64"},
    {DType::u64, "UINT64"},
    {DType::boolean, "BOOL"},
}};

}  // namespace

std::string kserve_datatype(DType dtype) {
  for (const auto& [d, name] : kNames)
    if (d == dtype) return std::string(name);
  return "UNKNOWN";
}

std::optional<DType> parse_kserve_datatype(std::string_view name) {
  for (const auto& [d, n] : kNames)
    if (n == name) return d;
  return std::nullopt;
}

int64_t element_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace hal::serve
