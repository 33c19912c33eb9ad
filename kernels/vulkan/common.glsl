// Shared by hal's Vulkan kernels (docs/vulkan.md): the work-group size comes from
// specialization constants 100..102, set per pipeline by the backend; a long 1-d range is
// folded into rows of work groups, so a kernel's linear index is linear_id().
layout(local_size_x_id = 100, local_size_y_id = 101, local_size_z_id = 102) in;

uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}

// Each buffer argument's byte offset from the aligned start it is bound at (push constants
// words 0..7), and the first scalar at byte 32.
#define HAL_BUFFER_OFFSETS uint buffer_offset[8];

// lavapipe (llvmpipe) stops a shader's loops, with no error, once they have gone round 65535
// times in all (LP_MAX_TGSI_LOOP_ITERATIONS counts every loop of the shader together, nested or
// not). A loop over an operand's length therefore takes HAL_UNROLL strides a round, in an inner
// [[unroll]] loop of constant length that the compiler unrolls (it goes round no more): a work
// group's 128 lanes take 2^26 elements (128 MiB of f16, the most one binding reaches there) in
// 16384 rounds. The shaders that use it enable GL_EXT_control_flow_attributes.
const uint HAL_UNROLL = 32u;

// The rounds of HAL_UNROLL strides of `stride` that cover [0, n).
uint hal_rounds(uint n, uint stride) {
  const uint span = stride * HAL_UNROLL;
  return n / span + (n % span != 0u ? 1u : 0u);
}
