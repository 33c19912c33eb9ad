// out = x converted, between f32, f64, f16, the integers and bool, as the CPU's cast does:
// to bool, x != 0; from bool, any byte but 0 as 1; from floating to integers, NaN to 0 and
// saturating at the bounds; between integers, modular. Flat or strided.
// hal-variant cast_f32_f32 -DFROM=float -DFROM_BYTES=4 -DTO=float -DTO_BYTES=4 -DFROM_FLOATING -DTO_F32 -DFROM_F32
// hal-variant cast_f32_f64 -DFROM=float -DFROM_BYTES=4 -DTO=double -DTO_BYTES=8 -DFROM_FLOATING -DTO_F64 -DFROM_F32
// hal-variant cast_f32_f16 -DFROM=float -DFROM_BYTES=4 -DTO=float16_t -DTO_BYTES=2 -DFROM_FLOATING -DTO_F16 -DFROM_F32
// hal-variant cast_f32_i32 -DFROM=float -DFROM_BYTES=4 -DTO=int -DTO_BYTES=4 -DFROM_FLOATING -DTO_INTEGER -DTO_I32 -DFROM_F32
// hal-variant cast_f32_i64 -DFROM=float -DFROM_BYTES=4 -DTO=int64_t -DTO_BYTES=8 -DFROM_FLOATING -DTO_INTEGER -DTO_I64 -DFROM_F32
// hal-variant cast_f32_i8 -DFROM=float -DFROM_BYTES=4 -DTO=int8_t -DTO_BYTES=1 -DFROM_FLOATING -DTO_INTEGER -DTO_I8 -DFROM_F32
// hal-variant cast_f32_u8 -DFROM=float -DFROM_BYTES=4 -DTO=uint8_t -DTO_BYTES=1 -DFROM_FLOATING -DTO_INTEGER -DTO_U8 -DFROM_F32
// hal-variant cast_f32_bool -DFROM=float -DFROM_BYTES=4 -DTO=uint8_t -DTO_BYTES=1 -DFROM_FLOATING -DTO_BOOL -DTO_BOOL -DFROM_F32
// hal-variant cast_f32_i16 -DFROM=float -DFROM_BYTES=4 -DTO=int16_t -DTO_BYTES=2 -DFROM_FLOATING -DTO_INTEGER -DTO_I16 -DFROM_F32
// hal-variant cast_f32_u16 -DFROM=float -DFROM_BYTES=4 -DTO=uint16_t -DTO_BYTES=2 -DFROM_FLOATING -DTO_INTEGER -DTO_U16 -DFROM_F32
// hal-variant cast_f32_u32 -DFROM=float -DFROM_BYTES=4 -DTO=uint -DTO_BYTES=4 -DFROM_FLOATING -DTO_INTEGER -DTO_U32 -DFROM_F32
// hal-variant cast_f32_u64 -DFROM=float -DFROM_BYTES=4 -DTO=uint64_t -DTO_BYTES=8 -DFROM_FLOATING -DTO_INTEGER -DTO_U64 -DFROM_F32
// hal-variant cast_f64_f32 -DFROM=double -DFROM_BYTES=8 -DTO=float -DTO_BYTES=4 -DFROM_FLOATING -DTO_F32 -DFROM_F64
// hal-variant cast_f64_f64 -DFROM=double -DFROM_BYTES=8 -DTO=double -DTO_BYTES=8 -DFROM_FLOATING -DTO_F64 -DFROM_F64
// hal-variant cast_f64_f16 -DFROM=double -DFROM_BYTES=8 -DTO=float16_t -DTO_BYTES=2 -DFROM_FLOATING -DTO_F16 -DFROM_F64
// hal-variant cast_f64_i32 -DFROM=double -DFROM_BYTES=8 -DTO=int -DTO_BYTES=4 -DFROM_FLOATING -DTO_INTEGER -DTO_I32 -DFROM_F64
// hal-variant cast_f64_i64 -DFROM=double -DFROM_BYTES=8 -DTO=int64_t -DTO_BYTES=8 -DFROM_FLOATING -DTO_INTEGER -DTO_I64 -DFROM_F64
// hal-variant cast_f64_i8 -DFROM=double -DFROM_BYTES=8 -DTO=int8_t -DTO_BYTES=1 -DFROM_FLOATING -DTO_INTEGER -DTO_I8 -DFROM_F64
// hal-variant cast_f64_u8 -DFROM=double -DFROM_BYTES=8 -DTO=uint8_t -DTO_BYTES=1 -DFROM_FLOATING -DTO_INTEGER -DTO_U8 -DFROM_F64
// hal-variant cast_f64_bool -DFROM=double -DFROM_BYTES=8 -DTO=uint8_t -DTO_BYTES=1 -DFROM_FLOATING -DTO_BOOL -DTO_BOOL -DFROM_F64
// hal-variant cast_f64_i16 -DFROM=double -DFROM_BYTES=8 -DTO=int16_t -DTO_BYTES=2 -DFROM_FLOATING -DTO_INTEGER -DTO_I16 -DFROM_F64
// hal-variant cast_f64_u16 -DFROM=double -DFROM_BYTES=8 -DTO=uint16_t -DTO_BYTES=2 -DFROM_FLOATING -DTO_INTEGER -DTO_U16 -DFROM_F64
// hal-variant cast_f64_u32 -DFROM=double -DFROM_BYTES=8 -DTO=uint -DTO_BYTES=4 -DFROM_FLOATING -DTO_INTEGER -DTO_U32 -DFROM_F64
// hal-variant cast_f64_u64 -DFROM=double -DFROM_BYTES=8 -DTO=uint64_t -DTO_BYTES=8 -DFROM_FLOATING -DTO_INTEGER -DTO_U64 -DFROM_F64
// hal-variant cast_f16_f32 -DFROM=float16_t -DFROM_BYTES=2 -DTO=float -DTO_BYTES=4 -DFROM_FLOATING -DTO_F32 -DFROM_F16
// hal-variant cast_f16_f64 -DFROM=float16_t -DFROM_BYTES=2 -DTO=double -DTO_BYTES=8 -DFROM_FLOATING -DTO_F64 -DFROM_F16
// hal-variant cast_f16_f16 -DFROM=float16_t -DFROM_BYTES=2 -DTO=float16_t -DTO_BYTES=2 -DFROM_FLOATING -DTO_F16 -DFROM_F16
// hal-variant cast_f16_i32 -DFROM=float16_t -DFROM_BYTES=2 -DTO=int -DTO_BYTES=4 -DFROM_FLOATING -DTO_INTEGER -DTO_I32 -DFROM_F16
// hal-variant cast_f16_i64 -DFROM=float16_t -DFROM_BYTES=2 -DTO=int64_t -DTO_BYTES=8 -DFROM_FLOATING -DTO_INTEGER -DTO_I64 -DFROM_F16
// hal-variant cast_f16_i8 -DFROM=float16_t -DFROM_BYTES=2 -DTO=int8_t -DTO_BYTES=1 -DFROM_FLOATING -DTO_INTEGER -DTO_I8 -DFROM_F16
// hal-variant cast_f16_u8 -DFROM=float16_t -DFROM_BYTES=2 -DTO=uint8_t -DTO_BYTES=1 -DFROM_FLOATING -DTO_INTEGER -DTO_U8 -DFROM_F16
// hal-variant cast_f16_bool -DFROM=float16_t -DFROM_BYTES=2 -DTO=uint8_t -DTO_BYTES=1 -DFROM_FLOATING -DTO_BOOL -DTO_BOOL -DFROM_F16
// hal-variant cast_f16_i16 -DFROM=float16_t -DFROM_BYTES=2 -DTO=int16_t -DTO_BYTES=2 -DFROM_FLOATING -DTO_INTEGER -DTO_I16 -DFROM_F16
// hal-variant cast_f16_u16 -DFROM=float16_t -DFROM_BYTES=2 -DTO=uint16_t -DTO_BYTES=2 -DFROM_FLOATING -DTO_INTEGER -DTO_U16 -DFROM_F16
// hal-variant cast_f16_u32 -DFROM=float16_t -DFROM_BYTES=2 -DTO=uint -DTO_BYTES=4 -DFROM_FLOATING -DTO_INTEGER -DTO_U32 -DFROM_F16
// hal-variant cast_f16_u64 -DFROM=float16_t -DFROM_BYTES=2 -DTO=uint64_t -DTO_BYTES=8 -DFROM_FLOATING -DTO_INTEGER -DTO_U64 -DFROM_F16
// hal-variant cast_i32_f32 -DFROM=int -DFROM_BYTES=4 -DTO=float -DTO_BYTES=4 -DTO_F32 -DFROM_I32
// hal-variant cast_i32_f64 -DFROM=int -DFROM_BYTES=4 -DTO=double -DTO_BYTES=8 -DTO_F64 -DFROM_I32
// hal-variant cast_i32_f16 -DFROM=int -DFROM_BYTES=4 -DTO=float16_t -DTO_BYTES=2 -DTO_F16 -DFROM_I32
// hal-variant cast_i32_i32 -DFROM=int -DFROM_BYTES=4 -DTO=int -DTO_BYTES=4 -DTO_INTEGER -DTO_I32 -DFROM_I32
// hal-variant cast_i32_i64 -DFROM=int -DFROM_BYTES=4 -DTO=int64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_I64 -DFROM_I32
// hal-variant cast_i32_i8 -DFROM=int -DFROM_BYTES=4 -DTO=int8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_I8 -DFROM_I32
// hal-variant cast_i32_u8 -DFROM=int -DFROM_BYTES=4 -DTO=uint8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_U8 -DFROM_I32
// hal-variant cast_i32_bool -DFROM=int -DFROM_BYTES=4 -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL -DTO_BOOL -DFROM_I32
// hal-variant cast_i32_i16 -DFROM=int -DFROM_BYTES=4 -DTO=int16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_I16 -DFROM_I32
// hal-variant cast_i32_u16 -DFROM=int -DFROM_BYTES=4 -DTO=uint16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_U16 -DFROM_I32
// hal-variant cast_i32_u32 -DFROM=int -DFROM_BYTES=4 -DTO=uint -DTO_BYTES=4 -DTO_INTEGER -DTO_U32 -DFROM_I32
// hal-variant cast_i32_u64 -DFROM=int -DFROM_BYTES=4 -DTO=uint64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_U64 -DFROM_I32
// hal-variant cast_i64_f32 -DFROM=int64_t -DFROM_BYTES=8 -DTO=float -DTO_BYTES=4 -DTO_F32 -DFROM_I64
// hal-variant cast_i64_f64 -DFROM=int64_t -DFROM_BYTES=8 -DTO=double -DTO_BYTES=8 -DTO_F64 -DFROM_I64
// hal-variant cast_i64_f16 -DFROM=int64_t -DFROM_BYTES=8 -DTO=float16_t -DTO_BYTES=2 -DTO_F16 -DFROM_I64
// hal-variant cast_i64_i32 -DFROM=int64_t -DFROM_BYTES=8 -DTO=int -DTO_BYTES=4 -DTO_INTEGER -DTO_I32 -DFROM_I64
// hal-variant cast_i64_i64 -DFROM=int64_t -DFROM_BYTES=8 -DTO=int64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_I64 -DFROM_I64
// hal-variant cast_i64_i8 -DFROM=int64_t -DFROM_BYTES=8 -DTO=int8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_I8 -DFROM_I64
// hal-variant cast_i64_u8 -DFROM=int64_t -DFROM_BYTES=8 -DTO=uint8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_U8 -DFROM_I64
// hal-variant cast_i64_bool -DFROM=int64_t -DFROM_BYTES=8 -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL -DTO_BOOL -DFROM_I64
// hal-variant cast_i64_i16 -DFROM=int64_t -DFROM_BYTES=8 -DTO=int16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_I16 -DFROM_I64
// hal-variant cast_i64_u16 -DFROM=int64_t -DFROM_BYTES=8 -DTO=uint16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_U16 -DFROM_I64
// hal-variant cast_i64_u32 -DFROM=int64_t -DFROM_BYTES=8 -DTO=uint -DTO_BYTES=4 -DTO_INTEGER -DTO_U32 -DFROM_I64
// hal-variant cast_i64_u64 -DFROM=int64_t -DFROM_BYTES=8 -DTO=uint64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_U64 -DFROM_I64
// hal-variant cast_i8_f32 -DFROM=int8_t -DFROM_BYTES=1 -DTO=float -DTO_BYTES=4 -DTO_F32 -DFROM_I8
// hal-variant cast_i8_f64 -DFROM=int8_t -DFROM_BYTES=1 -DTO=double -DTO_BYTES=8 -DTO_F64 -DFROM_I8
// hal-variant cast_i8_f16 -DFROM=int8_t -DFROM_BYTES=1 -DTO=float16_t -DTO_BYTES=2 -DTO_F16 -DFROM_I8
// hal-variant cast_i8_i32 -DFROM=int8_t -DFROM_BYTES=1 -DTO=int -DTO_BYTES=4 -DTO_INTEGER -DTO_I32 -DFROM_I8
// hal-variant cast_i8_i64 -DFROM=int8_t -DFROM_BYTES=1 -DTO=int64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_I64 -DFROM_I8
// hal-variant cast_i8_i8 -DFROM=int8_t -DFROM_BYTES=1 -DTO=int8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_I8 -DFROM_I8
// hal-variant cast_i8_u8 -DFROM=int8_t -DFROM_BYTES=1 -DTO=uint8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_U8 -DFROM_I8
// hal-variant cast_i8_bool -DFROM=int8_t -DFROM_BYTES=1 -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL -DTO_BOOL -DFROM_I8
// hal-variant cast_i8_i16 -DFROM=int8_t -DFROM_BYTES=1 -DTO=int16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_I16 -DFROM_I8
// hal-variant cast_i8_u16 -DFROM=int8_t -DFROM_BYTES=1 -DTO=uint16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_U16 -DFROM_I8
// hal-variant cast_i8_u32 -DFROM=int8_t -DFROM_BYTES=1 -DTO=uint -DTO_BYTES=4 -DTO_INTEGER -DTO_U32 -DFROM_I8
// hal-variant cast_i8_u64 -DFROM=int8_t -DFROM_BYTES=1 -DTO=uint64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_U64 -DFROM_I8
// hal-variant cast_u8_f32 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=float -DTO_BYTES=4 -DTO_F32 -DFROM_U8
// hal-variant cast_u8_f64 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=double -DTO_BYTES=8 -DTO_F64 -DFROM_U8
// hal-variant cast_u8_f16 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=float16_t -DTO_BYTES=2 -DTO_F16 -DFROM_U8
// hal-variant cast_u8_i32 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=int -DTO_BYTES=4 -DTO_INTEGER -DTO_I32 -DFROM_U8
// hal-variant cast_u8_i64 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=int64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_I64 -DFROM_U8
// hal-variant cast_u8_i8 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=int8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_I8 -DFROM_U8
// hal-variant cast_u8_u8 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=uint8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_U8 -DFROM_U8
// hal-variant cast_u8_bool -DFROM=uint8_t -DFROM_BYTES=1 -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL -DTO_BOOL -DFROM_U8
// hal-variant cast_u8_i16 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=int16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_I16 -DFROM_U8
// hal-variant cast_u8_u16 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=uint16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_U16 -DFROM_U8
// hal-variant cast_u8_u32 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=uint -DTO_BYTES=4 -DTO_INTEGER -DTO_U32 -DFROM_U8
// hal-variant cast_u8_u64 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=uint64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_U64 -DFROM_U8
// hal-variant cast_bool_f32 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=float -DTO_BYTES=4 -DTO_F32 -DFROM_BOOL
// hal-variant cast_bool_f64 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=double -DTO_BYTES=8 -DTO_F64 -DFROM_BOOL
// hal-variant cast_bool_f16 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=float16_t -DTO_BYTES=2 -DTO_F16 -DFROM_BOOL
// hal-variant cast_bool_i32 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=int -DTO_BYTES=4 -DTO_INTEGER -DTO_I32 -DFROM_BOOL
// hal-variant cast_bool_i64 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=int64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_I64 -DFROM_BOOL
// hal-variant cast_bool_i8 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=int8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_I8 -DFROM_BOOL
// hal-variant cast_bool_u8 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=uint8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_U8 -DFROM_BOOL
// hal-variant cast_bool_bool -DFROM=uint8_t -DFROM_BYTES=1 -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL -DTO_BOOL -DFROM_BOOL
// hal-variant cast_bool_i16 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=int16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_I16 -DFROM_BOOL
// hal-variant cast_bool_u16 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=uint16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_U16 -DFROM_BOOL
// hal-variant cast_bool_u32 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=uint -DTO_BYTES=4 -DTO_INTEGER -DTO_U32 -DFROM_BOOL
// hal-variant cast_bool_u64 -DFROM=uint8_t -DFROM_BYTES=1 -DTO=uint64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_U64 -DFROM_BOOL
// hal-variant cast_i16_f32 -DFROM=int16_t -DFROM_BYTES=2 -DTO=float -DTO_BYTES=4 -DTO_F32 -DFROM_I16
// hal-variant cast_i16_f64 -DFROM=int16_t -DFROM_BYTES=2 -DTO=double -DTO_BYTES=8 -DTO_F64 -DFROM_I16
// hal-variant cast_i16_f16 -DFROM=int16_t -DFROM_BYTES=2 -DTO=float16_t -DTO_BYTES=2 -DTO_F16 -DFROM_I16
// hal-variant cast_i16_i32 -DFROM=int16_t -DFROM_BYTES=2 -DTO=int -DTO_BYTES=4 -DTO_INTEGER -DTO_I32 -DFROM_I16
// hal-variant cast_i16_i64 -DFROM=int16_t -DFROM_BYTES=2 -DTO=int64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_I64 -DFROM_I16
// hal-variant cast_i16_i8 -DFROM=int16_t -DFROM_BYTES=2 -DTO=int8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_I8 -DFROM_I16
// hal-variant cast_i16_u8 -DFROM=int16_t -DFROM_BYTES=2 -DTO=uint8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_U8 -DFROM_I16
// hal-variant cast_i16_bool -DFROM=int16_t -DFROM_BYTES=2 -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL -DTO_BOOL -DFROM_I16
// hal-variant cast_i16_i16 -DFROM=int16_t -DFROM_BYTES=2 -DTO=int16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_I16 -DFROM_I16
// hal-variant cast_i16_u16 -DFROM=int16_t -DFROM_BYTES=2 -DTO=uint16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_U16 -DFROM_I16
// hal-variant cast_i16_u32 -DFROM=int16_t -DFROM_BYTES=2 -DTO=uint -DTO_BYTES=4 -DTO_INTEGER -DTO_U32 -DFROM_I16
// hal-variant cast_i16_u64 -DFROM=int16_t -DFROM_BYTES=2 -DTO=uint64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_U64 -DFROM_I16
// hal-variant cast_u16_f32 -DFROM=uint16_t -DFROM_BYTES=2 -DTO=float -DTO_BYTES=4 -DTO_F32 -DFROM_U16
// hal-variant cast_u16_f64 -DFROM=uint16_t -DFROM_BYTES=2 -DTO=double -DTO_BYTES=8 -DTO_F64 -DFROM_U16
// hal-variant cast_u16_f16 -DFROM=uint16_t -DFROM_BYTES=2 -DTO=float16_t -DTO_BYTES=2 -DTO_F16 -DFROM_U16
// hal-variant cast_u16_i32 -DFROM=uint16_t -DFROM_BYTES=2 -DTO=int -DTO_BYTES=4 -DTO_INTEGER -DTO_I32 -DFROM_U16
// hal-variant cast_u16_i64 -DFROM=uint16_t -DFROM_BYTES=2 -DTO=int64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_I64 -DFROM_U16
// hal-variant cast_u16_i8 -DFROM=uint16_t -DFROM_BYTES=2 -DTO=int8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_I8 -DFROM_U16
// hal-variant cast_u16_u8 -DFROM=uint16_t -DFROM_BYTES=2 -DTO=uint8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_U8 -DFROM_U16
// hal-variant cast_u16_bool -DFROM=uint16_t -DFROM_BYTES=2 -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL -DTO_BOOL -DFROM_U16
// hal-variant cast_u16_i16 -DFROM=uint16_t -DFROM_BYTES=2 -DTO=int16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_I16 -DFROM_U16
// hal-variant cast_u16_u16 -DFROM=uint16_t -DFROM_BYTES=2 -DTO=uint16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_U16 -DFROM_U16
// hal-variant cast_u16_u32 -DFROM=uint16_t -DFROM_BYTES=2 -DTO=uint -DTO_BYTES=4 -DTO_INTEGER -DTO_U32 -DFROM_U16
// hal-variant cast_u16_u64 -DFROM=uint16_t -DFROM_BYTES=2 -DTO=uint64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_U64 -DFROM_U16
// hal-variant cast_u32_f32 -DFROM=uint -DFROM_BYTES=4 -DTO=float -DTO_BYTES=4 -DTO_F32 -DFROM_U32
// hal-variant cast_u32_f64 -DFROM=uint -DFROM_BYTES=4 -DTO=double -DTO_BYTES=8 -DTO_F64 -DFROM_U32
// hal-variant cast_u32_f16 -DFROM=uint -DFROM_BYTES=4 -DTO=float16_t -DTO_BYTES=2 -DTO_F16 -DFROM_U32
// hal-variant cast_u32_i32 -DFROM=uint -DFROM_BYTES=4 -DTO=int -DTO_BYTES=4 -DTO_INTEGER -DTO_I32 -DFROM_U32
// hal-variant cast_u32_i64 -DFROM=uint -DFROM_BYTES=4 -DTO=int64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_I64 -DFROM_U32
// hal-variant cast_u32_i8 -DFROM=uint -DFROM_BYTES=4 -DTO=int8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_I8 -DFROM_U32
// hal-variant cast_u32_u8 -DFROM=uint -DFROM_BYTES=4 -DTO=uint8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_U8 -DFROM_U32
// hal-variant cast_u32_bool -DFROM=uint -DFROM_BYTES=4 -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL -DTO_BOOL -DFROM_U32
// hal-variant cast_u32_i16 -DFROM=uint -DFROM_BYTES=4 -DTO=int16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_I16 -DFROM_U32
// hal-variant cast_u32_u16 -DFROM=uint -DFROM_BYTES=4 -DTO=uint16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_U16 -DFROM_U32
// hal-variant cast_u32_u32 -DFROM=uint -DFROM_BYTES=4 -DTO=uint -DTO_BYTES=4 -DTO_INTEGER -DTO_U32 -DFROM_U32
// hal-variant cast_u32_u64 -DFROM=uint -DFROM_BYTES=4 -DTO=uint64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_U64 -DFROM_U32
// hal-variant cast_u64_f32 -DFROM=uint64_t -DFROM_BYTES=8 -DTO=float -DTO_BYTES=4 -DTO_F32 -DFROM_U64
// hal-variant cast_u64_f64 -DFROM=uint64_t -DFROM_BYTES=8 -DTO=double -DTO_BYTES=8 -DTO_F64 -DFROM_U64
// hal-variant cast_u64_f16 -DFROM=uint64_t -DFROM_BYTES=8 -DTO=float16_t -DTO_BYTES=2 -DTO_F16 -DFROM_U64
// hal-variant cast_u64_i32 -DFROM=uint64_t -DFROM_BYTES=8 -DTO=int -DTO_BYTES=4 -DTO_INTEGER -DTO_I32 -DFROM_U64
// hal-variant cast_u64_i64 -DFROM=uint64_t -DFROM_BYTES=8 -DTO=int64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_I64 -DFROM_U64
// hal-variant cast_u64_i8 -DFROM=uint64_t -DFROM_BYTES=8 -DTO=int8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_I8 -DFROM_U64
// hal-variant cast_u64_u8 -DFROM=uint64_t -DFROM_BYTES=8 -DTO=uint8_t -DTO_BYTES=1 -DTO_INTEGER -DTO_U8 -DFROM_U64
// hal-variant cast_u64_bool -DFROM=uint64_t -DFROM_BYTES=8 -DTO=uint8_t -DTO_BYTES=1 -DTO_BOOL -DTO_BOOL -DFROM_U64
// hal-variant cast_u64_i16 -DFROM=uint64_t -DFROM_BYTES=8 -DTO=int16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_I16 -DFROM_U64
// hal-variant cast_u64_u16 -DFROM=uint64_t -DFROM_BYTES=8 -DTO=uint16_t -DTO_BYTES=2 -DTO_INTEGER -DTO_U16 -DFROM_U64
// hal-variant cast_u64_u32 -DFROM=uint64_t -DFROM_BYTES=8 -DTO=uint -DTO_BYTES=4 -DTO_INTEGER -DTO_U32 -DFROM_U64
// hal-variant cast_u64_u64 -DFROM=uint64_t -DFROM_BYTES=8 -DTO=uint64_t -DTO_BYTES=8 -DTO_INTEGER -DTO_U64 -DFROM_U64
#version 450
#include "types.glsl"
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#include "common.glsl"
#define DIMS 6

// An integer target's range: below TO_LOW gives its least value, from TO_BEYOND its largest.
#if defined(TO_I32)
#define TO_LOW -2147483648.0
#define TO_LOW_VALUE int(0x80000000u)
#define TO_BEYOND 2147483648.0
#define TO_MAX_VALUE 2147483647
#elif defined(TO_I64)
#define TO_LOW -9223372036854775808.0
#define TO_LOW_VALUE int64_t(0x8000000000000000ul)
#define TO_BEYOND 9223372036854775808.0
#define TO_MAX_VALUE 9223372036854775807l
#elif defined(TO_I8)
#define TO_LOW -128.0
#define TO_LOW_VALUE int8_t(-128)
#define TO_BEYOND 128.0
#define TO_MAX_VALUE int8_t(127)
#elif defined(TO_U8)
#define TO_LOW 0.0
#define TO_LOW_VALUE uint8_t(0)
#define TO_BEYOND 256.0
#define TO_MAX_VALUE uint8_t(255)
#elif defined(TO_I16)
#define TO_LOW -32768.0
#define TO_LOW_VALUE int16_t(-32768)
#define TO_BEYOND 32768.0
#define TO_MAX_VALUE int16_t(32767)
#elif defined(TO_U16)
#define TO_LOW 0.0
#define TO_LOW_VALUE uint16_t(0)
#define TO_BEYOND 65536.0
#define TO_MAX_VALUE uint16_t(65535)
#elif defined(TO_U32)
#define TO_LOW 0.0
#define TO_LOW_VALUE 0u
#define TO_BEYOND 4294967296.0
#define TO_MAX_VALUE 0xffffffffu
#elif defined(TO_U64)
#define TO_LOW 0.0
#define TO_LOW_VALUE uint64_t(0)
#define TO_BEYOND 18446744073709551616.0
#define TO_MAX_VALUE 0xfffffffffffffffful
#endif
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
#if defined(FROM_BOOL)
  // Any byte but 0 is true, as 1: a bool tensor over memory hal did not fill (Tensor(Buffer),
  // wrap_native_memory, DLPack) may hold others, and the CPU's cast reads them so.
  x = x != FROM(0) ? FROM(1) : FROM(0);
#endif
#if defined(TO_BOOL)
  return uint8_t(x != FROM(0) ? 1 : 0);
#elif defined(FROM_FLOATING) && defined(TO_INTEGER)
  // The bounds are powers of two, exact in every floating type (or beyond f16's range, where
  // they become infinities and still bound it).
  if (isnan(x)) return TO(0);
  if (x <= FROM(TO_LOW)) return TO(TO_LOW_VALUE);
  if (x >= FROM(TO_BEYOND)) return TO(TO_MAX_VALUE);
  return TO(x);
#elif defined(FROM_F64) && defined(TO_F16)
  // Through float rounded to odd, then to half once: converting twice to nearest would round
  // twice (float keeps 13 bits more than half, enough for round-to-odd to carry the rest).
  float f = float(x);
  if (!isinf(f) && double(f) != x) {
    uint bits = floatBitsToUint(f);
    if (abs(double(f)) > abs(x)) bits -= 1u;  // towards zero
    f = uintBitsToFloat(bits | 1u);
  }
  return float16_t(f);
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
