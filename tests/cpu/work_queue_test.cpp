#include "backends/async/work_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <new>
#include <thread>
#include <vector>

namespace hal::async {
namespace {

TEST(WorkQueue, RunsTasksInPushOrderOnOneThread) {
  WorkQueue queue;
  std::vector<int> order;
  std::thread::id runner;
  for (int i = 0; i < 10'000; ++i)
    queue.push([&, i] {
      if (i == 0) runner = std::this_thread::get_id();
      EXPECT_EQ(std::this_thread::get_id(), runner);
      order.push_back(i);
    });
  queue.wait_all();
  ASSERT_EQ(order.size(), 10'000u);
  for (int i = 0; i < 10'000; ++i) ASSERT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_NE(runner, std::this_thread::get_id());
}

TEST(WorkQueue, TicketsCountFromOne) {
  WorkQueue queue;
  EXPECT_EQ(queue.push([] {}), 1u);
  EXPECT_EQ(queue.push([] {}), 2u);
  queue.wait_for(2);
  EXPECT_TRUE(queue.idle());
}

// A push whose prepare() throws queues nothing: the task never runs, also() is not called, and
// the ticket goes to the next push (what a CPU launch relies on when it cannot reserve room
// for holding its buffers: the caller sees the error and no task uses them unheld).
TEST(WorkQueue, APushWhosePreparationFailsQueuesNothing) {
  WorkQueue queue;
  std::atomic<int> ran{0}, also_called{0};
  EXPECT_THROW(queue.push([&] { ran.fetch_add(1); }, [] { throw std::bad_alloc(); },
                          [&](uint64_t) noexcept { also_called.fetch_add(1); }),
               std::bad_alloc);
  uint64_t also_ticket = 0;
  const uint64_t ticket =
      queue.push([&] { ran.fetch_add(10); }, [] {}, [&](uint64_t t) noexcept { also_ticket = t; });
  EXPECT_EQ(ticket, 1u);
  EXPECT_EQ(also_ticket, 1u);
  queue.wait_all();
  EXPECT_EQ(ran.load(), 10);
  EXPECT_EQ(also_called.load(), 0);
  EXPECT_TRUE(queue.idle());
}

TEST(WorkQueue, KeepsTheFirstErrorAndGoesOn) {
  WorkQueue queue;
  int ran = 0;
  queue.push([] { throw std::runtime_error("first"); });
  queue.push([] { throw std::runtime_error("second"); });
  queue.push([&] { ++ran; });
  queue.wait_all();
  EXPECT_EQ(ran, 1);
  auto error = queue.take_error();
  ASSERT_TRUE(error);
  try {
    std::rethrow_exception(error);
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "first");
  }
  EXPECT_FALSE(queue.take_error());
}

TEST(WorkQueue, WaitersWakeAfterTheWorkerSlept) {
  WorkQueue queue;
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the worker goes to sleep
  std::atomic<bool> ran{false};
  queue.push([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the waiter goes to sleep
    ran = true;
  });
  queue.wait_all();
  EXPECT_TRUE(ran.load());
}

TEST(WorkQueue, ManyProducersAndWaiters) {
  WorkQueue queue;
  std::atomic<int> ran{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < 8; ++p)
    producers.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        const uint64_t ticket = queue.push([&] { ran.fetch_add(1); });
        if (i % 50 == 0) queue.wait_for(ticket);
      }
    });
  for (auto& producer : producers) producer.join();
  queue.wait_all();
  EXPECT_EQ(ran.load(), 8 * 500);
}

// A worker that has just run a batch lets the next tasks gather before it looks again; a
// waiter cuts that short. Bursts of pushes with pauses between them, and three threads waiting
// for tickets as they go: every wait returns with its ticket run, and order holds.
TEST(WorkQueue, WaitersAmidBurstsOfPushesSeeTheirTasksRun) {
  WorkQueue queue;
  std::vector<int> order;  // the worker's only
  std::atomic<uint64_t> latest{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> waiters;
  for (int w = 0; w < 3; ++w)
    waiters.emplace_back([&] {
      while (!done.load()) {
        const uint64_t ticket = latest.load();
        if (ticket == 0) continue;
        queue.wait_for(ticket);
        EXPECT_GE(queue.completed(), ticket);
      }
    });
  for (int burst = 0; burst < 200; ++burst) {
    for (int i = 0; i < 25; ++i) {
      const int value = burst * 25 + i;
      latest.store(queue.push([&order, value] { order.push_back(value); }));
    }
    if (burst % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  queue.wait_all();
  done.store(true);
  for (std::thread& waiter : waiters) waiter.join();
  ASSERT_EQ(order.size(), 5000u);
  for (size_t i = 0; i < order.size(); ++i) ASSERT_EQ(order[i], static_cast<int>(i));
}

TEST(WorkQueue, DestructorRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    WorkQueue queue;
    for (int i = 0; i < 100; ++i) queue.push([&] { ran.fetch_add(1); });
  }
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace hal::async
