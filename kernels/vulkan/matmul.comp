// C[m x n] (+)= op(A)[m x k] * op(B)[k x n], row-major, batched in z: 16 x 16 tiles of A and B
// staged through shared memory (src/ops's GemmDesc: offsets, leading dimensions and batch
// strides in elements; a transposed operand's memory holds the k x m or n x k matrix). f16
// products accumulate in f32, f64 in f64.
// hal-variant matmul -DT=float -DBYTES=4 -DACC=float
// hal-variant matmul_f16 -DT=float16_t -DBYTES=2 -DACC=float
// hal-variant matmul_f64 -DT=double -DBYTES=8 -DACC=double
#version 450
#include "types.glsl"
#include "common.glsl"

#include "matmul_args.glsl"

const uint TILE = 16;
shared ACC tile_a[TILE][TILE];
shared ACC tile_b[TILE][TILE];

void main() {
  const uint col = gl_GlobalInvocationID.x, row = gl_GlobalInvocationID.y;
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint batch = gl_WorkGroupID.z;
  const uint a0 = args.buffer_offset[1] / BYTES + args.offset_a + batch * args.stride_a;
  const uint b0 = args.buffer_offset[2] / BYTES + args.offset_b + batch * args.stride_b;
  const bool inside = row < args.m && col < args.n;
  const uint c_at =
      args.buffer_offset[0] / BYTES + args.offset_c + batch * args.stride_c + row * args.ldc + col;
  ACC sum = ACC(0.0);
  if (inside && args.accumulate != 0u) sum = ACC(c_[c_at]);
  for (uint t = 0; t < args.k; t += TILE) {
    // A(row, t + tx) and B(t + ty, col), zero past the edges.
    const uint ak = t + tx, bk = t + ty;
    ACC a = ACC(0.0), b = ACC(0.0);
    if (row < args.m && ak < args.k)
      a = ACC(args.transpose_a != 0 ? a_[a0 + ak * args.lda + row] : a_[a0 + row * args.lda + ak]);
    if (col < args.n && bk < args.k)
      b = ACC(args.transpose_b != 0 ? b_[b0 + col * args.ldb + bk] : b_[b0 + bk * args.ldb + col]);
    tile_a[ty][tx] = a;
    tile_b[ty][tx] = b;
    barrier();
    for (uint i = 0; i < TILE; ++i) sum += tile_a[ty][i] * tile_b[i][tx];
    barrier();
  }
  if (inside) c_[c_at] = T(sum);
}
