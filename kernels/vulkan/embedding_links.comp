// embedding_backward's links (kernels/ops/embedding.kernel says how the two passes work): for
// position i, the next position holding the same index (n where none), stored as it is at a
// head (the index's first position) and as -1 - next elsewhere, within one chunk of positions
// (embedding_add_rows.comp). 32-bit links: Vulkan shaders index with 32 bits. Each scan goes
// HAL_UNROLL positions a round (common.glsl: lavapipe's 65535 rounds a shader; the scans of a
// chunk of 4 096 positions take far fewer).
// hal-variant embedding_links_i32 -DI=int -DI_BYTES=4
// hal-variant embedding_links_i64 -DI=int64_t -DI_BYTES=8
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "types.glsl"
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Links { int links_[]; };
layout(set = 0, binding = 1) readonly buffer Indices { I indices_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_indices, n;
} args;

void main() {
  const uint i = linear_id();
  const uint n = args.n;
  if (i >= n) return;
  const uint at = args.buffer_offset[1] / I_BYTES + args.offset_indices;
  const I mine = indices_[at + i];
  uint next = n;
  // Positions i + 1, i + 2, ... until a match.
  const uint after = n - 1u - i;
  bool found = false;
  for (uint round = 0u; round < hal_rounds(after, 1u) && !found; ++round) {
    [[unroll]] for (uint u = 0u; u < HAL_UNROLL; ++u) {
      const uint step = round * HAL_UNROLL + u;
      if (!found && step < after && indices_[at + i + 1u + step] == mine) {
        next = i + 1u + step;
        found = true;
      }
    }
  }
  // Positions i - 1, i - 2, ... until a match.
  bool head = true;
  for (uint round = 0u; round < hal_rounds(i, 1u) && head; ++round) {
    [[unroll]] for (uint u = 0u; u < HAL_UNROLL; ++u) {
      const uint step = round * HAL_UNROLL + u;
      if (head && step < i && indices_[at + i - 1u - step] == mine) head = false;
    }
  }
  links_[args.buffer_offset[0] / 4u + i] = head ? int(next) : -1 - int(next);
}
