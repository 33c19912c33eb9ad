// Many threads, many streams, cross-stream events: every result verified.
#include <thread>

#include "device_suite.hpp"

namespace hal::test {
namespace {

using ConcurrencySuite = DeviceTest;

constexpr int kThreads = 8;
constexpr int kRounds = 40;
constexpr size_t kWords = 1024;

uint32_t expected_word(int thread, int round, size_t i) {
  return static_cast<uint32_t>(thread) * 1'000'003u + static_cast<uint32_t>(round) * 7919u +
         static_cast<uint32_t>(i);
}

// Each thread has a producer and a consumer stream; the consumer waits on the producer's event.
// All threads also share one stream, used by all at once.
TEST_P(ConcurrencySuite, ThreadsEnqueueCopiesAndKernelsWithCrossStreamEvents) {
  Stream shared = device().create_stream();
  const bool kernels = runs_host_kernels();
  const Kernel add_one = host_kernel(
      "add_one", [](Index3 i, const KernelArgs& args) { args.ptr<uint32_t>(0)[i[0]] += 1; });
  std::atomic<int> verified{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Stream producer = device().create_stream();
      Stream consumer = device().create_stream();
      Buffer a = device().allocate(kWords * 4);
      Buffer b = device().allocate(kWords * 4);
      std::vector<uint32_t> input(kWords), output(kWords), echoed(kWords);
      for (int round = 0; round < kRounds; ++round) {
        for (size_t i = 0; i < kWords; ++i) input[i] = expected_word(t, round, i);
        producer.copy_from_host(a, input.data(), kWords * 4);
        if (kernels) producer.launch(add_one, LaunchConfig::linear(kWords), {a});
        Event ready = producer.record();
        consumer.wait(ready);
        consumer.copy(b, a, kWords * 4);
        if (kernels) consumer.launch(add_one, LaunchConfig::linear(kWords), {b});
        consumer.copy_to_host(output.data(), b, kWords * 4);
        Event consumed = consumer.record();
        shared.wait(consumed);
        shared.copy_to_host(echoed.data(), b, kWords * 4);
        shared.record().synchronize();  // covers `consumer`'s work through the event chain
        const uint32_t added = kernels ? 2 : 0;
        for (size_t i = 0; i < kWords; ++i) {
          ASSERT_EQ(output[i], expected_word(t, round, i) + added)
              << "thread " << t << " round " << round;
          ASSERT_EQ(echoed[i], output[i]);
        }
        verified.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(verified.load(), kThreads * kRounds);
}

TEST_P(ConcurrencySuite, ManyThreadsShareOneStreamAndOneEvent) {
  Stream stream = device().create_stream();
  Event event = device().create_event();
  stream.record(event);
  std::atomic<int> callbacks{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      Stream mine = device().create_stream();
      for (int i = 0; i < 200; ++i) {
        stream.host_callback([&callbacks] { callbacks.fetch_add(1); });
        if (i % 10 == 0) stream.record(event);
        mine.wait(event);
        (void)event.query();
      }
      mine.synchronize();
    });
  for (auto& thread : threads) thread.join();
  stream.synchronize();
  EXPECT_EQ(callbacks.load(), kThreads * 200);
  EXPECT_TRUE(event.query());
}

HAL_DEVICE_SUITE(ConcurrencySuite);

}  // namespace
}  // namespace hal::test
