// The bindings and push constants of matmul.comp and matmul_direct.comp: one layout, which
// vulkan_gemm (src/ops/vulkan_kernels.cpp) fills for either.
layout(set = 0, binding = 0) buffer C { T c_[]; };  // read too where accumulating
layout(set = 0, binding = 1) readonly buffer A { T a_[]; };
layout(set = 0, binding = 2) readonly buffer B { T b_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_c, offset_a, offset_b;
  uint m, n, k;
  uint ldc, lda, ldb;
  uint stride_c, stride_a, stride_b;
  uint transpose_a, transpose_b;
  // 1: C += the product, C starting the sum, for the parts of a long k after the first (the ops
  // split k over launches to keep a launch's loop within lavapipe's 65535 rounds, common.glsl).
  uint accumulate;
} args;
