// The dtype two operands of an op are promoted to: PyTorch's rules for tensors (NumPy's agree
// on these dtypes), with one difference that hal's dtypes force, written down in ops.hpp.
#include "hal/ops.hpp"

namespace hal {
namespace {

enum class Category { boolean, integer, floating };

Category category(DType dtype) {
  switch (dtype) {
    case DType::boolean:
      return Category::boolean;
    case DType::i8:
    case DType::u8:
    case DType::i32:
    case DType::i64:
      return Category::integer;
    default:
      return Category::floating;
  }
}

DType promote_floating(DType a, DType b) {
  if (a == DType::f64 || b == DType::f64) return DType::f64;
  if (a == DType::f32 || b == DType::f32) return DType::f32;
  return DType::f32;  // f16 with bf16: neither holds the other
}

DType promote_integer(DType a, DType b) {
  if (a == DType::i64 || b == DType::i64) return DType::i64;
  if (a == DType::i32 || b == DType::i32) return DType::i32;
  return DType::i32;  // i8 with u8: i16 in NumPy and PyTorch; hal's next that holds both
}

}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  const Category x = category(a), y = category(b);
  if (x != y) return x > y ? a : b;  // the higher category wins whole: i64 + f16 is f16
  return x == Category::floating ? promote_floating(a, b) : promote_integer(a, b);
}

}  // namespace hal
