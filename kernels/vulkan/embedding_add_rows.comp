// embedding_backward's rows (kernels/ops/embedding.kernel says how the two passes work): item
// (i, c) of each head walks its chain of equal indices, adding column c of their gradient rows
// in order to its row's column c; an index outside [0, rows) adds nothing. The host runs the
// passes over chunks of positions, each adding to what the chunks before it left (the zeros
// filled first, then their sums): the CPU's order still. The walk takes HAL_UNROLL steps a
// round (common.glsl: lavapipe's 65535 rounds a shader); a chunk is 4 096 positions.
// hal-variant embedding_add_rows_f32_i32 -DT=float -DBYTES=4 -DI=int -DI_BYTES=4
// hal-variant embedding_add_rows_f32_i64 -DT=float -DBYTES=4 -DI=int64_t -DI_BYTES=8
// hal-variant embedding_add_rows_f64_i32 -DT=double -DBYTES=8 -DI=int -DI_BYTES=4
// hal-variant embedding_add_rows_f64_i64 -DT=double -DBYTES=8 -DI=int64_t -DI_BYTES=8
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "types.glsl"
#include "common.glsl"

layout(set = 0, binding = 0) buffer Out { T out_[]; };
layout(set = 0, binding = 1) readonly buffer Grad { T grad_[]; };
layout(set = 0, binding = 2) readonly buffer Indices { I indices_[]; };
layout(set = 0, binding = 3) readonly buffer Links { int links_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_out, offset_grad, offset_indices, dim, rows, n;
} args;

void main() {
  const uint item = linear_id();
  const uint n = args.n, dim = args.dim;
  if (item >= n * dim) return;
  const uint i = item / dim, c = item % dim;
  const uint links = args.buffer_offset[3] / 4u;
  const int link = links_[links + i];
  const I row = indices_[args.buffer_offset[2] / I_BYTES + args.offset_indices + i];
  if (link < 0 || row < I(0) || row >= I(args.rows)) return;
  const uint column = args.buffer_offset[1] / BYTES + args.offset_grad + c;
  const uint at = args.buffer_offset[0] / BYTES + args.offset_out + uint(row) * dim + c;
  T sum = out_[at];  // +0 at first (as the CPU starts: 0 + g makes -0 +0), then a partial sum
  sum += grad_[column + i * dim];
  uint j = uint(link);
  for (uint round = 0u; round < hal_rounds(n, 1u) && j < n; ++round) {
    [[unroll]] for (uint u = 0u; u < HAL_UNROLL; ++u) {
      if (j < n) {
        sum += grad_[column + j * dim];
        j = uint(-1 - links_[links + j]);
      }
    }
  }
  out_[at] = sum;
}
