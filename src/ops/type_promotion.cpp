// The dtype two operands of an op are promoted to: PyTorch's rules for tensors, which NumPy's
// agree with among the integers (PyTorch refuses u64 with a signed integer; NumPy, and hal, give
// f64).
#include "hal/ops.hpp"

namespace hal {
namespace {

enum class Category { boolean, integer, floating };

Category category(DType dtype) {
  if (dtype == DType::boolean) return Category::boolean;
  return is_integer(dtype) ? Category::integer : Category::floating;
}

DType promote_floating(DType a, DType b) {
  if (a == DType::f64 || b == DType::f64) return DType::f64;
  if (a == DType::f32 || b == DType::f32) return DType::f32;
  return DType::f32;  // f16 with bf16: neither holds the other
}

// The signed integer of `bytes` bytes, if there is one.
DType signed_of_size(size_t bytes) {
  switch (bytes) {
    case 1:
      return DType::i8;
    case 2:
      return DType::i16;
    case 4:
      return DType::i32;
    default:
      return DType::i64;
  }
}

DType promote_integer(DType a, DType b) {
  const bool a_signed = is_signed_integer(a), b_signed = is_signed_integer(b);
  if (a_signed == b_signed) return size_of(a) >= size_of(b) ? a : b;
  const DType signed_one = a_signed ? a : b, unsigned_one = a_signed ? b : a;
  if (size_of(signed_one) > size_of(unsigned_one)) return signed_one;
  // The next wider signed integer holds both (u8 with i8 is i16); none holds u64 with a signed
  // integer, which NumPy makes f64.
  if (unsigned_one == DType::u64) return DType::f64;
  return signed_of_size(2 * size_of(unsigned_one));
}

}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  const Category x = category(a), y = category(b);
  if (x != y) return x > y ? a : b;  // the higher category wins whole: i64 + f16 is f16
  return x == Category::floating ? promote_floating(a, b) : promote_integer(a, b);
}

}  // namespace hal
