// Element types by macro, for shaders compiled once per dtype (// hal-variant lines): 8-bit
// storage for bool, u8 and i8; 16-bit storage and arithmetic for f16, i16 and u16; 64-bit
// integers for i64 and u64. An extension adds to the SPIR-V only what a variant uses.
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
