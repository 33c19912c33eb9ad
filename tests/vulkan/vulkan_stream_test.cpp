// Memory and streams of a Vulkan device: copies in every direction (through mapped memory, and
// staged where HAL_VULKAN_STAGING=1 turns mapping off), fills, events between streams, host
// callbacks in order, many threads on one stream, and dependent commands batched into one
// command buffer.
#include <chrono>
#include <numeric>
#include <thread>

#include "backends/vulkan/vulkan_shaders.hpp"
#include "vulkan_fixture.hpp"

namespace hal::test {
namespace {

using VulkanStreamTest = VulkanTest;

std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 31 + seed);
  return bytes;
}

TEST_F(VulkanStreamTest, CopiesRoundTripAtOffsets) {
  Stream stream = device.create_stream();
  for (size_t bytes : {size_t{1}, size_t{3}, size_t{4096}, size_t{1} << 20}) {
    for (size_t offset : {size_t{0}, size_t{5}}) {
      const std::vector<uint8_t> in = pattern_bytes(bytes, static_cast<uint8_t>(offset));
      std::vector<uint8_t> out(bytes, 0);
      Buffer buffer = device.allocate(bytes + offset);
      stream.copy_from_host(buffer, in.data(), bytes, offset);
      stream.copy_to_host(out.data(), buffer, bytes, offset);
      stream.synchronize();
      ASSERT_EQ(in, out) << bytes << " bytes at offset " << offset;
    }
  }
}

TEST_F(VulkanStreamTest, DeviceCopiesIncludingOverlap) {
  Stream stream = device.create_stream();
  const size_t n = 10000;
  const std::vector<uint8_t> in = pattern_bytes(n, 7);
  Buffer a = device.allocate(n), b = device.allocate(n);
  stream.copy_from_host(a, in.data(), n);
  stream.copy(b, a, n - 100, 100, 0);  // b[100..] = a[0..]
  stream.copy(b, b, n - 200, 0, 100);  // overlapping: b[0..] = b[100..] = a[0..]
  std::vector<uint8_t> out(n);
  stream.copy_to_host(out.data(), b, n);
  stream.synchronize();
  for (size_t i = 0; i < n - 200; ++i) ASSERT_EQ(out[i], in[i]) << i;
}

TEST_F(VulkanStreamTest, FillsEveryPatternSize) {
  Stream stream = device.create_stream();
  const size_t bytes = 4096;
  Buffer buffer = device.allocate(bytes + 3);
  for (size_t pattern_size : {1, 2, 4, 8, 16}) {
    for (size_t offset : {size_t{0}, pattern_size == 1 ? size_t{3} : pattern_size}) {
      const std::vector<uint8_t> pattern = pattern_bytes(pattern_size, 11);
      std::vector<uint8_t> zero(bytes + 3, 0), out(bytes + 3);
      stream.copy_from_host(buffer, zero.data(), zero.size());
      stream.fill(buffer, pattern.data(), pattern_size, bytes - pattern_size, offset);
      stream.copy_to_host(out.data(), buffer, out.size());
      stream.synchronize();
      for (size_t i = 0; i < out.size(); ++i) {
        const bool inside = i >= offset && i < offset + bytes - pattern_size;
        ASSERT_EQ(out[i], inside ? pattern[(i - offset) % pattern_size] : 0)
            << "pattern " << pattern_size << " at " << offset << ", byte " << i;
      }
    }
  }
}

TEST_F(VulkanStreamTest, HostMemoryKindsAreMapped) {
  Stream stream = device.create_stream();
  Buffer pinned = device.allocate(256, MemoryKind::pinned_host);
  ASSERT_NE(pinned.host_data(), nullptr);
  std::memset(pinned.host_data(), 0x5a, 256);
  Buffer on_device = device.allocate(256);
  stream.copy(on_device, pinned, 256);
  std::vector<uint8_t> out(256);
  stream.copy_to_host(out.data(), on_device, 256);
  stream.synchronize();
  EXPECT_EQ(out, std::vector<uint8_t>(256, 0x5a));
}

TEST_F(VulkanStreamTest, EventsOrderTwoStreams) {
  Stream producer = device.create_stream(), consumer = device.create_stream();
  Gate gate;
  const size_t n = 1 << 16;
  const std::vector<uint8_t> in = pattern_bytes(n, 3);
  Buffer a = device.allocate(n), b = device.allocate(n);
  Event written = device.create_event();
  producer.host_callback(gate.hold());  // nothing on the producer runs before the gate opens
  producer.copy_from_host(a, in.data(), n);
  producer.record(written);
  consumer.wait(written);
  consumer.copy(b, a, n);
  std::vector<uint8_t> out(n);
  consumer.copy_to_host(out.data(), b, n);
  EXPECT_FALSE(written.query());
  EXPECT_FALSE(consumer.query());
  gate.open();
  consumer.synchronize();
  EXPECT_TRUE(written.query());
  EXPECT_EQ(out, in);
}

TEST_F(VulkanStreamTest, HostCallbacksRunInOrderAndErrorsReachSynchronize) {
  Stream stream = device.create_stream();
  std::vector<int> order;
  Buffer buffer = device.allocate(64);
  for (int i = 0; i < 20; ++i) {
    stream.fill(buffer, static_cast<uint32_t>(i), 16);
    stream.host_callback([&order, i] { order.push_back(i); });
  }
  stream.synchronize();
  std::vector<int> expected(20);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
  stream.host_callback([] { throw Error(ErrorCode::Internal, "callback broke on purpose"); });
  expect_error([&] { stream.synchronize(); }, ErrorCode::AsyncFailure,
               {"vulkan:0", "callback broke on purpose"});
  stream.synchronize();  // reported once
}

TEST_F(VulkanStreamTest, ManyThreadsOnOneStream) {
  Stream stream = device.create_stream();
  constexpr int kThreads = 8, kCopies = 25;
  const size_t n = 1024;
  Buffer buffer = device.allocate(n * kThreads);
  std::vector<std::vector<uint8_t>> out(kThreads, std::vector<uint8_t>(n));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const std::vector<uint8_t> in = pattern_bytes(n, static_cast<uint8_t>(t));
      for (int c = 0; c < kCopies; ++c) {
        stream.copy_from_host(buffer, in.data(), n, t * n);
        stream.copy_to_host(out[t].data(), buffer, n, t * n);
        stream.synchronize();
      }
    });
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(out[t], pattern_bytes(n, static_cast<uint8_t>(t))) << "thread " << t;
}

// Launches, copies and fills recorded into a stream's batches (64 commands each, then a
// submission): every command reads what the one before it wrote, across batch boundaries, with
// host commands in between that split the batches.
TEST_F(VulkanStreamTest, DependentCommandsInBatchesRunInOrder) {
  Stream stream = device.create_stream();
  // Binary op 0 (add), flat: out[i] = a[3 + i] + b[i] with the scalar offsets 3 and 0.
  const Kernel add =
      device.compile({"main", std::string(vulkan::vulkan_shader("binary")), KernelLanguage::native},
                     {.defines = {"0=0", "1=0"}});
  const uint32_t n = 4099;
  Buffer a = device.allocate((n + 3) * 4), b = device.allocate(n * 4), c = device.allocate(n * 4);
  stream.fill(a, 0.0f, n + 3);
  stream.fill(b, 1.0f, n);
  constexpr int kSteps = 150;  // over two batches' worth
  for (int step = 0; step < kSteps; ++step) {
    // a[3..] += b, in place; every 25 steps a copy of a[3..] and a host callback between.
    stream.launch(add, LaunchConfig::linear(n), {KernelArg(a, 12), a, b, 3u, 0u, n});
    if (step % 25 == 24) {
      stream.copy(c, a, n * 4, 0, 12);  // c = a[3..]
      stream.host_callback([] {});
    }
  }
  stream.launch(add, LaunchConfig::linear(n), {c, c, c, 0u, 0u, n});  // c = 2 c
  std::vector<float> got_a(n), got_c(n);
  stream.copy_to_host(got_a.data(), a, n * 4, 12);
  stream.copy_to_host(got_c.data(), c, n * 4);
  stream.synchronize();
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(got_a[i], float{kSteps}) << "a, element " << i;
    ASSERT_EQ(got_c[i], 2.0f * kSteps) << "c, element " << i;
  }
}

// Many threads recording launches into one stream's batches at once: each thread's chain of
// in-place adds on its own part of a buffer, between synchronizes of the others.
TEST_F(VulkanStreamTest, ManyThreadsLaunchIntoOneStreamsBatches) {
  Stream stream = device.create_stream();
  const Kernel add =
      device.compile({"main", std::string(vulkan::vulkan_shader("binary")), KernelLanguage::native},
                     {.defines = {"0=0", "1=0"}});
  constexpr int kThreads = 6, kSteps = 90;
  const uint32_t n = 500;
  Buffer x = device.allocate(size_t{n} * 4 * kThreads), one = device.allocate(size_t{n} * 4);
  stream.fill(x, 0.0f, size_t{n} * kThreads);
  stream.fill(one, 1.0f, n);
  stream.synchronize();
  std::vector<std::vector<float>> out(kThreads, std::vector<float>(n));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const KernelArg part(x, size_t{n} * 4 * t);
      for (int step = 0; step < kSteps; ++step) {
        stream.launch(add, LaunchConfig::linear(n), {part, part, one, 0u, 0u, n});
        if (step % 30 == 29) stream.synchronize();
      }
      stream.copy_to_host(out[t].data(), x, size_t{n} * 4, size_t{n} * 4 * t);
      stream.synchronize();
    });
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(out[t], std::vector<float>(n, float{kSteps})) << "thread " << t;
}

// A batch that is never synchronized still runs: query() submits it, and an event recorded
// after it completes once it has.
TEST_F(VulkanStreamTest, QueryAndEventsSubmitTheOpenBatch) {
  Stream stream = device.create_stream();
  const Kernel add =
      device.compile({"main", std::string(vulkan::vulkan_shader("binary")), KernelLanguage::native},
                     {.defines = {"0=0", "1=0"}});
  const uint32_t n = 1000;
  Buffer x = device.allocate(n * 4);
  stream.fill(x, 1.0f, n);
  for (int i = 0; i < 10; ++i)
    stream.launch(add, LaunchConfig::linear(n), {x, x, x, 0u, 0u, n});  // x = 2 x
  Event done = stream.record();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done.query() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(done.query()) << "the batch before the event never completed";
  stream.launch(add, LaunchConfig::linear(n), {x, x, x, 0u, 0u, n});
  while (!stream.query() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(stream.query()) << "the open batch never completed";
  std::vector<float> out(n);
  Stream reader = device.create_stream();
  reader.copy_to_host(out.data(), x, n * 4);
  reader.synchronize();
  EXPECT_EQ(out, std::vector<float>(n, 2048.0f));
}

}  // namespace
}  // namespace hal::test
