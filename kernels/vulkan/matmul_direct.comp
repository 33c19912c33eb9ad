// C[m x n] = op(A)[m x k] * op(B)[k x n] as matmul.comp (same arguments and launch), for Vulkan
// devices that run on the CPU (lavapipe): each invocation sums its own row of A against its
// column of B straight from memory, with no shared-memory tiles and no barriers, which a CPU
// implementation runs as switches between a work-group's invocations; the CPU's caches do
// what the shared tiles do on a GPU. On lavapipe (2 cores) the 2048^3 product went from 0.5 to
// 0.7 GFLOP/s with it: the barriers were not most of the cost, and lavapipe stays far below
// PoCL (124 GFLOP/s) on the same cores.
// hal-variant matmul_direct -DT=float -DBYTES=4 -DACC=float
#version 450
#include "types.glsl"
#include "common.glsl"

#include "matmul_args.glsl"

void main() {
  const uint col = gl_GlobalInvocationID.x, row = gl_GlobalInvocationID.y;
  if (row >= args.m || col >= args.n) return;
  const uint batch = gl_WorkGroupID.z;
  const uint a0 = args.buffer_offset[1] / BYTES + args.offset_a + batch * args.stride_a;
  const uint b0 = args.buffer_offset[2] / BYTES + args.offset_b + batch * args.stride_b;
  // Steps between consecutive k: along A's row (or column, transposed) and B's column (or row).
  const uint a_at = args.transpose_a != 0 ? a0 + row : a0 + row * args.lda;
  const uint a_step = args.transpose_a != 0 ? args.lda : 1u;
  const uint b_at = args.transpose_b != 0 ? b0 + col * args.ldb : b0 + col;
  const uint b_step = args.transpose_b != 0 ? 1u : args.ldb;
  const uint c_at =
      args.buffer_offset[0] / BYTES + args.offset_c + batch * args.stride_c + row * args.ldc + col;
  ACC sum = args.accumulate != 0u ? ACC(c_[c_at]) : ACC(0.0);
  for (uint p = 0; p < args.k; ++p)
    sum += ACC(a_[a_at + p * a_step]) * ACC(b_[b_at + p * b_step]);
  c_[c_at] = T(sum);
}
