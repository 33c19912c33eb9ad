// What a CPU stream's launches held is let go of by the time synchronize returns, even where
// the stream's worker took the references first and is still dropping them (a release that
// blocks: a DLPack producer's deleter waiting for Python's GIL).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "hal/hal.hpp"
#include "hal/native_memory.hpp"
#include "test_util.hpp"

namespace hal {
namespace {

using namespace std::chrono_literals;

// A buffer of another owner's memory that a kernel reads; the launch alone holds it once the
// returned handle is gone.
Buffer launch_on_adopted(Stream& stream, std::vector<float>& memory,
                         std::function<void()> release) {
  const Device cpu = stream.device();
  Buffer adopted =
      wrap_native_memory(cpu, memory.data(), memory.size() * sizeof(float), std::move(release));
  const Buffer out = cpu.allocate(memory.size() * sizeof(float));
  stream.launch(host_kernel("copy",
                            [](const KernelChunk& chunk) {
                              float* dst = chunk.args.ptr<float>(0);
                              const float* src = chunk.args.ptr<const float>(1);
                              for (uint64_t i = chunk.begin[0]; i < chunk.end[0]; ++i)
                                dst[i] = src[i];
                            }),
                LaunchConfig::linear(memory.size()),
                {KernelArg::borrow(out), KernelArg::borrow(adopted)});
  return out;
}

bool wait_until(const std::atomic<bool>& flag, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!flag.load() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  return flag.load();
}

TEST(LaunchRefsRelease, SynchronizeWaitsForADropTheWorkerHasBegun) {
  Stream stream = device("cpu:0").create_stream();
  std::vector<float> memory(256, 1.0f);
  const std::thread::id test_thread = std::this_thread::get_id();
  std::atomic<bool> entered{false}, go{false}, released{false};
  // The launch runs only once this thread has let go of the buffer: its references are then
  // the stream's alone, for the worker's sweep to drop.
  test::Gate gate;
  stream.host_callback(gate.hold());
  {
    const Buffer out = launch_on_adopted(stream, memory, [&] {
      if (std::this_thread::get_id() != test_thread) {  // the worker's sweep: held back
        entered = true;
        wait_until(go, 60s);
      }
      released = true;
    });
  }
  gate.open();
  // The worker sweeps what finished work held when it goes idle.
  ASSERT_TRUE(wait_until(entered, 30s)) << "the stream's worker never let go of the buffer";
  std::atomic<bool> synchronized{false};
  std::thread synchronizer([&] {
    stream.synchronize();
    synchronized = true;
  });
  // A synchronize that did not wait would return at once.
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(synchronized.load()) << "synchronize returned while the buffer was being released";
  go = true;
  synchronizer.join();
  EXPECT_TRUE(released.load());
}

// A release that synchronizes the stream itself once its work is done (on whichever thread drops
// the buffer) does not wait for the drop it runs in.
TEST(LaunchRefsRelease, AReleaseThatSynchronizesTheStreamDoesNotWaitForItself) {
  Stream stream = device("cpu:0").create_stream();
  std::vector<float> memory(256, 2.0f);
  std::atomic<bool> released{false};
  {
    const Buffer out = launch_on_adopted(stream, memory, [&] {
      stream.synchronize();
      released = true;
    });
  }
  stream.synchronize();
  EXPECT_TRUE(released.load());
}

// A release on the stream's worker that synchronizes that stream returns at once (it used to
// wait for itself for ever): the process ends rather than hang when it does not.
void expect_released(const std::atomic<bool>& released) {
  if (!wait_until(released, 30s)) {
    std::fprintf(stderr, "FAILED: the release's synchronize hung on the stream's worker\n");
    std::_Exit(1);  // the worker waits for itself: no teardown could finish
  }
}

// Dropped by an event's record: a task of the stream.
TEST(LaunchRefsRelease, AReleaseThatSynchronizesTheStreamFromItsRecordDoesNotHang) {
  Stream stream = device("cpu:0").create_stream();
  std::vector<float> memory(256, 3.0f);
  std::atomic<bool> released{false};
  std::atomic<bool> record_pending{false};
  const Event event = stream.device().create_event();
  {
    // The gate holds the worker until the launch and the record are queued: no idle sweep
    // comes between them, so the record's sweep drops the buffer.
    test::Gate gate;
    stream.host_callback(gate.hold());
    const Buffer out = launch_on_adopted(stream, memory, [&] {
      record_pending = !event.query();  // its fence is signalled after the sweep
      stream.synchronize();
      released = true;
    });
    stream.record(event);
  }
  expect_released(released);
  event.synchronize();
  stream.synchronize();
  EXPECT_TRUE(record_pending.load()) << "the record's sweep should have dropped the buffer";
}

// Dropped by the worker's idle sweep, with work the release itself enqueues after it.
TEST(LaunchRefsRelease, AReleaseThatSynchronizesTheStreamFromTheIdleSweepDoesNotHang) {
  Stream stream = device("cpu:0").create_stream();
  std::vector<float> memory(256, 4.0f);
  const std::thread::id test_thread = std::this_thread::get_id();
  std::atomic<bool> released{false}, on_worker{false};
  std::atomic<int> callbacks{0};
  {
    test::Gate gate;
    stream.host_callback(gate.hold());
    const Buffer out = launch_on_adopted(stream, memory, [&] {
      on_worker = std::this_thread::get_id() != test_thread;
      stream.host_callback([&] { ++callbacks; });
      stream.synchronize();
      released = true;
    });
  }
  expect_released(released);
  stream.synchronize();
  EXPECT_TRUE(on_worker.load()) << "the worker's sweep should have dropped the buffer";
  EXPECT_EQ(callbacks.load(), 1);
}

}  // namespace
}  // namespace hal
