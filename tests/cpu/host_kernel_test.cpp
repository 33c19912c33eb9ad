// Host kernels on cpu:0: every work item of 1-, 2- and 3-D ranges exactly once, chunked.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "hal/hal.hpp"

namespace hal {
namespace {

void expect_each_item_once(const LaunchConfig& config) {
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  const uint64_t total = config.total();
  Buffer counts = cpu.allocate(total * 4);
  stream.fill(counts, uint32_t{0}, total);
  const Kernel count = host_kernel("count", [g = config.global](Index3 i, const KernelArgs& args) {
    auto* c = args.ptr<std::atomic<uint32_t>>(0);
    c[(i[2] * g[1] + i[1]) * g[0] + i[0]].fetch_add(1, std::memory_order_relaxed);
  });
  stream.launch(count, config, {counts});
  stream.synchronize();
  const uint32_t* c = counts.data<uint32_t>();
  for (uint64_t i = 0; i < total; ++i) ASSERT_EQ(c[i], 1u) << "item " << i;
}

TEST(HostKernel, CoversOneDimensionalRanges) {
  for (uint64_t n : {1ull, 7ull, 1000ull, 40'000ull, 1'000'003ull})
    expect_each_item_once(LaunchConfig::linear(n));
}

TEST(HostKernel, CoversTwoAndThreeDimensionalRanges) {
  expect_each_item_once(LaunchConfig::grid(3, 5));
  expect_each_item_once(LaunchConfig::grid(512, 300));
  expect_each_item_once(LaunchConfig::grid(17, 19, 23));
  expect_each_item_once(LaunchConfig::grid(64, 64, 40));
  expect_each_item_once(LaunchConfig::grid(100'000, 1, 3));
}

TEST(HostKernel, ChunksRespectTheLocalSizeAsGrain) {
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  std::mutex mutex;
  std::vector<std::pair<uint64_t, uint64_t>> chunks;
  LaunchConfig config = LaunchConfig::linear(1 << 20);
  config.local = {1000, 0, 0};
  stream.launch(host_kernel("chunks",
                            [&](const KernelChunk& chunk) {
                              std::lock_guard lock(mutex);
                              chunks.emplace_back(chunk.begin[0], chunk.end[0]);
                            }),
                config);
  stream.synchronize();
  std::sort(chunks.begin(), chunks.end());
  uint64_t next = 0;
  for (auto [begin, end] : chunks) {
    EXPECT_EQ(begin, next);
    EXPECT_EQ(begin % 1000, 0u);
    next = end;
  }
  EXPECT_EQ(next, 1u << 20);
  if (std::thread::hardware_concurrency() > 1) {
    EXPECT_GT(chunks.size(), 1u);
  }
}

TEST(HostKernel, LargeKernelsRunOnSeveralThreads) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one hardware thread";
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  std::mutex mutex;
  std::set<std::thread::id> threads;
  std::atomic<int> arrived{0};
  stream.launch(host_kernel("spread",
                            [&](const KernelChunk&) {
                              arrived.fetch_add(1);
                              for (int spin = 0; spin < 2'000'000 && arrived.load() < 2; ++spin)
                                std::this_thread::yield();
                              std::lock_guard lock(mutex);
                              threads.insert(std::this_thread::get_id());
                            }),
                LaunchConfig::linear(1 << 20));
  stream.synchronize();
  EXPECT_GE(threads.size(), 2u);
}

TEST(HostKernel, AnExceptionInAnyChunkIsReportedBySynchronize) {
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  stream.launch(host_kernel("fails",
                            [](Index3 i, const KernelArgs&) {
                              if (i[0] == 123'456) throw std::runtime_error("item 123456 failed");
                            }),
                LaunchConfig::linear(1 << 20));
  try {
    stream.synchronize();
    FAIL() << "expected AsyncFailure";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::AsyncFailure);
    EXPECT_NE(error.message().find("item 123456 failed"), std::string::npos) << error.message();
  }
}

TEST(HostKernel, KernelNameIsKept) {
  EXPECT_EQ(host_kernel("my_kernel", [](const KernelChunk&) {}).name(), "my_kernel");
  EXPECT_THROW(make_host_kernel("empty", nullptr), Error);
  EXPECT_THROW((void)Kernel().name(), Error);
}

}  // namespace
}  // namespace hal
