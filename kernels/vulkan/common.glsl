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
