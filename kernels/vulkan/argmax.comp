// argmax, one output per work group of 128, laid out as reduce.comp: the position (row major
// over the reduced dimensions) of the largest element, the first one on ties, and the first NaN
// where there is one. The i64 result is written as two 32-bit words (low, high). f16 compares
// in f32.
// hal-variant argmax -DT=float -DBYTES=4 -DACC=float -DFLOATING
// hal-variant argmax_f16 -DT=float16_t -DBYTES=2 -DACC=float -DFLOATING
// hal-variant argmax_f64 -DT=double -DBYTES=8 -DACC=double -DFLOATING
// hal-variant argmax_i32 -DT=int -DBYTES=4 -DACC=int
// hal-variant argmax_i64 -DT=int64_t -DBYTES=8 -DACC=int64_t
// hal-variant argmax_u64 -DT=uint64_t -DBYTES=8 -DACC=uint64_t
// hal-variant argmax_u32 -DT=uint -DBYTES=4 -DACC=uint
// hal-variant argmax_i16 -DT=int16_t -DBYTES=2 -DACC=int
// hal-variant argmax_u16 -DT=uint16_t -DBYTES=2 -DACC=uint
// hal-variant argmax_i8 -DT=int8_t -DBYTES=1 -DACC=int
// hal-variant argmax_u8 -DT=uint8_t -DBYTES=1 -DACC=uint
#version 450
#include "types.glsl"
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#ifdef FLOATING
#define IS_NAN(x) isnan(x)
#else
#define IS_NAN(x) false
#endif

layout(set = 0, binding = 0) writeonly buffer Out { uint out_[]; };
layout(set = 0, binding = 1) readonly buffer X { T x_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset, count, outputs;
  uint kept[4];
  uint kept_stride[4];
  uint reduced[4];
  uint reduced_stride[4];
} args;

shared ACC best_value[128];
shared uint best_index[128];

// Whether (a, ia) beats (b, ib).
bool beats(ACC a, uint ia, ACC b, uint ib) {
  if (ia == 0xffffffffu) return false;  // no element yet
  if (ib == 0xffffffffu) return true;
  if (IS_NAN(a) != IS_NAN(b)) return IS_NAN(a);
  if (!IS_NAN(a) && a != b) return a > b;
  return ia < ib;
}

void main() {
  const uint o = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (o >= args.outputs) return;  // the whole group leaves together
  uint base = args.buffer_offset[1] / BYTES + args.offset;
  uint rest = o;
  for (int d = 3; d >= 0; --d) {
    base += (rest % args.kept[d]) * args.kept_stride[d];
    rest /= args.kept[d];
  }
  const uint lane = gl_LocalInvocationID.x;
  ACC value = ACC(0);
  uint index = 0xffffffffu;
  // r = lane, lane + 128, ... below count, in order, HAL_UNROLL a round (common.glsl).
  const uint rounds = hal_rounds(args.count, 128u);
  for (uint round = 0u; round < rounds; ++round) {
    const uint first = round * 128u * HAL_UNROLL;
    [[unroll]] for (uint u = 0u; u < HAL_UNROLL; ++u) {
      const uint step = u * 128u + lane;
      if (step < args.count - first) {
        const uint r = first + step;
        uint at = base, left = r;
        for (int d = 3; d >= 0; --d) {
          at += (left % args.reduced[d]) * args.reduced_stride[d];
          left /= args.reduced[d];
        }
        const ACC v = ACC(x_[at]);
        if (beats(v, r, value, index)) {
          value = v;
          index = r;
        }
      }
    }
  }
  best_value[lane] = value;
  best_index[lane] = index;
  barrier();
  for (uint width = 64; width > 0; width /= 2) {
    if (lane < width &&
        beats(best_value[lane + width], best_index[lane + width], best_value[lane], best_index[lane])) {
      best_value[lane] = best_value[lane + width];
      best_index[lane] = best_index[lane + width];
    }
    barrier();
  }
  if (lane == 0) {
    const uint at = args.buffer_offset[0] / 4 + 2 * o;
    out_[at] = best_index[0];
    out_[at + 1] = 0;
  }
}
