// Native memory on every device: buffers named in their backend's terms (host address,
// CUdeviceptr, cl_mem and an offset), and memory of another owner adopted without a copy, handed
// back only once the last handle and the last enqueued work let go.
#include <atomic>
#include <cstring>
#include <vector>

#include "device_suite.hpp"
#include "hal/native_memory.hpp"

namespace hal::test {
namespace {

using NativeMemorySuite = DeviceTest;

// Backends whose memory has a name hal can give, and those that adopt memory named so.
bool names_memory(const Device& device) {
  const std::string_view backend = device.info().backend();
  return backend == "cpu" || backend == "cuda" || backend == "opencl" || backend == "vulkan";
}
bool adopts_memory(const Device& device) {
  const std::string_view backend = device.info().backend();
  return backend == "cpu" || backend == "cuda";
}

TEST_P(NativeMemorySuite, NamesABuffersMemoryOrSaysWhyNot) {
  const Buffer first = device().allocate(512);
  const Buffer second = device().allocate(512);
  if (!names_memory(device())) {
    expect_error([&] { native_memory(first); }, ErrorCode::Unsupported,
                 {id(), "naming its memory"});
    return;
  }
  const NativeMemory a = native_memory(first), b = native_memory(second);
  ASSERT_NE(a.handle, nullptr);
  ASSERT_NE(b.handle, nullptr);
  // Two blocks of the caching allocator: distinct bytes, whatever the handles.
  EXPECT_FALSE(a.handle == b.handle && a.offset == b.offset);
  if (first.host_accessible() && device().info().backend() == "cpu") {
    EXPECT_EQ(static_cast<char*>(a.handle) + a.offset, first.host_data());
    EXPECT_EQ(static_cast<char*>(b.handle) + b.offset, second.host_data());
  }
}

TEST_P(NativeMemorySuite, AnEmptyBufferHasNoNativeMemory) {
  expect_error([] { native_memory(Buffer()); }, ErrorCode::InvalidArgument, {"empty", "Buffer"});
}

// Memory of the device's own backend, adopted as if another library owned it: the original
// buffer plays the owner, and the release function holds it until hal lets go.
TEST_P(NativeMemorySuite, AdoptsMemoryWithoutACopyAndReleasesItAfterTheLastUse) {
  constexpr size_t kCount = 1024;
  Buffer owner = device().allocate(kCount * sizeof(float));
  std::atomic<int> released{0};
  auto release = [&released, held = owner] { released.fetch_add(1); };
  if (!adopts_memory(device())) {
    // Whatever the handle (a cl_mem of its own, or host memory), the backend refuses.
    std::vector<float> host(kCount);
    void* handle = names_memory(device()) ? native_memory(owner).handle : host.data();
    expect_error([&] { wrap_native_memory(device(), handle, owner.size(), release); },
                 ErrorCode::Unsupported, {id(), "adopting memory"});
    EXPECT_EQ(released.load(), 0) << "a refused adoption leaves the memory with its owner";
    return;
  }
  const NativeMemory native = native_memory(owner);
  void* start = static_cast<char*>(native.handle) + native.offset;
  Stream stream = device().create_stream();
  std::vector<float> values(kCount);
  for (size_t i = 0; i < kCount; ++i) values[i] = static_cast<float>(i) * 0.5f;
  {
    Buffer adopted = wrap_native_memory(device(), start, kCount * sizeof(float), release);
    EXPECT_EQ(adopted.size(), kCount * sizeof(float));
    EXPECT_EQ(adopted.device(), device());
    const NativeMemory renamed = native_memory(adopted);
    EXPECT_EQ(static_cast<char*>(renamed.handle) + renamed.offset, start);
    // Written through the adopted buffer, read through the owner's: the same bytes.
    stream.copy_from_host(adopted, values.data(), values.size() * sizeof(float));
    std::vector<float> through_owner(kCount);
    stream.copy_to_host(through_owner.data(), owner, owner.size());
    stream.synchronize();
    EXPECT_EQ(through_owner, values);
    // Work still enqueued holds the adopted memory after the last handle goes.
    Gate gate;
    stream.host_callback(gate.hold());
    stream.fill(adopted, 2.0f, kCount);
    adopted = Buffer();
    EXPECT_EQ(released.load(), 0) << "released while a fill still had to write it";
    gate.open();
    stream.synchronize();
  }
  EXPECT_EQ(released.load(), 1);
  std::vector<float> after(kCount);
  stream.copy_to_host(after.data(), owner, owner.size());
  stream.synchronize();
  EXPECT_EQ(after, std::vector<float>(kCount, 2.0f));
}

TEST_P(NativeMemorySuite, RefusesANullHandleAndZeroBytes) {
  float host = 0;
  bool released = false;
  auto release = [&released] { released = true; };
  expect_error([&] { wrap_native_memory(device(), nullptr, 4, release); },
               ErrorCode::InvalidArgument, {id(), "null"});
  expect_error([&] { wrap_native_memory(device(), &host, 0, release); }, ErrorCode::InvalidArgument,
               {id(), "0 bytes"});
  expect_error([&] { wrap_native_memory(Device(), &host, 4, release); }, ErrorCode::InvalidArgument,
               {"empty", "Device"});
  EXPECT_FALSE(released);
}

HAL_DEVICE_SUITE(NativeMemorySuite);

}  // namespace
}  // namespace hal::test
