// Launches on a Vulkan stream: the arguments become pushed descriptors (buffers) and push
// constants (each buffer's byte offset, then the scalars), and the range becomes work groups.
#include <algorithm>
#include <array>
#include <cstring>

#include "backends/vulkan/vulkan_buffer.hpp"
#include "backends/vulkan/vulkan_kernel.hpp"
#include "backends/vulkan/vulkan_limits.hpp"
#include "backends/vulkan/vulkan_stream.hpp"

namespace hal::vulkan {
namespace {

const VulkanDevice& vulkan_device(const DeviceImpl& device) {
  const auto* vulkan = dynamic_cast<const VulkanDevice*>(&device);
  if (vulkan == nullptr)
    throw Error(ErrorCode::Internal, device.info().id + " is not a Vulkan device");
  return *vulkan;
}

// The work-group size when the launch leaves it to the backend.
std::array<uint32_t, 3> default_local(const LaunchConfig& config) {
  if (config.global[1] == 1 && config.global[2] == 1) return {64, 1, 1};
  if (config.global[2] == 1) return {16, 16, 1};
  return {8, 8, 4};
}

}  // namespace

VulkanLimits vulkan_limits(const Device& device) {
  const VkDeviceTraits& traits = vulkan_device(*device.impl()).traits();
  return {traits.max_storage_buffer_range,
          traits.storage_offset_alignment,
          {traits.max_group_count[0], traits.max_group_count[1], traits.max_group_count[2]}};
}

uint64_t vulkan_bound_bytes(const Buffer& buffer, uint64_t end) {
  const BufferImpl& impl = *buffer.impl();
  const VkDeviceTraits& traits = vulkan_device(impl.device()).traits();
  // As launch binds it: from the buffer's offset in its segment rounded down to the alignment.
  return region_of(impl, 0).offset % traits.storage_offset_alignment + end;
}

void VulkanStream::launch(const std::shared_ptr<KernelImpl>& kernel, const LaunchConfig& config,
                          std::span<const KernelArg> args) {
  const VkDeviceTraits& traits = device_->traits();
  // Messages are built only on failure: launch is on the hot path.
  auto what = [&] { return "launch of '" + kernel->name() + "'"; };
  std::array<uint32_t, 3> local = config.local;
  if (local[0] == 0 && local[1] == 0 && local[2] == 0) local = default_local(config);
  for (uint32_t& size : local) size = std::max<uint32_t>(size, 1);
  if (config.shared_bytes != 0)
    throw Error(ErrorCode::Unsupported,
                where(what()) +
                    ": Vulkan kernels declare their shared memory in the shader; "
                    "dynamic shared_bytes is not supported");
  const uint64_t invocations = uint64_t{local[0]} * local[1] * local[2];
  if (invocations > device_->info().limits.max_work_group_size)
    throw Error(ErrorCode::InvalidArgument,
                where(what()) + ": work groups of " + std::to_string(invocations) +
                    " items pass the device's " +
                    std::to_string(device_->info().limits.max_work_group_size));
  std::array<uint64_t, 3> groups{};
  for (int d = 0; d < 3; ++d) groups[d] = (config.global[d] + local[d] - 1) / local[d];
  // A long 1-d range folds into rows of the largest group count x allows; the kernels compute
  // their index as x + y * (groups x * local x) and check it against their count.
  if (groups[1] == 1 && groups[2] == 1 && groups[0] > traits.max_group_count[0]) {
    groups[1] = (groups[0] + traits.max_group_count[0] - 1) / traits.max_group_count[0];
    groups[0] = traits.max_group_count[0];
  }
  for (int d = 0; d < 3; ++d)
    if (groups[d] > traits.max_group_count[d])
      throw Error(ErrorCode::InvalidArgument, where(what()) + ": " + std::to_string(groups[d]) +
                                                  " work groups in dimension " + std::to_string(d) +
                                                  " pass the device's " +
                                                  std::to_string(traits.max_group_count[d]));

  std::array<VkDescriptorBufferInfo, kMaxBufferArgs> buffers{};
  size_t buffer_count = 0;
  std::array<unsigned char, kPushConstantBytes> constants{};
  size_t scalar_at = kScalarBase;
  std::vector<Ref> refs{kernel};
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg& arg = args[i];
    switch (arg.kind()) {
      case KernelArg::Kind::buffer: {
        if (buffer_count == kMaxBufferArgs)
          throw Error(ErrorCode::InvalidArgument, where(what()) + ": more than " +
                                                      std::to_string(kMaxBufferArgs) +
                                                      " buffer arguments");
        const BufferPtr& buffer = arg.buffer().impl();
        const VkRegion region = region_of(*buffer, arg.offset());
        // Bound from an aligned offset; the shader adds the rest, pushed as a constant.
        const VkDeviceSize base =
            region.offset / traits.storage_offset_alignment * traits.storage_offset_alignment;
        const uint64_t rest = region.offset - base;
        // At most what one binding may span: buffers are pieces of larger segments, whose rest
        // the shader does not need. Past it reads give 0 and writes are lost, so the ops check
        // beforehand that their shaders address no further (vulkan_limits.hpp).
        const VkDeviceSize range =
            std::min<VkDeviceSize>(region.root->size() - base, traits.max_storage_buffer_range);
        const auto rest32 = static_cast<uint32_t>(rest);
        std::memcpy(constants.data() + 4 * buffer_count, &rest32, 4);
        buffers[buffer_count++] = {region.root->native(), base, range};
        refs.push_back(buffer);
        break;
      }
      case KernelArg::Kind::scalar: {
        const size_t size = arg.scalar_size();
        scalar_at = (scalar_at + size - 1) / size * size;  // std430: aligned to its size
        if (scalar_at + size > kPushConstantBytes)
          throw Error(ErrorCode::InvalidArgument,
                      where(what()) + ": the scalar arguments pass the " +
                          std::to_string(kPushConstantBytes - kScalarBase) +
                          " bytes of push constants hal's Vulkan kernels take (argument " +
                          std::to_string(i) + ")");
        std::memcpy(constants.data() + scalar_at, arg.scalar_data(), size);
        scalar_at += size;
        break;
      }
      case KernelArg::Kind::local_memory:
        throw Error(ErrorCode::Unsupported,
                    where(what()) + ": argument " + std::to_string(i) +
                        " is local memory; Vulkan kernels declare shared memory in the shader");
    }
  }
  const VkPipeline pipeline = static_cast<VulkanKernel&>(*kernel).pipeline(local);
  const VkPipelineLayout layout = device_->pipeline_layout();
  const auto push_descriptors = device_->push_descriptor_set();
  const CommandSpan span{"kernel", kernel->name(), trace::detail::launch_args(config)};
  device_command(std::move(refs), span, [&](VkCommandBuffer commands) {
    api_.vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    std::array<VkWriteDescriptorSet, kMaxBufferArgs> writes{};
    for (size_t b = 0; b < buffer_count; ++b) {
      writes[b] = make<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
      writes[b].dstBinding = static_cast<uint32_t>(b);
      writes[b].descriptorCount = 1;
      writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[b].pBufferInfo = &buffers[b];
    }
    if (buffer_count != 0)
      push_descriptors(commands, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0,
                       static_cast<uint32_t>(buffer_count), writes.data());
    api_.vkCmdPushConstants(commands, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes,
                            constants.data());
    api_.vkCmdDispatch(commands, static_cast<uint32_t>(groups[0]), static_cast<uint32_t>(groups[1]),
                       static_cast<uint32_t>(groups[2]));
  });
}

}  // namespace hal::vulkan
