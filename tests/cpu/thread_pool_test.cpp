#include "backends/cpu/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace hal::cpu {
namespace {

TEST(ThreadPool, CallsEveryIndexExactlyOnce) {
  ThreadPool pool(4);
  for (size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{1000}, size_t{100'000}}) {
    std::vector<std::atomic<int>> hits(count);
    pool.parallel_for(count, [&](size_t i) { hits[i].fetch_add(1); });
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(hits[i].load(), 1) << "count " << count << " index " << i;
  }
}

TEST(ThreadPool, UsesSeveralThreads) {
  ThreadPool pool(4);
  std::mutex mutex;
  std::set<std::thread::id> ids;
  std::atomic<int> arrived{0};
  // Each chunk waits (bounded) until four have arrived, so four threads must take part.
  pool.parallel_for(4, [&](size_t) {
    arrived.fetch_add(1);
    for (int spin = 0; spin < 2'000'000 && arrived.load() < 4; ++spin) std::this_thread::yield();
    std::lock_guard lock(mutex);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ids.size(), 4u);
}

TEST(ThreadPool, PoolOfOneRunsOnTheCaller) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.size(), 1u);
  std::set<std::thread::id> ids;
  pool.parallel_for(100, [&](size_t) { ids.insert(std::this_thread::get_id()); });
  EXPECT_EQ(ids, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ThreadPool, RethrowsTheFirstExceptionAfterAllChunksFinish) {
  ThreadPool pool(4);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.parallel_for(1000,
                                 [&](size_t i) {
                                   ran.fetch_add(1);
                                   if (i % 100 == 7) throw std::runtime_error("chunk failed");
                                 }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 1000);
  // Still usable.
  std::atomic<int> after{0};
  pool.parallel_for(10, [&](size_t) { after.fetch_add(1); });
  EXPECT_EQ(after.load(), 10);
}

TEST(ThreadPool, NestedParallelForDoesNotDeadlock) {
  ThreadPool pool(3);
  std::atomic<int> total{0};
  pool.parallel_for(8, [&](size_t) { pool.parallel_for(8, [&](size_t) { total.fetch_add(1); }); });
  EXPECT_EQ(total.load(), 64);
}

TEST(ThreadPool, ManyCallersAtOnce) {
  ThreadPool pool(4);
  std::vector<std::thread> callers;
  std::atomic<uint64_t> sum{0};
  for (int c = 0; c < 8; ++c)
    callers.emplace_back([&] {
      for (int round = 0; round < 50; ++round)
        pool.parallel_for(64, [&](size_t i) { sum.fetch_add(i); });
    });
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(sum.load(), uint64_t{8} * 50 * (63 * 64 / 2));
}

TEST(ThreadPool, HelpWithNothingToDoReturnsFalse) {
  ThreadPool pool(2);
  EXPECT_FALSE(pool.help());
  pool.parallel_for(10, [](size_t) {});
  EXPECT_FALSE(pool.help());
}

TEST(ThreadPool, AHelperRunsChunksOfAJobInProgress) {
  ThreadPool pool(2);
  const std::thread::id helper = std::this_thread::get_id();
  std::atomic<bool> started{false}, helper_ran{false};
  std::thread caller([&] {
    // The chunks the pool's own threads take wait (bounded) until the helper has run one, so
    // they cannot finish the job without it.
    pool.parallel_for(64, [&](size_t) {
      started.store(true);
      if (std::this_thread::get_id() == helper) {
        helper_ran.store(true);
        return;
      }
      for (int spin = 0; spin < 2'000'000 && !helper_ran.load(); ++spin) std::this_thread::yield();
    });
  });
  while (!started.load()) std::this_thread::yield();
  bool helped = false;
  for (int tries = 0; tries < 1000 && !helper_ran.load(); ++tries) helped = pool.help() || helped;
  caller.join();
  EXPECT_TRUE(helper_ran.load()) << "help() took no chunk of a job that had chunks left";
  EXPECT_TRUE(helped);
}

TEST(ThreadPool, HelpersBesideManyCallersRunEveryIndexOnce) {
  ThreadPool pool(3);
  std::atomic<bool> done{false};
  std::vector<std::thread> helpers;
  for (int h = 0; h < 4; ++h)
    helpers.emplace_back([&] {
      while (!done.load())
        if (!pool.help()) std::this_thread::yield();
    });
  std::vector<std::thread> callers;
  std::vector<std::vector<std::atomic<int>>> hits(8);
  for (auto& row : hits) row = std::vector<std::atomic<int>>(30 * 100);
  for (int c = 0; c < 8; ++c)
    callers.emplace_back([&, c] {
      for (int round = 0; round < 30; ++round)
        pool.parallel_for(100, [&](size_t i) { hits[c][round * 100 + i].fetch_add(1); });
    });
  for (auto& caller : callers) caller.join();
  done.store(true);
  for (auto& helper : helpers) helper.join();
  for (int c = 0; c < 8; ++c)
    for (size_t i = 0; i < hits[c].size(); ++i) ASSERT_EQ(hits[c][i].load(), 1) << c << " " << i;
}

}  // namespace
}  // namespace hal::cpu
