// Kernels on a Vulkan device: SPIR-V compiled with specialization constants, launched with
// buffers at offsets and scalars, the pipeline cache on disk, and what is refused.
#include <filesystem>

#include "backends/vulkan/vulkan_shaders.hpp"
#include "core/kernel_disk_cache.hpp"
#include "vulkan_fixture.hpp"

namespace hal::test {
namespace {

using VulkanKernelTest = VulkanTest;

KernelSource binary_shader() {
  return {"main", std::string(vulkan::vulkan_shader("binary")), KernelLanguage::native};
}

TEST_F(VulkanKernelTest, LaunchesWithSpecializationConstantsOffsetsAndFoldedRanges) {
  // Binary op 2 (mul), flat; 70000 work groups of 1 pass lavapipe's 65535 in x, so the range
  // folds into rows.
  const Kernel kernel = device.compile(binary_shader(), {.defines = {"0=2", "1=0"}});
  for (uint32_t n : {1u, 1000u, 70000u}) {
    std::vector<float> a(n + 3), b(n), out(n);
    for (uint32_t i = 0; i < n + 3; ++i) a[i] = static_cast<float>(i) * 0.5f;
    for (uint32_t i = 0; i < n; ++i) b[i] = static_cast<float>(i % 7);
    Stream stream = device.create_stream();
    Buffer da = device.allocate(a.size() * 4), db = device.allocate(n * 4 + 12),
           dout = device.allocate(n * 4);
    stream.copy_from_host(da, a.data(), a.size() * 4);
    stream.copy_from_host(db, b.data(), n * 4, 12);  // the buffer argument's offset: 12 bytes
    LaunchConfig config = LaunchConfig::linear(n);
    if (n == 70000) config.local = {1, 1, 1};
    // a read from element 3 (a scalar), b from its buffer offset.
    stream.launch(kernel, config, {dout, da, KernelArg(db, 12), 3u, 0u, n});
    stream.copy_to_host(out.data(), dout, n * 4);
    stream.synchronize();
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i + 3] * b[i]) << n << ": " << i;
  }
}

TEST_F(VulkanKernelTest, PipelineCacheIsWrittenNextToTheKernelCache) {
  const std::filesystem::path root = detail::cache_root();
  if (root.empty()) GTEST_SKIP() << "no cache directory (HAL_CACHE_DIR, HOME)";
  const Kernel kernel = device.compile(binary_shader(), {.defines = {"0=0", "1=1"}});
  Stream stream = device.create_stream();
  Buffer x = device.allocate(64);
  stream.launch(kernel, LaunchConfig::linear(1), {x, x, x, 0u, 0u, 0u});
  stream.synchronize();
  const auto file = root / "kernels" / "vulkan" / ("pipelines-" + device.info().uuid + ".bin");
  ASSERT_TRUE(std::filesystem::exists(file)) << file;
  EXPECT_GT(std::filesystem::file_size(file), 16u);  // at least the driver's header
}

TEST_F(VulkanKernelTest, RefusesWhatItCannotRun) {
  expect_error(
      [&] {
        device.compile({"scale", "KERNEL void scale(GLOBAL float* x) {}"});
      },
      ErrorCode::Unsupported, {"vulkan:0", "SPIR-V", "portable"});
  expect_error(
      [&] {
        device.compile({"main", "not spir-v", KernelLanguage::native});
      },
      ErrorCode::CompileFailed, {"vulkan:0", "not a SPIR-V module"});
  expect_error([&] { device.compile(binary_shader(), {.defines = {"OP=1"}}); },
               ErrorCode::InvalidArgument, {"vulkan:0", "'OP=1'", "specialization constant"});
  const Kernel kernel = device.compile(binary_shader(), {.defines = {"0=0", "1=0"}});
  Stream stream = device.create_stream();
  Buffer x = device.allocate(64);
  expect_error(
      [&] {
        stream.launch(kernel, LaunchConfig::linear(1), {x, KernelArg::local_memory(64)});
      },
      ErrorCode::Unsupported, {"vulkan:0", "local memory"});
  LaunchConfig huge = LaunchConfig::linear(4096);
  huge.local = {4096, 1, 1};
  expect_error(
      [&] {
        stream.launch(kernel, huge, {x, x, x, 0u, 0u, 0u});
      },
      ErrorCode::InvalidArgument, {"vulkan:0", "work groups of 4096"});
  stream.synchronize();
}

}  // namespace
}  // namespace hal::test
