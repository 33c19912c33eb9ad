// The dispatch fast path on cpu:0: tiny ops and launches enqueued on one stream from several
// threads at once run in each thread's order, with the right results, and what the stream held
// for them (launch_refs.hpp) is released once the work has run.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "hal/hal.hpp"

namespace hal {
namespace {

TEST(TinyOpChain, SeveralThreadsOnOneStreamStayOrderedAndCorrect) {
  constexpr int kThreads = 4, kSteps = 300;
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  stream.synchronize();
  cpu.empty_cache();
  const uint64_t allocated_before = cpu.allocator().stats().allocated_bytes.current;
  {
    // One buffer every thread's launches increment: the stream runs its tasks one at a time,
    // so the plain increments add up exactly, whichever thread enqueued them.
    Buffer shared_count = cpu.allocate(sizeof(uint64_t));
    stream.fill(shared_count, uint64_t{0}, 1);
    static const Kernel increment = host_kernel(
        "increment", [](const KernelChunk& chunk) { chunk.args.ptr<uint64_t>(0)[0] += 1; });
    std::vector<std::vector<float>> results(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        // x_{k+1} = x_k * 1 + step, 16 floats: each op reads the one before it, so any
        // reordering on the stream changes the result.
        const Tensor step = full({16}, 1.0 + t, DType::f32, stream);
        const Tensor one = full({16}, 1.0, DType::f32, stream);
        Tensor x = full({16}, 0.0, DType::f32, stream);
        for (int k = 0; k < kSteps; ++k) {
          x = add(mul(x, one, stream), step, stream);  // the old x is dropped while queued
          stream.launch(increment, LaunchConfig::linear(1), {shared_count});
        }
        results[static_cast<size_t>(t)] = x.to_vector<float>(stream);
      });
    for (std::thread& thread : threads) thread.join();
    stream.synchronize();
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(results[static_cast<size_t>(t)],
                std::vector<float>(16, static_cast<float>(kSteps * (1 + t))))
          << "thread " << t;
    EXPECT_EQ(*shared_count.data<uint64_t>(), uint64_t{kThreads} * kSteps);
  }
  // Every buffer of the chains has been dropped and the stream synchronised: the stream holds
  // none of them any longer.
  stream.synchronize();
  EXPECT_EQ(cpu.allocator().stats().allocated_bytes.current, allocated_before);
}

// A buffer whose handle is dropped after a launch that uses it is freed once an event recorded
// after that launch has completed, without synchronising the stream itself.
TEST(TinyOpChain, AnEventAfterALaunchReleasesWhatTheLaunchUsed) {
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  stream.synchronize();
  cpu.empty_cache();
  const uint64_t allocated_before = cpu.allocator().stats().allocated_bytes.current;
  static const Kernel touch = host_kernel(
      "touch", [](const KernelChunk& chunk) { chunk.args.ptr<unsigned char>(0)[0] = 1; });
  {
    Buffer used = cpu.allocate(4096);
    stream.launch(touch, LaunchConfig::linear(1), {used});
  }
  Event done = stream.record();
  done.synchronize();
  EXPECT_EQ(cpu.allocator().stats().allocated_bytes.current, allocated_before);
}

}  // namespace
}  // namespace hal
