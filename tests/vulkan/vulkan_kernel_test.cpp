// Kernels on a Vulkan device: SPIR-V compiled with specialization constants, launched with
// buffers at offsets and scalars, the pipeline cache on disk, and what is refused.
#include <cstring>
#include <filesystem>

#include "backends/vulkan/vulkan_kernel.hpp"
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

// A SPIR-V header (magic, version 1.0, generator, bound, schema) and an OpEntryPoint GLCompute
// per name: no more than the entry-point lookup reads.
std::string module_with_entry_points(const std::vector<std::string>& names) {
  std::vector<uint32_t> words{0x07230203, 0x00010000, 0, 100, 0};
  uint32_t id = 1;
  for (const std::string& name : names) {
    const size_t name_words = name.size() / 4 + 1;  // with its NUL
    words.push_back(static_cast<uint32_t>((3 + name_words) << 16 | 15));
    words.push_back(5);  // GLCompute
    words.push_back(id++);
    std::vector<uint32_t> text(name_words, 0);
    std::memcpy(text.data(), name.data(), name.size());
    words.insert(words.end(), text.begin(), text.end());
  }
  return std::string(reinterpret_cast<const char*>(words.data()), words.size() * 4);
}

std::vector<uint32_t> words_of(const std::string& code) {
  std::vector<uint32_t> words(code.size() / 4);
  std::memcpy(words.data(), code.data(), code.size());
  return words;
}

TEST_F(VulkanKernelTest, AKernelIsNamedByTheCallerAndRunsTheModulesEntryPoint) {
  // glslc names every shader's entry point "main": a kernel may carry its own name (launch
  // errors and traces show it) and run the module's only entry point.
  EXPECT_EQ(vulkan::compute_entry_points(words_of(binary_shader().code)),
            std::vector<std::string>{"main"});
  const Kernel kernel = device.compile({"add_f32", binary_shader().code, KernelLanguage::native},
                                       {.defines = {"0=0", "1=0"}});
  EXPECT_EQ(kernel.name(), "add_f32");
  std::vector<float> a{1, 2, 3, 4}, b{10, 20, 30, 40}, out(4);
  Stream stream = device.create_stream();
  Buffer da = device.allocate(16), db = device.allocate(16), dout = device.allocate(16);
  stream.copy_from_host(da, a.data(), 16);
  stream.copy_from_host(db, b.data(), 16);
  stream.launch(kernel, LaunchConfig::linear(4), {dout, da, db, 0u, 0u, 4u});
  stream.copy_to_host(out.data(), dout, 16);
  stream.synchronize();
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 44}));

  // Several entry points: the name picks one, and a name that is none of them is NotFound.
  const std::string two = module_with_entry_points({"first", "second_one"});
  EXPECT_EQ(vulkan::compute_entry_points(words_of(two)),
            (std::vector<std::string>{"first", "second_one"}));
  expect_error(
      [&] {
        device.compile({"third", two, KernelLanguage::native});
      },
      ErrorCode::NotFound,
      {"vulkan:0", "no kernel 'third'", "compute entry points ('first', 'second_one')"});
  expect_error(
      [&] {
        device.compile({"third", module_with_entry_points({}), KernelLanguage::native});
      },
      ErrorCode::NotFound, {"no kernel 'third'", "(it has none)"});
  // An instruction that runs past the end of the module.
  std::string cut = two.substr(0, two.size() - 4);
  EXPECT_EQ(vulkan::compute_entry_points(words_of(cut)), std::nullopt);
  expect_error(
      [&] {
        device.compile({"first", cut, KernelLanguage::native});
      },
      ErrorCode::CompileFailed, {"vulkan:0", "ends inside an instruction"});
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
