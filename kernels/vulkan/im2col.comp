// The columns of a convolution (im2col): cols[n][c * K + k][p] = x[n][c][in(p, k)], or 0 where
// window offset k of output position p falls in the padding. Up to 3 spatial dimensions,
// padded at the front with size 1; K and P are the products of the kernel's and the output's
// sizes. src/ops/vulkan_conv.cpp multiplies the weights by the result.
// hal-variant im2col -DT=float -DBYTES=4
// hal-variant im2col_f16 -DT=float16_t -DBYTES=2
// hal-variant im2col_f64 -DT=double -DBYTES=8
#version 450
#include "types.glsl"
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Cols { T cols_[]; };
layout(set = 0, binding = 1) readonly buffer X { T x_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_x, count, channels;
  uint in_size[3], out_size[3], kernel[3], stride[3], dilation[3], pad[3];
} args;

void main() {
  const uint i = linear_id();
  if (i >= args.count) return;
  const uint positions = args.out_size[0] * args.out_size[1] * args.out_size[2];
  const uint offsets = args.kernel[0] * args.kernel[1] * args.kernel[2];
  uint p = i % positions, rest = i / positions;
  uint k = rest % offsets;
  rest /= offsets;  // n * channels + c
  uint at = rest;
  bool inside = true;
  for (int d = 0; d < 3; ++d) {
    // Row-major: dimension 2 varies fastest.
    const uint p_stride = d == 0 ? args.out_size[1] * args.out_size[2] : (d == 1 ? args.out_size[2] : 1);
    const uint k_stride = d == 0 ? args.kernel[1] * args.kernel[2] : (d == 1 ? args.kernel[2] : 1);
    const uint o = (p / p_stride) % args.out_size[d];
    const uint w = (k / k_stride) % args.kernel[d];
    const int position = int(o * args.stride[d] + w * args.dilation[d]) - int(args.pad[d]);
    inside = inside && position >= 0 && position < int(args.in_size[d]);
    at = at * args.in_size[d] + uint(max(position, 0));
  }
  cols_[args.buffer_offset[0] / BYTES + i] =
      inside ? x_[args.buffer_offset[1] / BYTES + args.offset_x + at] : T(0);
}
