// out = x converted, between f32, f64, i32, i64 and bool, as the CPU's cast does: to bool,
// x != 0; from floating to integers, NaN to 0 and saturating at the bounds; between integers,
// modular. Flat or strided.
// hal-variant cast_f32_f32 -DFROM=float -DFROM_BYTES=4 -DFROM_FLOATING -DTO=float -DTO_BYTES=4 -DTO_F32
// hal-variant cast_f32_f64 -DFROM=float -DFROM_BYTES=4 -DFROM_FLOATING -DTO=double -DTO_BYTES=8 -DTO_F64
// hal-variant cast_f32_i32 -DFROM=float -DFROM_BYTES=4 -DFROM_FLOATING -DTO=int -DTO_BYTES=4 -DTO_I32
// hal-variant cast_f32_i64 -DFROM=float -DFROM_BYTES=4 -DFROM_FLOATING -DTO=int64_t -DTO_BYTES=8 -DTO_I64
// hal-variant cast_f32_bool -DFROM=float -DFROM_BYTES=4 -DFROM_FLOATING -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL
// hal-variant cast_f64_f32 -DFROM=double -DFROM_BYTES=8 -DFROM_FLOATING -DTO=float -DTO_BYTES=4 -DTO_F32
// hal-variant cast_f64_f64 -DFROM=double -DFROM_BYTES=8 -DFROM_FLOATING -DTO=double -DTO_BYTES=8 -DTO_F64
// hal-variant cast_f64_i32 -DFROM=double -DFROM_BYTES=8 -DFROM_FLOATING -DTO=int -DTO_BYTES=4 -DTO_I32
// hal-variant cast_f64_i64 -DFROM=double -DFROM_BYTES=8 -DFROM_FLOATING -DTO=int64_t -DTO_BYTES=8 -DTO_I64
// hal-variant cast_f64_bool -DFROM=double -DFROM_BYTES=8 -DFROM_FLOATING -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL
// hal-variant cast_i32_f32 -DFROM=int -DFROM_BYTES=4 -DTO=float -DTO_BYTES=4 -DTO_F32
// hal-variant cast_i32_f64 -DFROM=int -DFROM_BYTES=4 -DTO=double -DTO_BYTES=8 -DTO_F64
// hal-variant cast_i32_i32 -DFROM=int -DFROM_BYTES=4 -DTO=int -DTO_BYTES=4 -DTO_I32
// hal-variant cast_i32_i64 -DFROM=int -DFROM_BYTES=4 -DTO=int64_t -DTO_BYTES=8 -DTO_I64
// hal-variant cast_i32_bool -DFROM=int -DFROM_BYTES=4 -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL
// hal-variant cast_i64_f32 -DFROM=int64_t -DFROM_BYTES=8 -DTO=float -DTO_BYTES=4 -DTO_F32
// hal-variant cast_i64_f64 -DFROM=int64_t -DFROM_BYTES=8 -DTO=double -DTO_BYTES=8 -DTO_F64
// hal-variant cast_i64_i32 -DFROM=int64_t -DFROM_BYTES=8 -DTO=int -DTO_BYTES=4 -DTO_I32
// hal-variant cast_i64_i64 -DFROM=int64_t -DFROM_BYTES=8 -DTO=int64_t -DTO_BYTES=8 -DTO_I64
// hal-variant cast_i64_bool -DFROM=int64_t -DFROM_BYTES=8 -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL
// hal-variant cast_bool_f32 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=float -DTO_BYTES=4 -DTO_F32
// hal-variant cast_bool_f64 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=double -DTO_BYTES=8 -DTO_F64
// hal-variant cast_bool_i32 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=int -DTO_BYTES=4 -DTO_I32
// hal-variant cast_bool_i64 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=int64_t -DTO_BYTES=8 -DTO_I64
// hal-variant cast_bool_bool -DFROM=uint8_t -DFROM_BYTES=1 -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL
#version 450
#include "types.glsl"
#include "common.glsl"
#define DIMS 6
#include "strided.glsl"

layout(constant_id = 1) const uint STRIDED = 0;

layout(set = 0, binding = 0) writeonly buffer Out { TO out_[]; };
layout(set = 0, binding = 1) readonly buffer X { FROM x_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_x, count;
  uint shape[DIMS];
  uint stride_x[DIMS];
} args;

TO convert(FROM x) {
#if defined(TO_BOOL)
  return uint8_t(x != FROM(0) ? 1 : 0);
#elif defined(FROM_FLOATING) && defined(TO_I32)
  if (isnan(x)) return 0;
  if (x <= FROM(-2147483648.0)) return -2147483647 - 1;
  if (x >= FROM(2147483648.0)) return 2147483647;
  return int(x);
#elif defined(FROM_FLOATING) && defined(TO_I64)
  if (isnan(x)) return 0l;
  if (x <= FROM(-9223372036854775808.0)) return -9223372036854775807l - 1l;
  if (x >= FROM(9223372036854775808.0)) return 9223372036854775807l;
  return int64_t(x);
#else
  return TO(x);
#endif
}

void main() {
  const uint i = linear_id();
  if (i >= args.count) return;
  const uint ix = STRIDED != 0 ? walk(i, args.shape, args.stride_x) : i;
  out_[args.buffer_offset[0] / TO_BYTES + i] =
      convert(x_[args.buffer_offset[1] / FROM_BYTES + args.offset_x + ix]);
}
