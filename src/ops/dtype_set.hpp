// A set of dtypes in one word, for the op table's rules, and the named sets the ops take.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "hal/dtype.hpp"

namespace hal::ops {

class DTypeSet {
 public:
  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<DType> dtypes) {
    for (DType dtype : dtypes) bits_ |= bit(dtype);
  }
  constexpr bool has(DType dtype) const { return (bits_ & bit(dtype)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr DTypeSet operator|(DTypeSet other) const { return from_bits(bits_ | other.bits_); }
  constexpr DTypeSet operator&(DTypeSet other) const { return from_bits(bits_ & other.bits_); }
  constexpr bool operator==(const DTypeSet&) const = default;
  // "f32, f64 and i32", in kAllDTypes' order.
  std::string describe() const;

 private:
  static constexpr uint16_t bit(DType dtype) {
    return static_cast<uint16_t>(1u << static_cast<unsigned>(dtype));
  }
  static constexpr DTypeSet from_bits(uint16_t bits) {
    DTypeSet set;
    set.bits_ = bits;
    return set;
  }
  uint16_t bits_ = 0;
};

namespace dtypes {
inline constexpr DTypeSet kFloat{DType::f32, DType::f64};
inline constexpr DTypeSet kHalf{DType::f16, DType::bf16};
inline constexpr DTypeSet kFloating = kFloat | kHalf;
inline constexpr DTypeSet kInteger{DType::i8,  DType::u8,  DType::i16, DType::u16,
                                   DType::i32, DType::u32, DType::i64, DType::u64};
inline constexpr DTypeSet kNumeric = kFloating | kInteger;
inline constexpr DTypeSet kAll = kNumeric | DTypeSet{DType::boolean};
}  // namespace dtypes

}  // namespace hal::ops
