#include "backends/vulkan/vulkan_kernel.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace hal::vulkan {
namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;

// "ID=VALUE" with both numbers: a specialization constant.
std::pair<uint32_t, uint32_t> parse_constant(const std::string& define, const std::string& where) {
  const size_t equals = define.find('=');
  uint32_t id = 0, value = 0;
  const char* begin = define.data();
  const char* end = begin + define.size();
  bool ok = equals != std::string::npos;
  if (ok) {
    auto [id_end, id_error] = std::from_chars(begin, begin + equals, id);
    auto [value_end, value_error] = std::from_chars(begin + equals + 1, end, value);
    ok = id_error == std::errc() && id_end == begin + equals && value_error == std::errc() &&
         value_end == end && id < kLocalSizeXId;
  }
  if (!ok)
    throw Error(ErrorCode::InvalidArgument,
                where + ": define '" + define +
                    "' is not a specialization constant ID=VALUE (unsigned numbers, ids below " +
                    std::to_string(kLocalSizeXId) + ")");
  return {id, value};
}

// The entry point of `words` that a kernel named `name` runs: the one of that name, else the
// module's only compute entry point; NotFound naming those there are otherwise.
std::string entry_point(std::span<const uint32_t> words, const std::string& name,
                        const std::string& where) {
  const auto found = compute_entry_points(words);
  if (!found)
    throw Error(ErrorCode::CompileFailed, where +
                                              ": the SPIR-V module ends inside an instruction (" +
                                              std::to_string(words.size()) + " words)");
  const std::vector<std::string>& entries = *found;
  if (std::find(entries.begin(), entries.end(), name) != entries.end()) return name;
  if (entries.size() == 1) return entries.front();
  std::string listed;
  for (const std::string& entry : entries) listed += (listed.empty() ? "'" : ", '") + entry + "'";
  throw Error(ErrorCode::NotFound, where + ": no kernel '" + name +
                                       "' among the module's compute entry points (" +
                                       (entries.empty() ? "it has none" : listed) + ")");
}

}  // namespace

std::optional<std::vector<std::string>> compute_entry_points(std::span<const uint32_t> words) {
  constexpr uint32_t kOpEntryPoint = 15, kGlCompute = 5, kHeaderWords = 5;
  std::vector<std::string> out;
  for (size_t at = kHeaderWords; at < words.size();) {
    const uint32_t count = words[at] >> 16, opcode = words[at] & 0xffff;
    if (count == 0 || at + count > words.size()) return std::nullopt;
    // OpEntryPoint: model, function id, then the name as a NUL-terminated literal string.
    if (opcode == kOpEntryPoint && count >= 4 && words[at + 1] == kGlCompute) {
      const auto* bytes = reinterpret_cast<const char*>(&words[at + 3]);
      out.emplace_back(bytes, strnlen(bytes, (count - 3) * size_t{4}));
    }
    at += count;
  }
  return out;
}

CompiledKernel VulkanDevice::compile(const KernelSource& source, const CompileOptions& options) {
  const std::string where = describe(*this) + ": compile of kernel '" + source.name + "'";
  if (source.language != KernelLanguage::native)
    throw Error(
        ErrorCode::Unsupported,
        where + ": compiling kernels of " + std::string(to_string(source.language)) +
            " source is not supported: Vulkan devices take SPIR-V (KernelLanguage::native), "
            "and hal's portable dialect is not translated to it (docs/vulkan.md)");
  uint32_t magic = 0;
  if (source.code.size() >= 4) std::memcpy(&magic, source.code.data(), 4);
  if (source.code.size() % 4 != 0 || magic != kSpirvMagic)
    throw Error(ErrorCode::CompileFailed, where + ": the code is not a SPIR-V module (" +
                                              std::to_string(source.code.size()) +
                                              " bytes, no 0x07230203 magic number at the start)");
  std::vector<std::pair<uint32_t, uint32_t>> constants;
  for (const std::string& define : options.defines)
    constants.push_back(parse_constant(define, where));
  // Copied into words: std::string's bytes need not be 4-aligned.
  std::vector<uint32_t> words(source.code.size() / 4);
  std::memcpy(words.data(), source.code.data(), source.code.size());
  std::string entry = entry_point(words, source.name, where);
  auto info = make<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  info.codeSize = source.code.size();
  info.pCode = words.data();
  VkShaderModule module = VK_NULL_HANDLE;
  const VkResult result = api().vkCreateShaderModule(device_, &info, nullptr, &module);
  if (result != VK_SUCCESS)
    throw Error(result == VK_ERROR_OUT_OF_HOST_MEMORY || result == VK_ERROR_OUT_OF_DEVICE_MEMORY
                    ? ErrorCode::OutOfMemory
                    : ErrorCode::CompileFailed,
                where + ": vkCreateShaderModule failed: " + result_name(result),
                static_cast<int>(result));
  auto kernel = std::make_shared<VulkanKernel>(
      source.name, std::move(entry), std::static_pointer_cast<VulkanDevice>(shared_from_this()),
      module, std::move(constants));
  return {std::move(kernel), false};
}

VulkanKernel::VulkanKernel(std::string name, std::string entry,
                           std::shared_ptr<VulkanDevice> device, VkShaderModule module,
                           std::vector<std::pair<uint32_t, uint32_t>> constants)
    : KernelImpl(std::move(name), device.get()),
      entry_(std::move(entry)),
      device_(std::move(device)),
      module_(module),
      constants_(std::move(constants)) {}

VulkanKernel::~VulkanKernel() {
  if (process_exiting()) return;
  for (auto& [local, pipeline] : pipelines_)
    device_->api().vkDestroyPipeline(device_->native(), pipeline, nullptr);
  device_->api().vkDestroyShaderModule(device_->native(), module_, nullptr);
}

VkPipeline VulkanKernel::pipeline(const std::array<uint32_t, 3>& local) {
  std::lock_guard lock(mutex_);
  if (auto found = pipelines_.find(local); found != pipelines_.end()) return found->second;
  std::vector<VkSpecializationMapEntry> entries;
  std::vector<uint32_t> data;
  for (const auto& [id, value] : constants_) {
    entries.push_back({id, static_cast<uint32_t>(data.size() * 4), 4});
    data.push_back(value);
  }
  for (uint32_t d = 0; d < 3; ++d) {
    entries.push_back({kLocalSizeXId + d, static_cast<uint32_t>(data.size() * 4), 4});
    data.push_back(local[d]);
  }
  VkSpecializationInfo specialization{static_cast<uint32_t>(entries.size()), entries.data(),
                                      data.size() * 4, data.data()};
  auto info = make<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  info.stage =
      make<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module_;
  info.stage.pName = entry_.c_str();
  info.stage.pSpecializationInfo = &specialization;
  info.layout = device_->pipeline_layout();
  VkPipeline pipeline = VK_NULL_HANDLE;
  const VkResult result = device_->api().vkCreateComputePipelines(
      device_->native(), device_->pipeline_cache(), 1, &info, nullptr, &pipeline);
  if (result != VK_SUCCESS)
    throw Error(ErrorCode::CompileFailed,
                describe(*device_) + ": kernel '" + name() + "' for work groups of " +
                    std::to_string(local[0]) + "x" + std::to_string(local[1]) + "x" +
                    std::to_string(local[2]) +
                    ": vkCreateComputePipelines failed: " + result_name(result),
                static_cast<int>(result));
  pipelines_.emplace(local, pipeline);
  device_->save_pipeline_cache();
  return pipeline;
}

}  // namespace hal::vulkan
