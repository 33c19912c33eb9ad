// OpenCL specifics: device facts against the driver's own answers, compile errors with the
// build log, the on-disk kernel cache, local memory, 2-d launches, views, many threads
// launching one kernel, and traces of when commands ran on the device. The device suites of
// tests/core run on OpenCL devices as well.
#define CL_TARGET_OPENCL_VERSION 300
// As hal's cl_api.hpp, which the device's header below brings: its table names 1.2 functions.
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <thread>

#include "backends/opencl/opencl_device.hpp"
#include "backends/opencl/opencl_kernel_params.hpp"
#include "hal/cache.hpp"
#include "hal/ops.hpp"
#include "test_util.hpp"
#include "trace_json.hpp"

namespace hal::test {
namespace {

namespace fs = std::filesystem;

class OpenClTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto found = backend_devices("opencl");
    if (found.empty()) GTEST_SKIP() << "no OpenCL device: " << backend_reason("opencl");
    device = found.front();
  }
  Device device;
};

// A source no earlier run has compiled, so that the first compile is a true cache miss.
std::string unique_scale_source() {
  static int counter = 0;
  return "// " + std::to_string(::getpid()) + "-" + std::to_string(++counter) + "-" +
         std::to_string(std::random_device{}()) + R"(
KERNEL void scale(GLOBAL float* x, float a, uint n) {
  size_t i = global_id(0);
  if (i < n) x[i] *= a;
}
)";
}

// Runs scale(x, 3) over 1..n and checks it.
void expect_scale_works(const Device& device, const Kernel& kernel) {
  const uint32_t n = 257;
  std::vector<float> data(n);
  std::iota(data.begin(), data.end(), 1.0f);
  Stream stream = device.create_stream();
  Buffer buffer = device.allocate(n * 4);
  stream.copy_from_host(buffer, data.data(), n * 4);
  stream.launch(kernel, LaunchConfig::linear(n), {buffer, 3.0f, n});
  stream.copy_to_host(data.data(), buffer, n * 4);
  stream.synchronize();
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(data[i], 3.0f * static_cast<float>(i + 1)) << i;
}

std::string raw_string(cl_device_id device, cl_device_info what) {
  size_t size = 0;
  clGetDeviceInfo(device, what, 0, nullptr, &size);
  std::string text(size, '\0');
  clGetDeviceInfo(device, what, size, text.data(), nullptr);
  while (!text.empty() && (text.back() == '\0' || text.back() == ' ')) text.pop_back();
  return text;
}

template <class T>
T raw_value(cl_device_id device, cl_device_info what) {
  T value{};
  clGetDeviceInfo(device, what, sizeof value, &value, nullptr);
  return value;
}

TEST_F(OpenClTest, DeviceFactsMatchTheDriver) {
  // The reference: every device of every platform, asked directly, in hal's order.
  cl_uint platform_count = 0;
  ASSERT_EQ(clGetPlatformIDs(0, nullptr, &platform_count), CL_SUCCESS);
  std::vector<cl_platform_id> platforms(platform_count);
  clGetPlatformIDs(platform_count, platforms.data(), nullptr);
  std::vector<cl_device_id> reference;
  for (cl_platform_id platform : platforms) {
    cl_uint count = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS) continue;
    std::vector<cl_device_id> ids(count);
    clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr);
    reference.insert(reference.end(), ids.begin(), ids.end());
  }
  const auto hal_devices = backend_devices("opencl");
  ASSERT_EQ(hal_devices.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    const DeviceInfo& info = hal_devices[i].info();
    cl_device_id raw = reference[i];
    SCOPED_TRACE(info.id);
    EXPECT_EQ(info.id, "opencl:" + std::to_string(i));
    EXPECT_EQ(info.name, raw_string(raw, CL_DEVICE_NAME));
    EXPECT_EQ(info.driver_version, raw_string(raw, CL_DRIVER_VERSION));
    EXPECT_EQ(info.compute_units, raw_value<cl_uint>(raw, CL_DEVICE_MAX_COMPUTE_UNITS));
    EXPECT_EQ(info.clock_mhz, raw_value<cl_uint>(raw, CL_DEVICE_MAX_CLOCK_FREQUENCY));
    EXPECT_EQ(info.memory_total.bytes, raw_value<cl_ulong>(raw, CL_DEVICE_GLOBAL_MEM_SIZE));
    EXPECT_EQ(info.limits.max_allocation_bytes,
              raw_value<cl_ulong>(raw, CL_DEVICE_MAX_MEM_ALLOC_SIZE));
    EXPECT_EQ(info.limits.max_work_group_size,
              raw_value<size_t>(raw, CL_DEVICE_MAX_WORK_GROUP_SIZE));
    EXPECT_EQ(info.limits.max_shared_memory_bytes,
              raw_value<cl_ulong>(raw, CL_DEVICE_LOCAL_MEM_SIZE));
    const auto type = raw_value<cl_device_type>(raw, CL_DEVICE_TYPE);
    EXPECT_EQ(info.kind, (type & CL_DEVICE_TYPE_GPU)   ? DeviceKind::gpu
                         : (type & CL_DEVICE_TYPE_CPU) ? DeviceKind::cpu
                                                       : DeviceKind::accelerator);
    const std::string extensions = raw_string(raw, CL_DEVICE_EXTENSIONS);
    EXPECT_EQ(info.has_feature(feature::kFp64),
              extensions.find("cl_khr_fp64") != std::string::npos ||
                  raw_value<cl_device_fp_config>(raw, CL_DEVICE_DOUBLE_FP_CONFIG) != 0);
    EXPECT_EQ(info.supports(DType::f64), info.has_feature(feature::kFp64));
    EXPECT_EQ(info.has_feature(feature::kFp16),
              extensions.find("cl_khr_fp16") != std::string::npos);
    EXPECT_TRUE(info.has_feature("cl_khr_byte_addressable_store") ||
                extensions.find("cl_khr_byte_addressable_store") == std::string::npos);
    EXPECT_TRUE(info.has_feature(feature::kPortableKernels));
    EXPECT_TRUE(std::is_sorted(info.features.begin(), info.features.end()));
    EXPECT_EQ(info.uuid.size(), 36u);
    EXPECT_FALSE(info.vendor.empty());
    EXPECT_FALSE(info.architecture.empty());
  }
}

TEST_F(OpenClTest, CompileFailuresCarryTheBuildLogTheKernelAndTheDevice) {
  const std::string broken = R"(
KERNEL void broken(GLOBAL float* x) {
  x[0] = undeclared_thing + 1.0f;
}
)";
  expect_error(
      [&] {
        device.compile({"broken", broken}, {.disk_cache = false});
      },
      ErrorCode::CompileFailed,
      {"portable kernel 'broken'", device.id(), "build log", "undeclared_thing"});
  // OpenCL C does not get the prelude: KERNEL means nothing there.
  const std::string portable_only = "KERNEL void k(GLOBAL int* x) { x[0] = 1; }";
  expect_error(
      [&] {
        device.compile({"k", portable_only, KernelLanguage::opencl_c});
      },
      ErrorCode::CompileFailed, {"opencl_c kernel 'k'", "build log"});
  // A failed compile leaves the device usable.
  expect_scale_works(device, device.compile({"scale", unique_scale_source()}));
}

TEST_F(OpenClTest, BadCompileRequestsAreRefusedByName) {
  const std::string source = unique_scale_source();
  expect_error(
      [&] {
        device.compile({"no_such_kernel", source});
      },
      ErrorCode::NotFound, {"no kernel 'no_such_kernel'", "it has: scale"});
  expect_error(
      [&] {
        device.compile({"scale", source, KernelLanguage::cuda});
      },
      ErrorCode::Unsupported, {device.id(), "CUDA C++"});
  expect_error([&] { device.compile({"", source}); }, ErrorCode::InvalidArgument, {"no name"});
  expect_error([&] { device.compile({"scale", ""}); }, ErrorCode::InvalidArgument, {"empty"});
  expect_error(
      [&] {
        device.compile({"scale", source}, {.defines = {"A B"}});
      },
      ErrorCode::InvalidArgument, {"define 'A B'"});
  expect_error(
      [&] {
        device.compile({"scale", source}, {.flags = "-no-such-flag"});
      },
      ErrorCode::CompileFailed, {"scale", "-no-such-flag"});
}

TEST_F(OpenClTest, DefinesReachTheCompiler) {
  const std::string source = R"(
KERNEL void fill_value(GLOBAL int* x) { x[global_id(0)] = VALUE * 2; }
)";
  for (int value : {3, 21}) {
    Kernel kernel =
        device.compile({"fill_value", source}, {.defines = {"VALUE=" + std::to_string(value)}});
    Stream stream = device.create_stream();
    Buffer buffer = device.allocate(16);
    int out[4] = {};
    stream.launch(kernel, LaunchConfig::linear(4), {buffer});
    stream.copy_to_host(out, buffer, sizeof out);
    stream.synchronize();
    for (int v : out) EXPECT_EQ(v, value * 2);
  }
}

TEST_F(OpenClTest, TheDiskCacheServesALaterCompile) {
  ScopedCacheDir cache("opencl");
  const std::string source = unique_scale_source();
  Kernel cold = device.compile({"scale", source});
  EXPECT_EQ(cold.origin(), KernelOrigin::compiled);
  ASSERT_EQ(cache.entries().size(), 1u);
  device.clear_kernel_cache();  // as a new process would start
  Kernel warm = device.compile({"scale", source});
  EXPECT_EQ(warm.origin(), KernelOrigin::disk_cache);
  expect_scale_works(device, warm);
  // Another option set is another program.
  device.clear_kernel_cache();
  EXPECT_EQ(device.compile({"scale", source}, {.defines = {"X=1"}}).origin(),
            KernelOrigin::compiled);
  EXPECT_EQ(cache.entries().size(), 2u);
}

// hal::kernel_build_stats counts each build by where it came from, with its time; a kernel the
// process already holds is not a build. (Tests run one at a time in this process.)
TEST_F(OpenClTest, KernelBuildStatsCountCompilesAndDiskCacheLoads) {
  ScopedCacheDir cache("opencl");
  const std::string source = unique_scale_source();
  const KernelBuildStats before = kernel_build_stats();
  (void)device.compile({"scale", source});
  (void)device.compile({"scale", source});  // from memory: no build
  const KernelBuildStats compiled = kernel_build_stats();
  EXPECT_EQ(compiled.compiled, before.compiled + 1);
  EXPECT_GT(compiled.compile_seconds, before.compile_seconds);
  EXPECT_EQ(compiled.from_disk, before.from_disk);
  device.clear_kernel_cache();
  (void)device.compile({"scale", source});
  const KernelBuildStats loaded = kernel_build_stats();
  EXPECT_EQ(loaded.compiled, compiled.compiled);
  EXPECT_EQ(loaded.from_disk, compiled.from_disk + 1);
  EXPECT_GT(loaded.disk_seconds, compiled.disk_seconds);
}

TEST_F(OpenClTest, KernelsFromTheDiskCacheKeepTheirReflectedSignature) {
  ScopedCacheDir cache("opencl");
  const std::string source = unique_scale_source();
  Kernel cold = device.compile({"scale", source});
  device.clear_kernel_cache();
  Kernel warm = device.compile({"scale", source});
  ASSERT_EQ(warm.origin(), KernelOrigin::disk_cache);
  ASSERT_TRUE(cold.params() && warm.params());
  EXPECT_EQ(*warm.params(), *cold.params());
  // Reflected, not read from the source: the driver spells the address space its own way.
  EXPECT_EQ((*warm.params())[0], (KernelParam{KernelArg::Kind::buffer, 0, "x", "__global float*"}));
  EXPECT_EQ((*warm.params())[1], (KernelParam{KernelArg::Kind::scalar, 4, "a", "float"}));
}

TEST_F(OpenClTest, DiskCacheCanBeBypassed) {
  ScopedCacheDir cache("opencl");
  const std::string source = unique_scale_source();
  EXPECT_EQ(device.compile({"scale", source}, {.disk_cache = false}).origin(),
            KernelOrigin::compiled);
  EXPECT_TRUE(cache.entries().empty());
}

// Damages the only cache entry with `damage`, then expects a rebuild that rewrites a good entry.
void expect_rebuild_after(const Device& device,
                          const std::function<void(const fs::path&)>& damage) {
  ScopedCacheDir cache("opencl");
  const std::string source = unique_scale_source();
  device.compile({"scale", source});
  ASSERT_EQ(cache.entries().size(), 1u);
  damage(cache.entries().front());
  device.clear_kernel_cache();
  Kernel rebuilt = device.compile({"scale", source});
  EXPECT_EQ(rebuilt.origin(), KernelOrigin::compiled);
  expect_scale_works(device, rebuilt);
  device.clear_kernel_cache();
  EXPECT_EQ(device.compile({"scale", source}).origin(), KernelOrigin::disk_cache);
}

TEST_F(OpenClTest, ACorruptCacheEntryIsRebuiltNeverTrusted) {
  expect_rebuild_after(device, [](const fs::path& entry) {  // a flipped byte in the binary
    std::fstream file(entry, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(-1, std::ios::end);
    char last = 0;
    file.get(last);
    file.seekp(-1, std::ios::end);
    file.put(static_cast<char>(last ^ 0x5a));
  });
  expect_rebuild_after(device, [](const fs::path& entry) {  // truncated
    fs::resize_file(entry, fs::file_size(entry) / 2);
  });
  expect_rebuild_after(device, [](const fs::path& entry) {  // not an entry at all
    std::ofstream(entry, std::ios::trunc) << "garbage";
  });
}

TEST_F(OpenClTest, AnEntryForAnotherKeyIsStale) {
  // An entry whose stored key differs (another driver version wrote it, or the hashes of two
  // keys collide) is not used for this one.
  expect_rebuild_after(device, [](const fs::path& entry) {
    std::fstream file(entry, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(8 + 8 + 5);  // magic, key length, then a few bytes into the key
    file.put('#');
  });
}

// The disk cache's key holds the source and the options, not the headers an #include reads: a
// header changed between two processes got the old binary. Such kernels are not kept on disk.
TEST_F(OpenClTest, AKernelThatIncludesAHeaderIsNeverServedFromTheDiskCache) {
  ScopedCacheDir cache("opencl");
  ScratchDir headers("hal-include-test");
  const fs::path header = headers.path() / "value.h";
  const std::string source = unique_scale_source() + R"(
#include "value.h"
KERNEL void fill(GLOBAL float* x) { x[global_id(0)] = VALUE; }
)";
  std::string absolute = source;  // a header found without any include option
  absolute.replace(absolute.find("\"value.h\""), 9, "\"" + header.string() + "\"");
  // What the kernel writes after `header` is set to `value`, compiled as a new process would.
  const auto fill = [&](const std::string& code, const CompileOptions& options, float value) {
    std::ofstream(header, std::ios::trunc) << "#define VALUE " << value << "f\n";
    device.clear_kernel_cache();
    Kernel kernel = device.compile({"fill", code}, options);
    EXPECT_EQ(kernel.origin(), KernelOrigin::compiled);
    Stream stream = device.create_stream();
    Buffer buffer = device.allocate(4);
    float got = 0;
    stream.launch(kernel, LaunchConfig::linear(1), {buffer});
    stream.copy_to_host(&got, buffer, 4);
    stream.synchronize();
    return got;
  };
  const CompileOptions spaced{.flags = "-I " + headers.path().string()},
      joined{.flags = "-I" + headers.path().string()};
  EXPECT_EQ(fill(source, spaced, 1.5f), 1.5f);
  EXPECT_EQ(fill(source, spaced, 2.5f), 2.5f);
  EXPECT_EQ(fill(source, joined, 3.5f), 3.5f);
  EXPECT_EQ(fill(absolute, {}, 4.5f), 4.5f);
  EXPECT_TRUE(cache.entries().empty());
  // A kernel without includes is still kept.
  device.compile({"scale", unique_scale_source()});
  EXPECT_EQ(cache.entries().size(), 1u);
}

// The driver reflects a typedef's type as the source spells it ("real"), without a size: any
// scalar was taken, and a double for a float typedef reached the kernel as a wrong value. Its
// size now comes from the source, which hal reads with its typedefs.
TEST_F(OpenClTest, AScalarOfATypedefTypeIsCheckedAtItsSize) {
  const std::string source =
      "typedef float real;\n__kernel void f(__global float* x, real r) { x[0] = r; }";
  for (bool disk : {true, false}) {  // reflected from a fresh build, and from a cached binary
    ScopedCacheDir cache("opencl");
    device.clear_kernel_cache();
    device.compile({"f", source, KernelLanguage::opencl_c});
    device.clear_kernel_cache();
    Kernel kernel = device.compile({"f", source, KernelLanguage::opencl_c}, {.disk_cache = disk});
    ASSERT_TRUE(kernel.params());
    EXPECT_EQ((*kernel.params())[1], (KernelParam{KernelArg::Kind::scalar, 4, "r", "real"}));
    Stream stream = device.create_stream();
    Buffer buffer = device.allocate(4);
    expect_error(
        [&] {
          stream.launch(kernel, LaunchConfig::linear(1), {buffer, 2.5});
        },
        ErrorCode::InvalidArgument,
        {"argument 1 (r)", "a 4-byte scalar (real)", "given an 8-byte scalar"});
    float value = 0;
    stream.launch(kernel, LaunchConfig::linear(1), {buffer, 2.5f});
    stream.copy_to_host(&value, buffer, 4);
    stream.synchronize();
    EXPECT_EQ(value, 2.5f);
  }
}

// Reflection's unsized scalars get the size the source gives their type: a typedef's, even
// beside parameters hal cannot read (a vector); never one the source leaves in doubt.
TEST(OpenClParams, TypedefScalarsTakeTheSizeTheSourceDefines) {
  using Kind = KernelArg::Kind;
  const std::string source = R"(
typedef float real;
typedef unsigned short half_count;
#ifdef WIDE
typedef double maybe;
#else
typedef float maybe;
#endif
__kernel void f(__global float* x, real r, float2 v, half_count n, maybe m, size_t s) {})";
  const std::vector<KernelParam> reflected{
      {Kind::buffer, 0, "x", "__global float*"}, {Kind::scalar, 0, "r", "real"},
      {Kind::scalar, 0, "v", "float2"},          {Kind::scalar, 0, "n", "half_count"},
      {Kind::scalar, 0, "m", "maybe"},           {Kind::scalar, 0, "s", "size_t"}};
  std::vector<KernelParam> params = reflected;
  opencl::size_typedef_scalars(params, {"f", source, KernelLanguage::opencl_c}, {});
  std::vector<size_t> sizes;
  for (const KernelParam& param : params) sizes.push_back(param.scalar_bytes);
  EXPECT_EQ(sizes, (std::vector<size_t>{0, 4, 0, 2, 0, 0}));
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].name, reflected[i].name);
    EXPECT_EQ(params[i].type, reflected[i].type);
  }
}

// Adds one to each element, staged through a __local array the launch sizes.
constexpr const char* kStageThroughLocal = R"(
__kernel void stage(__global float* x, __local float* tmp) {
  tmp[get_local_id(0)] = x[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  x[get_global_id(0)] = tmp[get_local_id(0)] + 1.0f;
})";

// Drivers refuse a local-memory argument of 0 bytes (CL_INVALID_ARG_SIZE) at enqueue; hal
// refuses it first, by name.
TEST_F(OpenClTest, LocalMemoryOfZeroBytesIsRefusedByName) {
  Kernel kernel = device.compile({"stage", kStageThroughLocal, KernelLanguage::opencl_c});
  Stream stream = device.create_stream();
  Buffer buffer = device.allocate(64);
  LaunchConfig config = LaunchConfig::linear(16);
  config.local = {16, 1, 1};
  expect_error(
      [&] {
        stream.launch(kernel, config, {buffer, KernelArg::local_memory(0)});
      },
      ErrorCode::InvalidArgument,
      {"argument 1 (tmp)", "0 bytes of local memory", "at least 1 byte"});
  stream.launch(kernel, config, {buffer, KernelArg::local_memory(64)});
  stream.synchronize();
}

TEST_F(OpenClTest, LocalMemoryReductionMatchesTheReference) {
  // OpenCL C with a __local argument sized at launch.
  const std::string source = R"(
__kernel void group_sums(__global const float* in, __global float* out, __local float* scratch) {
  size_t lid = get_local_id(0);
  scratch[lid] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t stride = get_local_size(0) / 2; stride > 0; stride /= 2) {
    if (lid < stride) scratch[lid] += scratch[lid + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) out[get_group_id(0)] = scratch[0];
}
)";
  Kernel kernel = device.compile({"group_sums", source, KernelLanguage::opencl_c});
  const uint32_t group = 64, groups = 37, n = group * groups;
  std::vector<float> input(n), sums(groups);
  std::mt19937 random(3);
  for (float& v : input) v = static_cast<float>(random() % 100);
  Stream stream = device.create_stream();
  Buffer in = device.allocate(n * 4), out = device.allocate(groups * 4);
  stream.copy_from_host(in, input.data(), n * 4);
  LaunchConfig config = LaunchConfig::linear(n);
  config.local = {group, 1, 1};
  stream.launch(kernel, config, {in, out, KernelArg::local_memory(group * 4)});
  stream.copy_to_host(sums.data(), out, groups * 4);
  stream.synchronize();
  for (uint32_t g = 0; g < groups; ++g) {
    float expected = 0;
    for (uint32_t i = 0; i < group; ++i) expected += input[g * group + i];
    EXPECT_EQ(sums[g], expected) << "group " << g;
  }
}

// LaunchConfig::shared_bytes is CUDA's dynamic shared memory; OpenCL has no such launch
// parameter (work-group memory sized at launch is a __local argument), and the value was
// dropped unseen. Refused by name now, and a launch without it runs.
TEST_F(OpenClTest, DynamicSharedBytesAreRefusedNotDropped) {
  Kernel kernel = device.compile({"stage", kStageThroughLocal, KernelLanguage::opencl_c});
  Stream stream = device.create_stream();
  Buffer buffer = device.allocate(16 * sizeof(float));
  stream.fill(buffer, 0.0f, 16);
  LaunchConfig config = LaunchConfig::linear(16);
  config.local = {16, 1, 1};
  config.shared_bytes = 64;
  expect_error(
      [&] {
        stream.launch(kernel, config, {buffer, KernelArg::local_memory(64)});
      },
      ErrorCode::Unsupported,
      {device.id(), "'stage'", "shared_bytes (64 bytes)", "KernelArg::local_memory"});
  config.shared_bytes = 0;
  stream.launch(kernel, config, {buffer, KernelArg::local_memory(64)});
  std::vector<float> got(16);
  stream.copy_to_host(got.data(), buffer, buffer.size());
  stream.synchronize();
  EXPECT_EQ(got, std::vector<float>(16, 1.0f)) << "only the launch without shared_bytes ran";
}

TEST_F(OpenClTest, PortableTiledTransposeMatchesTheReference) {
  // The portable dialect's SHARED arrays, barrier() and 2-d indices.
  const std::string source = R"(
#define TILE 8
KERNEL void transpose(GLOBAL const float* in, GLOBAL float* out, uint rows, uint cols) {
  SHARED float tile[TILE][TILE + 1];
  size_t x = global_id(0), y = global_id(1);
  if (x < cols && y < rows) tile[local_id(1)][local_id(0)] = in[y * cols + x];
  barrier();
  size_t tx = group_id(1) * TILE + local_id(0), ty = group_id(0) * TILE + local_id(1);
  if (tx < rows && ty < cols) out[ty * rows + tx] = tile[local_id(0)][local_id(1)];
}
)";
  Kernel kernel = device.compile({"transpose", source});
  const uint32_t rows = 37, cols = 21;
  std::vector<float> input(rows * cols), output(rows * cols);
  std::iota(input.begin(), input.end(), 0.0f);
  Stream stream = device.create_stream();
  Buffer in = device.allocate(input.size() * 4), out = device.allocate(output.size() * 4);
  stream.copy_from_host(in, input.data(), input.size() * 4);
  LaunchConfig config = LaunchConfig::grid(cols, rows);
  config.local = {8, 8, 1};
  stream.launch(kernel, config, {in, out, rows, cols});
  stream.copy_to_host(output.data(), out, output.size() * 4);
  stream.synchronize();
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c)
      ASSERT_EQ(output[c * rows + r], input[r * cols + c]) << r << "," << c;
}

// Where a launch leaves `local` at zero, a portable kernel runs in hal's groups (256, 16x16,
// 8x8x4: one work-group function per kernel on PoCL, whatever the tensor's size), the global size
// rounded up to whole groups; an OpenCL C kernel keeps its exact global size.
TEST_F(OpenClTest, APortableKernelWithoutALocalSizeRunsInHalsGroups) {
  const char* const body = R"(
KERNEL void geometry(GLOBAL uint* out) {
  if (global_id(0) == 0 && global_id(1) == 0 && global_id(2) == 0) {
    for (uint d = 0; d < 3; ++d) {
      out[d] = (uint)local_size(d);
      out[3 + d] = (uint)global_size(d);
    }
  }
}
)";
  const std::string opencl_c = std::string(R"(
#define KERNEL __kernel
#define GLOBAL __global
#define global_id get_global_id
#define local_size get_local_size
#define global_size get_global_size
)") + body;
  Kernel portable = device.compile({"geometry", body});
  Kernel native = device.compile({"geometry", opencl_c, KernelLanguage::opencl_c});
  Stream stream = device.create_stream();
  Buffer out = device.allocate(6 * 4);
  const auto geometry = [&](const Kernel& kernel, LaunchConfig config) {
    std::vector<uint32_t> values(6);
    stream.launch(kernel, config, {out});
    stream.copy_to_host(values.data(), out, 6 * 4);
    stream.synchronize();
    return values;
  };
  using V = std::vector<uint32_t>;
  EXPECT_EQ(geometry(portable, LaunchConfig::linear(198)), (V{256, 1, 1, 256, 1, 1}));
  EXPECT_EQ(geometry(portable, LaunchConfig::linear(1820)), (V{256, 1, 1, 2048, 1, 1}));
  EXPECT_EQ(geometry(portable, LaunchConfig::grid(3, 40)), (V{16, 16, 1, 16, 48, 1}));
  EXPECT_EQ(geometry(portable, LaunchConfig::grid(9, 9, 5)), (V{8, 8, 4, 16, 16, 8}));
  // The caller's local size stands.
  LaunchConfig chosen = LaunchConfig::linear(198);
  chosen.local = {33, 1, 1};
  EXPECT_EQ(geometry(portable, chosen), (V{33, 1, 1, 198, 1, 1}));
  // OpenCL C: the exact global size, grouped as the driver likes.
  const V exact = geometry(native, LaunchConfig::linear(198));
  EXPECT_EQ(exact[3], 198u);
  EXPECT_EQ(198u % exact[0], 0u);
}

TEST_F(OpenClTest, BufferViewsAsArgumentsNeedTheDevicesAlignment) {
  Kernel kernel = device.compile({"scale", unique_scale_source()});
  Stream stream = device.create_stream();
  const uint32_t n = 1024;
  std::vector<float> data(n, 1.0f);
  Buffer buffer = device.allocate(n * 4);
  stream.copy_from_host(buffer, data.data(), n * 4);
  // Scale the second half only, through a view that starts 2 KiB in.
  stream.launch(kernel, LaunchConfig::linear(n / 2), {KernelArg(buffer, n * 2), 5.0f, n / 2});
  stream.copy_to_host(data.data(), buffer, n * 4);
  stream.synchronize();
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(data[i], i < n / 2 ? 1.0f : 5.0f) << i;
  expect_error(
      [&] {
        stream.launch(kernel, LaunchConfig::linear(4), {KernelArg(buffer, 4), 1.0f, 4u});
      },
      ErrorCode::InvalidArgument, {"argument 0", "byte 4", "multiple of"});
  stream.synchronize();  // nothing was enqueued by the refused launch
}

TEST_F(OpenClTest, ManyThreadsLaunchOneKernel) {
  // A cl_kernel holds its arguments: hal serialises argument setting and enqueue per kernel.
  Kernel kernel = device.compile({"scale", unique_scale_source()});
  constexpr int kThreads = 8, kLaunches = 40;
  constexpr uint32_t n = 64;
  std::vector<std::thread> threads;
  std::vector<std::vector<float>> results(kThreads, std::vector<float>(n));
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Stream stream = device.create_stream();
      Buffer buffer = device.allocate(n * 4);
      stream.fill(buffer, 1.0f, n);
      for (int i = 0; i < kLaunches; ++i)
        stream.launch(kernel, LaunchConfig::linear(n),
                      {buffer, i % 2 ? 1.0f : static_cast<float>(t + 1), n});
      stream.copy_to_host(results[t].data(), buffer, n * 4);
      stream.synchronize();
    });
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    const float expected = std::pow(static_cast<float>(t + 1), kLaunches / 2);
    for (float v : results[t]) ASSERT_FLOAT_EQ(v, expected) << "thread " << t;
  }
}

// While a trace records, each command's profiling times come back as a span on the stream's
// device track, mapped onto the host's clock: in the queue's order, within the host's own spans
// of its issue and of the synchronize that waited for it, copies with their rates.
// The offset that places the device's clock on the host's for device tracks: measured with
// markers (PoCL stamps their QUEUED time), kept for a second, and measured again after it to the
// same value within 50 us (the clocks run at one rate; a second measurement's error is half an
// empty enqueue call).
TEST_F(OpenClTest, TheDevicesClockOffsetIsMeasuredAndStable) {
  const auto& cl_device = static_cast<const opencl::OpenClDevice&>(*device.impl());
  const std::optional<int64_t> first = cl_device.clock_offset_ns();
  ASSERT_TRUE(first.has_value()) << device.id() << " stamps no QUEUED time on markers";
  EXPECT_EQ(cl_device.clock_offset_ns(), first);  // within the second: the same measurement
  std::this_thread::sleep_for(std::chrono::milliseconds(1050));
  const std::optional<int64_t> again = cl_device.clock_offset_ns();
  ASSERT_TRUE(again.has_value());
  EXPECT_NEAR(static_cast<double>(*again), static_cast<double>(*first), 50'000.0);
}

TEST_F(OpenClTest, TracesShowWhenCommandsRanOnTheDevice) {
  const fs::path file =
      fs::temp_directory_path() / ("hal_opencl_trace_" + std::to_string(::getpid()) + ".json");
  const uint32_t n = uint32_t{4} << 20;  // 16 MiB of floats
  std::vector<float> host(n, 1.0f);
  Kernel kernel = device.compile({"scale", unique_scale_source()});
  Stream stream = device.create_stream();
  Buffer buffer = device.allocate(size_t{n} * 4);
  stream.synchronize();
  trace::start(file);
  stream.copy_from_host(buffer, host.data(), size_t{n} * 4);
  stream.launch(kernel, LaunchConfig::linear(n), {buffer, 2.0f, n});
  stream.copy_to_host(host.data(), buffer, size_t{n} * 4);
  stream.synchronize();  // waits for the driver's callbacks too
  trace::stop();
  EXPECT_EQ(host[n - 1], 2.0f);

  const nlohmann::json trace = take_trace(file);
  const int64_t issue_track = track_id(trace, device.id() + " stream 0");
  const int64_t device_track = track_id(trace, device.id() + " stream 0 (device)");
  ASSERT_GE(device_track, 0) << trace.dump();
  std::map<std::string, nlohmann::json> issued, ran;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["tid"] == issue_track) issued[e["name"]] = e;
    if (e["tid"] == device_track) ran[e["name"]] = e;
  }
  ASSERT_EQ(ran.size(), 3u) << trace.dump();
  const auto start = [](const nlohmann::json& e) { return e["ts"].get<double>(); };
  const auto end = [](const nlohmann::json& e) {
    return e["ts"].get<double>() + e["dur"].get<double>();
  };
  // The device's clock is placed on the host's through empty markers (opencl_clock.hpp), to
  // within half an empty enqueue call: microseconds, where a command's own enqueue call (which
  // holds PoCL's copy of a write's host data) could be a millisecond under load. 0.25 ms covers
  // that, the trace's rounding and a measurement whose every marker was preempted.
  constexpr double kSlackUs = 250;
  const nlohmann::json &in_copy = ran["copy_from_host"], &scale = ran["scale"],
                       &out_copy = ran["copy_to_host"];
  EXPECT_GE(start(in_copy), start(issued["copy_from_host"]) - kSlackUs) << in_copy;
  EXPECT_LE(end(in_copy), start(scale) + kSlackUs) << scale;
  EXPECT_LE(end(scale), start(out_copy) + kSlackUs) << out_copy;
  EXPECT_LE(end(out_copy), end(issued["synchronize"]) + kSlackUs) << issued["synchronize"];
  EXPECT_EQ(scale["args"]["global"], nlohmann::json({n, 1, 1}));
  for (const nlohmann::json* copy : {&in_copy, &out_copy}) {
    EXPECT_EQ((*copy)["args"]["bytes"], size_t{n} * 4);
    EXPECT_GT((*copy)["args"]["GB/s"].get<double>(), 0.0) << *copy;
  }
}

TEST_F(OpenClTest, HostVisibleMemoryIsAddressedDirectly) {
  for (MemoryKind kind : {MemoryKind::pinned_host, MemoryKind::unified}) {
    if (!device.info().has_feature(feature::kUnifiedMemory) && kind == MemoryKind::unified)
      continue;
    Buffer buffer = device.allocate(4096, kind);
    ASSERT_TRUE(buffer.host_accessible()) << to_string(kind);
    float* host = buffer.data<float>();
    for (int i = 0; i < 1024; ++i) host[i] = static_cast<float>(i);
    Stream stream = device.create_stream();
    stream.launch(device.compile({"scale", unique_scale_source()}), LaunchConfig::linear(1024),
                  {buffer, 2.0f, 1024u});
    stream.synchronize();
    for (int i = 0; i < 1024; ++i) ASSERT_EQ(host[i], 2.0f * static_cast<float>(i)) << i;
  }
}

TEST_F(OpenClTest, ManyBuffersFreedWhileWorkRunsComeBackAfterIt) {
  // Ownership fences: buffers dropped right after their work was enqueued stay alive until it
  // has run, and return to the allocator afterwards.
  Stream stream = device.create_stream();
  const uint64_t before = device.allocator().stats().active_bytes.current;
  for (int i = 0; i < 500; ++i) {
    Buffer buffer = device.allocate(4096);
    stream.fill(buffer, static_cast<uint32_t>(i), 1024);
  }
  stream.synchronize();
  EXPECT_EQ(device.allocator().stats().active_bytes.current, before);
}

// CLBlast 1.5's GemmStridedBatched gave wrong products on PoCL at these sizes (768, 1024,
// batched or not) while OpenBLAS and CLBlast's Xgemm agreed: every matmul size class that
// went wrong, against cpu:0's OpenBLAS on the same Philox inputs.
TEST_F(OpenClTest, LargeMatmulsAgreeWithOpenBlas) {
  Stream cpu_stream = hal::device("cpu:0").create_stream();
  Stream stream = device.create_stream();
  for (const Shape& shape : {Shape{768, 768}, Shape{1024, 1024}, Shape{2, 768, 768}}) {
    const auto product = [&](Stream& s) {
      const Tensor a = uniform(shape, DType::f32, 20, s, -1, 1);
      const Tensor b = uniform(shape, DType::f32, 21, s, -1, 1);
      return matmul(a, b, s).to_vector<float>(s);
    };
    const std::vector<float> want = product(cpu_stream), got = product(stream);
    ASSERT_EQ(got.size(), want.size());
    const double tolerance = 1e-5 * static_cast<double>(shape.back());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], tolerance) << to_string(shape) << " element " << i;
  }
}

}  // namespace
}  // namespace hal::test
