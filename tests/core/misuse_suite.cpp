// Calls that would deadlock or ask the driver for the impossible are refused by hal, with the
// stream left usable: synchronize from the stream's own host callback (of the stream, or of an
// event it records after the callback), local memory past the device's limit.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device_suite.hpp"
#include "hal/native_memory.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

class MisuseSuite : public DeviceTest {
 protected:
  Stream stream = device().create_stream();
};

// What `wait` (run in a host callback) ended with: Ok, or the code of the hal::Error it threw,
// whose message goes to `message`.
ErrorCode code_of(const std::function<void()>& wait, std::string& message) {
  try {
    wait();
    return ErrorCode::Ok;
  } catch (const Error& error) {
    message = error.message();
    return error.code();
  }
}

// Holds a callback until the test has enqueued what must come after it (a few seconds at most).
void hold_until(const std::atomic<bool>& ready) {
  using namespace std::chrono_literals;
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (!ready.load() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
}

TEST_P(MisuseSuite, SynchronizeFromTheStreamsOwnCallbackIsRefused) {
  std::atomic<int> code{-1};
  std::string message;
  stream.host_callback(
      [&] { code = static_cast<int>(code_of([&] { stream.synchronize(); }, message)); });
  stream.synchronize();  // returns: the callback did not wait for itself
  EXPECT_EQ(code.load(), static_cast<int>(ErrorCode::InvalidState)) << message;
  EXPECT_NE(message.find("own host callbacks"), std::string::npos) << message;
  EXPECT_NE(message.find(id()), std::string::npos) << message;
  // Another stream may be synchronized from a callback, and this one works on.
  Stream other = device().create_stream();
  bool other_done = false;
  stream.host_callback([&] {
    other.synchronize();
    other_done = true;
  });
  stream.synchronize();
  EXPECT_TRUE(other_done);
}

// Device::synchronize waits for every stream of the device: from one of their callbacks it was
// refused only on reaching the callback's own stream, after waiting for the others, one of
// which waits for an event that stream records after the callback: for ever.
TEST_P(MisuseSuite, SynchronizingTheDeviceFromOneOfItsStreamsCallbacksIsRefused) {
  Stream waiting = device().create_stream();
  std::atomic<bool> answered{false}, recorded{false};
  std::atomic<int> device_code{-1}, all_code{-1};
  std::string device_message, all_message;
  stream.host_callback([&] {
    hold_until(recorded);
    device_code = static_cast<int>(code_of([&] { device().synchronize(); }, device_message));
    all_code = static_cast<int>(code_of([&] { synchronize_all(); }, all_message));
    answered = true;
  });
  const Event after = stream.record();  // behind the callback
  waiting.wait(after);
  recorded = true;
  if (!answered.load()) {
    using namespace std::chrono_literals;
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (!answered.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(1ms);
  }
  if (!answered.load()) {
    std::fprintf(stderr, "FAILED: %s: Device::synchronize from a callback waited for itself\n",
                 id().c_str());
    std::_Exit(1);
  }
  stream.synchronize();
  waiting.synchronize();
  EXPECT_EQ(device_code.load(), static_cast<int>(ErrorCode::InvalidState)) << device_message;
  EXPECT_EQ(all_code.load(), static_cast<int>(ErrorCode::InvalidState)) << all_message;
  for (const std::string& part : {std::string("Device::synchronize from a host callback"),
                                  std::string("a stream of ") + id(), std::string("itself")})
    EXPECT_NE(device_message.find(part), std::string::npos) << device_message;
  EXPECT_NE(all_message.find("synchronize_all from a host callback"), std::string::npos)
      << all_message;
}

// Waits until `answered`, for a few seconds at most: a callback still waiting then waits for
// itself, and no teardown could finish, so the process ends by name rather than hang.
void expect_answered(const std::atomic<bool>& answered, const std::string& how) {
  using namespace std::chrono_literals;
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (!answered.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  if (answered.load()) return;
  std::fprintf(stderr, "FAILED: %s: the callback's wait waited for itself\n", how.c_str());
  std::_Exit(1);
}

// The record completes only once the callback has returned: the wait is refused, not made.
TEST_P(MisuseSuite, WaitingFromACallbackForAnEventItsStreamRecordsAfterItIsRefused) {
  Event event = stream.record();  // recorded and complete: the record after the callback moves it
  stream.synchronize();
  std::atomic<bool> recorded{false}, answered{false};
  std::atomic<int> code{-1};
  std::string message;
  stream.host_callback([&] {
    hold_until(recorded);
    code = static_cast<int>(code_of([&] { event.synchronize(); }, message));
    answered = true;
  });
  stream.record(event);  // behind the callback
  recorded = true;
  expect_answered(answered, id() + " event.synchronize");
  stream.synchronize();
  EXPECT_EQ(code.load(), static_cast<int>(ErrorCode::InvalidState)) << message;
  for (const std::string& part : {std::string("would deadlock"), std::string("host callback"),
                                  std::string("a stream of ") + id()})
    EXPECT_NE(message.find(part), std::string::npos) << message;
  event.synchronize();  // the record completed once the callback returned
  // An event recorded before the callback has completed when it runs, and one of another stream
  // completes without it: both may be waited for there.
  Stream other = device().create_stream();
  const Event before = stream.record(), elsewhere = other.record();
  std::atomic<bool> waited{false};
  stream.host_callback([&] {
    before.synchronize();
    elsewhere.synchronize();
    waited = true;
  });
  stream.synchronize();
  EXPECT_TRUE(waited.load());
}

// What the stream's own callback held is dropped on the callback's thread once it ran; a
// deleter there that synchronizes the stream (a DLPack producer's, say) returns instead of waiting
// for itself. When it does not, the process ends by name rather than hang.
void expect_released(Stream& stream, const std::atomic<bool>& released, const std::string& how) {
  using namespace std::chrono_literals;
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (!released.load() && std::chrono::steady_clock::now() < until) {
    stream.query();  // a backend that drops what its commands held as it polls
    std::this_thread::sleep_for(1ms);
  }
  if (released.load()) return;
  std::fprintf(stderr, "FAILED: %s: the deleter's synchronize waited for its own thread\n",
               how.c_str());
  std::_Exit(1);  // the stream's callback thread waits for itself: no teardown could finish
}

std::shared_ptr<int> synchronizes_when_dropped(Stream& stream, std::atomic<bool>& released) {
  return {new int(7), [&stream, &released](int* value) {
            delete value;
            stream.synchronize();
            released = true;
          }};
}

TEST_P(MisuseSuite, ADeleterOfWhatTheStreamsCallbackHeldMaySynchronizeIt) {
  std::atomic<bool> released{false};
  std::atomic<int> ran{0};
  stream.host_callback(
      [held = synchronizes_when_dropped(stream, released), &ran] { ran += *held; });
  expect_released(stream, released, id() + " host_callback");
  EXPECT_EQ(ran.load(), 7);
  // The stream works on: later work runs and is waited for.
  const Buffer buffer = device().allocate(64);
  stream.fill(buffer, uint32_t{0x5a5a5a5a}, 16);
  std::vector<uint32_t> back(16);
  stream.copy_to_host(back.data(), buffer, 64);
  stream.synchronize();
  EXPECT_EQ(back, std::vector<uint32_t>(16, 0x5a5a5a5a));
}

TEST_P(MisuseSuite, ADeleterOfWhatTheStreamKeptMaySynchronizeIt) {
  std::atomic<bool> released{false};
  stream.keep_until_done(synchronizes_when_dropped(stream, released));
  expect_released(stream, released, id() + " keep_until_done");
  stream.synchronize();
}

// The same for a deleter that waits for an event the stream records after the callback: the
// record cannot complete before the deleter returns, and a deleter may not throw.
TEST_P(MisuseSuite, ADeleterOfWhatTheStreamsCallbackHeldMayWaitForALaterRecord) {
  Event event = stream.record();
  stream.synchronize();
  std::atomic<bool> released{false};
  std::shared_ptr<int> held(new int(7), [&event, &released](int* value) {
    delete value;
    event.synchronize();
    released = true;
  });
  std::atomic<bool> recorded{false};
  stream.host_callback([held = std::move(held), &recorded] {  // its last owner
    hold_until(recorded);
  });
  stream.record(event);  // behind the callback
  recorded = true;
  expect_released(stream, released, id() + " event.synchronize in a deleter");
  stream.synchronize();
  event.synchronize();
}

// The same for a buffer's own deleter, run where the stream's worker drops what a copy held: it
// ran unmarked there, and its wait for the record queued next on that worker waited for ever.
TEST_P(MisuseSuite, ADeleterOfABufferACopyHeldMayWaitForALaterRecord) {
  Event event = stream.record();
  stream.synchronize();
  std::vector<float> memory(16, 0.0f), host(16, 1.0f);
  std::atomic<bool> released{false}, recorded{false};
  Buffer wrapped;
  try {
    wrapped = wrap_native_memory(device(), memory.data(), 64, [&event, &released] {
      event.synchronize();
      released = true;
    });
  } catch (const Error& error) {
    if (error.code() != ErrorCode::Unsupported) throw;
    GTEST_SKIP() << id() << " adopts no memory of another library: " << error.message();
  }
  stream.host_callback([&recorded] { hold_until(recorded); });
  stream.copy_from_host(wrapped, host.data(), 64);
  stream.record(event);  // behind the copy
  wrapped = Buffer();    // the copy is its last holder
  recorded = true;
  expect_released(stream, released, id() + " event.synchronize in a buffer's deleter");
  stream.synchronize();
  event.synchronize();
  EXPECT_EQ(memory, host);
}

TEST_P(MisuseSuite, LocalMemoryPastTheDevicesLimitIsRefused) {
  const uint64_t limit = device().info().limits.max_shared_memory_bytes;
  if (limit == 0) GTEST_SKIP() << id() << " states no local-memory limit";
  // OpenCL C, whose __local pointer parameters take local-memory arguments (CUDA's dynamic
  // shared memory and sim's have their own tests).
  if (device().info().backend() != "opencl")
    GTEST_SKIP() << id() << ": the OpenCL devices' test; CUDA and sim test their own";
  const Kernel kernel = device().compile({"uses_local", R"(
    __kernel void uses_local(__global float* out, __local float* scratch) {
      scratch[get_local_id(0)] = 1.0f;
      barrier(CLK_LOCAL_MEM_FENCE);
      out[get_global_id(0)] = scratch[0];
    })",
                                          KernelLanguage::opencl_c});
  Buffer out = device().allocate(64 * sizeof(float));
  expect_error(
      [&] {
        stream.launch(kernel, LaunchConfig{{64, 1, 1}, {64, 1, 1}},
                      {out, KernelArg::local_memory(size_t{1} << 40)});
      },
      ErrorCode::InvalidArgument, {"uses_local", id(), "1099511627776 bytes of local memory"});
  // Two arguments whose sizes sum past 2^64 count as the most there is, not as what wraps (0).
  const Kernel two = device().compile({"uses_two", R"(
    __kernel void uses_two(__global float* out, __local float* a, __local float* b) {
      a[get_local_id(0)] = 1.0f;
      b[get_local_id(0)] = 2.0f;
      barrier(CLK_LOCAL_MEM_FENCE);
      out[get_global_id(0)] = a[0] + b[0];
    })",
                                       KernelLanguage::opencl_c});
  expect_error(
      [&] {
        stream.launch(two, LaunchConfig{{64, 1, 1}, {64, 1, 1}},
                      {out, KernelArg::local_memory(size_t{1} << 63),
                       KernelArg::local_memory(size_t{1} << 63)});
      },
      ErrorCode::InvalidArgument, {"uses_two", "18446744073709551615 bytes of local memory"});
  stream.launch(kernel, LaunchConfig{{64, 1, 1}, {64, 1, 1}},
                {out, KernelArg::local_memory(64 * sizeof(float))});
  std::vector<float> got(64);
  stream.copy_to_host(got.data(), out, got.size() * sizeof(float));
  stream.synchronize();
  EXPECT_EQ(got, std::vector<float>(64, 1.0f));
}

// LaunchConfig::shared_bytes counts against the same limit as local-memory arguments, on every
// backend, before any driver sees it.
TEST_P(MisuseSuite, DynamicSharedMemoryPastTheDevicesLimitIsRefused) {
  const uint64_t limit = device().info().limits.max_shared_memory_bytes;
  if (limit == 0 || limit >= std::numeric_limits<uint32_t>::max())
    GTEST_SKIP() << id() << " states no local-memory limit a launch can pass";
  if (!device().info().has_feature(feature::kPortableKernels))
    GTEST_SKIP() << id() << " compiles no portable kernels";
  const Kernel kernel = device().compile(
      {"touch", "KERNEL void touch(GLOBAL float* out) { out[global_id(0)] = 1.0f; }"});
  Buffer out = device().allocate(64 * sizeof(float));
  LaunchConfig config = LaunchConfig::linear(64);
  config.shared_bytes = static_cast<uint32_t>(limit + 1);
  expect_error([&] { stream.launch(kernel, config, {out}); }, ErrorCode::InvalidArgument,
               {"touch", id(), std::to_string(limit + 1) + " bytes of local memory"});
  config.shared_bytes = 0;
  stream.launch(kernel, config, {out});
  std::vector<float> got(64);
  stream.copy_to_host(got.data(), out, got.size() * sizeof(float));
  stream.synchronize();
  EXPECT_EQ(got, std::vector<float>(64, 1.0f));
}

TEST_P(MisuseSuite, OutOfMemoryMessagesSayUnknownForFreeMemoryTheDeviceCannotTell) {
  const uint64_t largest = device().info().limits.max_allocation_bytes;
  if (largest == 0 || largest == std::numeric_limits<uint64_t>::max())
    GTEST_SKIP() << id() << " states no largest allocation";
  const bool unknown = device().memory_free().provenance == Provenance::unknown;
  expect_error([&] { device().allocate(largest + 1); }, ErrorCode::OutOfMemory,
               {id(), "largest allocation", unknown ? "free unknown" : "free "});
}

HAL_DEVICE_SUITE(MisuseSuite);

}  // namespace
}  // namespace hal::test
