// CUDA specifics on real GPUs: device facts, NVRTC errors through Device::compile, CUDA C++
// kernels, dynamic shared memory, the disk cache, peer copies and managed memory. Without an
// NVIDIA GPU each test skips with the backend's reason. The device suites of tests/core run on
// CUDA devices as well.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "test_util.hpp"
#include "trace_json.hpp"

namespace hal::test {
namespace {

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto found = backend_devices("cuda");
    if (found.empty()) GTEST_SKIP() << "no CUDA device: " << backend_reason("cuda");
    device = found.front();
  }
  Device device;
};

// x[i] *= a for i < n, a CUDA C++ template instantiated for float.
Kernel compile_scale(const Device& device) {
  return device.compile({"scale<float>", R"(
template <class T> __global__ void scale(T* x, T a, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
template __global__ void scale<float>(float*, float, unsigned);
)",
                         KernelLanguage::cuda});
}

TEST_F(CudaTest, DevicesReportWhatTheyAre) {
  for (const Device& gpu : backend_devices("cuda")) {
    const DeviceInfo& info = gpu.info();
    EXPECT_EQ(info.vendor, "NVIDIA");
    EXPECT_EQ(info.kind, DeviceKind::gpu);
    EXPECT_EQ(info.architecture.rfind("sm_", 0), 0u) << info.architecture;
    EXPECT_EQ(info.uuid.size(), 36u);
    EXPECT_GT(info.memory_total.bytes, 0u);
    EXPECT_GT(info.compute_units, 0u);
    EXPECT_GE(info.limits.max_work_group_size, 1024u);
    EXPECT_GE(info.limits.max_shared_memory_bytes, 48u * 1024);
    EXPECT_TRUE(info.has_feature(feature::kPortableKernels));
    const MemoryFigure free = gpu.memory_free();
    EXPECT_EQ(free.provenance, Provenance::measured);
    EXPECT_LE(free.bytes, info.memory_total.bytes);
  }
}

TEST_F(CudaTest, CompileErrorsCarryTheNvrtcLog) {
  expect_error(
      [&] {
        device.compile({"broken", "KERNEL void broken(GLOBAL float* x) {\n  x[0] = nope;\n}\n"});
      },
      ErrorCode::CompileFailed, {"broken", device.info().id, "build log", "nope"});
  expect_error(
      [&] {
        device.compile({"k", "__kernel void k() {}", KernelLanguage::opencl_c});
      },
      ErrorCode::Unsupported, {"OpenCL C", device.info().id});
}

TEST_F(CudaTest, CudaCppTemplatesRun) {
  const Kernel scale = compile_scale(device);
  const unsigned n = 100'000;
  std::vector<float> host(n);
  std::iota(host.begin(), host.end(), 0.0f);
  Buffer x = device.allocate(n * sizeof(float));
  Stream stream = device.create_stream();
  stream.copy_from_host(x, host.data(), n * sizeof(float));
  stream.launch(scale, LaunchConfig{{n, 1, 1}, {128, 1, 1}}, {x, 3.0f, n});
  stream.copy_to_host(host.data(), x, n * sizeof(float));
  stream.synchronize();
  for (unsigned i = 0; i < n; i += 997) ASSERT_EQ(host[i], 3.0f * static_cast<float>(i)) << i;
}

// While a trace records, a CUDA stream's copies and kernels also show when the GPU ran them, on
// the stream's device track: timing events around each command, placed on the host's clock
// through a reference event (cuda_device_spans.hpp).
TEST_F(CudaTest, TracesShowWhenCommandsRanOnTheGpu) {
  namespace fs = std::filesystem;
  const Kernel scale = compile_scale(device);
  const fs::path file =
      fs::temp_directory_path() / ("hal_cuda_trace_" + std::to_string(::getpid()) + ".json");
  const unsigned n = 4u << 20;  // 16 MiB of floats
  std::vector<float> host(n, 1.0f);
  Buffer x = device.allocate(size_t{n} * 4);
  Stream stream = device.create_stream();
  stream.synchronize();
  trace::start(file);
  stream.copy_from_host(x, host.data(), size_t{n} * 4);
  stream.launch(scale, LaunchConfig{{n, 1, 1}, {256, 1, 1}}, {x, 2.0f, n});
  stream.copy_to_host(host.data(), x, size_t{n} * 4);
  stream.synchronize();
  trace::stop();
  EXPECT_EQ(host[n - 1], 2.0f);

  const nlohmann::json trace = take_trace(file);
  ASSERT_GE(track_id(trace, device.id() + " stream 0 (device)"), 0) << trace.dump();
  const DeviceTrackRun run = device_track_run(trace, device.id());
  const std::vector<nlohmann::json>& ran = run.ran;
  ASSERT_EQ(run.names(), (std::vector<std::string>{"copy_from_host", scale.name(), "copy_to_host"}))
      << trace.dump();
  // In stream order, within the first issue and the synchronize's return, give or take the
  // reference's bracket (an event record and wait, tens of microseconds at most).
  constexpr double kSlackUs = 200;
  EXPECT_GE(ran.front()["ts"].get<double>(), run.first_issue - kSlackUs) << ran.front();
  for (size_t i = 1; i < ran.size(); ++i)
    EXPECT_LE(span_end(ran[i - 1]), ran[i]["ts"].get<double>() + 1) << ran[i - 1] << ran[i];
  EXPECT_LE(span_end(ran.back()), run.synchronized + kSlackUs) << ran.back();
  EXPECT_EQ(ran[1]["args"]["global"], nlohmann::json({n, 1, 1})) << ran[1];
  for (const auto& copy : {ran[0], ran[2]}) {
    EXPECT_EQ(copy["args"]["bytes"], size_t{n} * 4) << copy;
    // The rate is the GPU's own time of the copy: its bytes over the span's duration (how fast
    // is the machine's business: a GPU and host shared with other programs make it slow).
    const double seconds = copy["dur"].get<double>() * 1e-6;
    ASSERT_GT(seconds, 0.0) << copy;
    EXPECT_NEAR(copy["args"]["GB/s"].get<double>(), size_t{n} * 4 / seconds * 1e-9,
                1e-3 * copy["args"]["GB/s"].get<double>())
        << copy;
  }
}

TEST_F(CudaTest, DynamicSharedMemoryAboveTheDefaultLimit) {
  const uint64_t limit = device.info().limits.max_shared_memory_bytes;
  if (limit <= 48 * 1024) GTEST_SKIP() << device.info().id << " has no opt-in shared memory";
  // One block reverses `n` floats through shared memory larger than the 48 KiB default.
  const Kernel reverse = device.compile({"reverse", R"(
extern "C" __global__ void reverse(float* x, unsigned n) {
  extern __shared__ float staged[];
  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) staged[i] = x[i];
  __syncthreads();
  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) x[i] = staged[n - 1 - i];
}
)",
                                         KernelLanguage::cuda});
  const unsigned n = 16 * 1024;  // 64 KiB
  std::vector<float> host(n);
  std::iota(host.begin(), host.end(), 0.0f);
  Buffer x = device.allocate(n * sizeof(float));
  Stream stream = device.create_stream();
  stream.copy_from_host(x, host.data(), n * sizeof(float));
  LaunchConfig config{{256, 1, 1}, {256, 1, 1}};
  config.shared_bytes = n * sizeof(float);
  stream.launch(reverse, config, {x, n});
  stream.copy_to_host(host.data(), x, n * sizeof(float));
  stream.synchronize();
  for (unsigned i = 0; i < n; i += 131) ASSERT_EQ(host[i], static_cast<float>(n - 1 - i)) << i;

  config.shared_bytes = static_cast<uint32_t>(limit + 1);
  expect_error(
      [&] {
        stream.launch(reverse, config, {x, n});
      },
      ErrorCode::InvalidArgument,
      {"reverse",
       std::to_string(limit + 1) + " bytes of local memory (CUDA's dynamic shared memory)",
       std::to_string(limit)});
}

TEST_F(CudaTest, BadLaunchesAreRefusedBeforeTheyReachTheDriver) {
  const Kernel fill = device.compile({"fill_one", R"(
KERNEL void fill_one(GLOBAL float* x, uint n) {
  size_t i = global_id(0);
  if (i < n) x[i] = 1.0f;
}
)"});
  Buffer x = device.allocate(1024);
  Stream stream = device.create_stream();
  expect_error(
      [&] {
        stream.launch(fill, LaunchConfig{{256, 1, 1}, {2048, 1, 1}}, {x, 256u});
      },
      ErrorCode::InvalidArgument, {"fill_one", "2048 threads"});
  expect_error(
      [&] {
        stream.launch(fill, LaunchConfig{{1, 1u << 30, 1}}, {x, 1u});
      },
      ErrorCode::InvalidArgument, {"fill_one", "blocks in dimension 1"});
  expect_error(
      [&] {
        stream.launch(fill, LaunchConfig::linear(256), {KernelArg::local_memory(256), 256u});
      },
      ErrorCode::InvalidArgument,
      {"argument 0 (x): the kernel takes a buffer", "given 256 bytes of local memory"});
  stream.launch(fill, LaunchConfig::linear(256), {x, 256u});  // the stream still works
  std::vector<float> host(256);
  stream.copy_to_host(host.data(), x, 1024);
  stream.synchronize();
  EXPECT_EQ(host[255], 1.0f);
}

TEST_F(CudaTest, ModulesComeFromTheDiskCacheTheSecondTime) {
  ScopedCacheDir cache("cuda");
  const KernelSource source{
      "cached", "KERNEL void cached(GLOBAL int* x) { x[0] = " + std::to_string(::getpid()) + "; }"};
  EXPECT_EQ(device.compile(source).origin(), KernelOrigin::compiled);
  EXPECT_EQ(cache.entries().size(), 1u);
  device.clear_kernel_cache();
  const Kernel again = device.compile(source);
  EXPECT_EQ(again.origin(), KernelOrigin::disk_cache);
  Buffer x = device.allocate(sizeof(int));
  Stream stream = device.create_stream();
  stream.launch(again, LaunchConfig::linear(1), {x});
  int value = 0;
  stream.copy_to_host(&value, x, sizeof value);
  stream.synchronize();
  EXPECT_EQ(value, ::getpid());
}

TEST_F(CudaTest, ManagedMemoryIsNeverOversubscribed) {
  if (!device.info().has_feature(feature::kUnifiedMemory))
    GTEST_SKIP() << "no managed memory on " << device.info().id;
  // All of the device's memory: more than is free once a context exists.
  const uint64_t total = device.info().memory_total.bytes;
  expect_error([&] { device.allocate(total, MemoryKind::unified); }, ErrorCode::OutOfMemory,
               {device.info().id, "oversubscribe"});
  Buffer shared = device.allocate(4096, MemoryKind::unified);
  ASSERT_NE(shared.host_data(), nullptr);
  static_cast<int*>(shared.host_data())[0] = 41;
  Stream stream = device.create_stream();
  stream.fill(shared, 42, 1);
  stream.synchronize();
  EXPECT_EQ(static_cast<int*>(shared.host_data())[0], 42);
}

// The bytes the driver's default memory pool of the first device holds, asked of the driver
// itself (the device's free memory would count other programs' allocations on a shared GPU).
uint64_t pool_reserved_bytes() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!driver) return 0;
  const auto get_device = reinterpret_cast<decltype(&cuDeviceGet)>(::dlsym(driver, "cuDeviceGet"));
  const auto default_pool = reinterpret_cast<decltype(&cuDeviceGetDefaultMemPool)>(
      ::dlsym(driver, "cuDeviceGetDefaultMemPool"));
  const auto attribute =
      reinterpret_cast<decltype(&cuMemPoolGetAttribute)>(::dlsym(driver, "cuMemPoolGetAttribute"));
  CUdevice device = 0;
  CUmemoryPool pool = nullptr;
  cuuint64_t reserved = 0;
  const bool read = get_device && default_pool && attribute && get_device(&device, 0) == 0 &&
                    default_pool(&pool, device) == 0 &&
                    attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) == 0;
  ::dlclose(driver);
  if (!read) ADD_FAILURE() << "the driver's default pool of device 0 could not be read";
  return reserved;
}

TEST_F(CudaTest, PoolMemoryGoesBackToTheDeviceWhenTheCacheIsEmptied) {
  if (!device.info().has_feature("memory_pools"))
    GTEST_SKIP() << device.info().id << " has no memory pools (cuMemAllocAsync)";
  constexpr size_t kBytes = size_t{512} << 20;
  device.empty_cache();
  const uint64_t reserved_before = pool_reserved_bytes();
  {
    Buffer big = device.allocate(kBytes);
    EXPECT_GE(pool_reserved_bytes(), reserved_before + kBytes)
        << "the segment should be taken from the device at once";
    Stream stream = device.create_stream();
    std::vector<uint32_t> host(kBytes / 4), back(kBytes / 4);
    std::iota(host.begin(), host.end(), 3u);
    stream.copy_from_host(big, host.data(), kBytes);
    stream.copy_to_host(back.data(), big, kBytes);
    stream.synchronize();
    ASSERT_EQ(back, host);
  }
  device.empty_cache();
  EXPECT_LE(pool_reserved_bytes(), reserved_before) << "the pool kept memory after cuMemFreeAsync";
}

// Pageable host memory goes through pinned staging (cuda_staging.hpp) in the stream's order: a
// source written by an earlier host callback is read after it, and a copy of several staging
// chunks (8 MiB each) arrives whole, both ways, also into pinned memory, which is not staged.
TEST_F(CudaTest, PageableCopiesRunInTheStreamsOrderAChunkAtATime) {
  Stream stream = device.create_stream();
  const size_t count = (size_t{20} << 20) / 4 + 3;  // three chunks, the last a short one
  std::vector<uint32_t> source(count, 0), back(count, 0);
  Buffer buffer = device.allocate(count * 4);
  stream.host_callback([&source] { std::iota(source.begin(), source.end(), 7u); });
  stream.copy_from_host(buffer, source.data(), count * 4);
  stream.copy_to_host(back.data(), buffer, count * 4);
  stream.synchronize();
  std::vector<uint32_t> want(count);
  std::iota(want.begin(), want.end(), 7u);
  EXPECT_TRUE(back == want) << "the round trip through staging changed the data";

  Buffer pinned = device.allocate(count * 4, MemoryKind::pinned_host);
  stream.copy_to_host(pinned.data<uint32_t>(), buffer, count * 4);
  stream.synchronize();
  EXPECT_TRUE(std::equal(want.begin(), want.end(), pinned.data<uint32_t>()));
}

TEST(CudaPeers, CopiesRunBetweenEveryPairOfGpus) {
  const auto gpus = backend_devices("cuda");
  if (gpus.size() < 2) GTEST_SKIP() << "needs two CUDA devices, found " << gpus.size();
  const size_t n = 1 << 20;
  std::vector<uint32_t> host(n);
  std::iota(host.begin(), host.end(), 7u);
  for (const Device& from : gpus)
    for (const Device& to : gpus) {
      if (from.info().id == to.info().id) continue;
      Buffer a = from.allocate(n * 4), b = to.allocate(n * 4);
      Stream stream = from.create_stream();
      stream.copy_from_host(a, host.data(), n * 4);
      stream.copy(b, a, n * 4);
      std::vector<uint32_t> back(n);
      stream.copy_to_host(back.data(), b, n * 4);
      stream.synchronize();
      ASSERT_EQ(back, host) << from.info().id << " -> " << to.info().id;
    }
}

}  // namespace
}  // namespace hal::test
