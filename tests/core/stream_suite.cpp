// Streams on every device: copies in every direction, fills, host callbacks, order and
// asynchrony, and the errors of each.
#include <numeric>

#include "device_suite.hpp"

namespace hal::test {
namespace {

using StreamSuite = DeviceTest;

TEST_P(StreamSuite, BelongsToItsDevice) {
  Stream stream = device().create_stream();
  EXPECT_EQ(stream.device(), device());
  EXPECT_TRUE(stream.query());  // nothing enqueued yet
  stream.synchronize();
  Event event = stream.record();
  EXPECT_EQ(event.device(), device());
}

TEST_P(StreamSuite, CopiesRoundTripThroughTheDevice) {
  const size_t size = 1 << 20;
  const auto input = pattern_bytes(size, 1);
  std::vector<unsigned char> output(size, 0);
  Stream stream = device().create_stream();
  Buffer a = device().allocate(size);
  Buffer b = device().allocate(size);
  stream.copy_from_host(a, input.data(), size);
  stream.copy(b, a, size);
  stream.copy_to_host(output.data(), b, size);
  stream.synchronize();
  EXPECT_EQ(output, input);
}

TEST_P(StreamSuite, CopiesHonourOffsets) {
  const auto input = pattern_bytes(256, 2);
  Stream stream = device().create_stream();
  Buffer a = device().allocate(1024);
  Buffer b = device().allocate(1024);
  stream.fill(a, uint8_t{0}, 1024);
  stream.fill(b, uint8_t{0xee}, 1024);
  stream.copy_from_host(a, input.data(), 256, /*dst_offset=*/100);
  stream.copy(b, a, 200, /*dst_offset=*/500, /*src_offset=*/150);
  std::vector<unsigned char> out(1024);
  stream.copy_to_host(out.data(), b, 1024);
  stream.synchronize();
  for (size_t i = 0; i < 1024; ++i) {
    const unsigned char expected = (i >= 500 && i < 700) ? input[i - 500 + 50] : 0xee;
    ASSERT_EQ(out[i], expected) << "byte " << i;
  }
}

TEST_P(StreamSuite, CopyWithinOneBufferMayOverlap) {
  std::vector<uint32_t> values(64);
  std::iota(values.begin(), values.end(), 0u);
  Stream stream = device().create_stream();
  Buffer buffer = device().allocate(values.size() * 4);
  stream.copy_from_host(buffer, values.data(), values.size() * 4);
  stream.copy(buffer, buffer, 32 * 4, /*dst_offset=*/8 * 4, /*src_offset=*/0);
  std::vector<uint32_t> out(64);
  stream.copy_to_host(out.data(), buffer, out.size() * 4);
  stream.synchronize();
  for (uint32_t i = 0; i < 64; ++i) {
    const uint32_t expected = (i >= 8 && i < 40) ? i - 8 : i;
    ASSERT_EQ(out[i], expected) << i;
  }
}

TEST_P(StreamSuite, FillsEveryPatternSize) {
  Stream stream = device().create_stream();
  Buffer buffer = device().allocate(256);
  for (size_t pattern_size : {1u, 2u, 4u, 8u, 16u}) {
    const auto pattern = pattern_bytes(pattern_size, static_cast<unsigned>(pattern_size));
    stream.fill(buffer, uint8_t{0}, 256);
    stream.fill(buffer, pattern.data(), pattern_size, 128, /*dst_offset=*/64);
    std::vector<unsigned char> out(256);
    stream.copy_to_host(out.data(), buffer, 256);
    stream.synchronize();
    for (size_t i = 0; i < 256; ++i) {
      const unsigned char expected = (i >= 64 && i < 192) ? pattern[(i - 64) % pattern_size] : 0;
      ASSERT_EQ(out[i], expected) << "pattern " << pattern_size << " byte " << i;
    }
  }
  std::vector<float> floats(64);
  stream.fill(buffer, 2.5f, 64);
  stream.copy_to_host(floats.data(), buffer, 256);
  stream.synchronize();
  for (float value : floats) ASSERT_EQ(value, 2.5f);
  // A pattern in an array is a pattern, not a 4-byte value repeated 2 times per element.
  const unsigned char array[4] = {1, 2, 3, 4};
  stream.fill(buffer, array, sizeof array, 8);
  unsigned char head[8];
  stream.copy_to_host(head, buffer, 8);
  stream.synchronize();
  EXPECT_EQ(std::vector<unsigned char>(head, head + 8),
            (std::vector<unsigned char>{1, 2, 3, 4, 1, 2, 3, 4}));
}

TEST_P(StreamSuite, BadFillsAreRefusedAndEnqueueNothing) {
  Stream stream = device().create_stream();
  Buffer buffer = device().allocate(64);
  stream.fill(buffer, uint8_t{7}, 64);
  const uint32_t pattern = 0;
  expect_error([&] { stream.fill(buffer, &pattern, 3, 63); }, ErrorCode::InvalidArgument,
               {id(), "3 bytes", "1, 2, 4, 8 or 16"});
  expect_error([&] { stream.fill(buffer, &pattern, 4, 10); }, ErrorCode::InvalidArgument,
               {"10 bytes", "multiple", "4-byte"});
  expect_error([&] { stream.fill(buffer, &pattern, 4, 64, 4); }, ErrorCode::OutOfRange,
               {"64 bytes", "offset 4", "64 bytes on " + id()});
  expect_error([&] { stream.fill(buffer, nullptr, 4, 64); }, ErrorCode::InvalidArgument, {"null"});
  std::vector<unsigned char> out(64);
  stream.copy_to_host(out.data(), buffer, 64);
  stream.synchronize();
  for (unsigned char byte : out) ASSERT_EQ(byte, 7);
}

TEST_P(StreamSuite, OutOfBoundsCopiesAreRefusedWithTheNumbers) {
  Stream stream = device().create_stream();
  Buffer small = device().allocate(100);
  Buffer large = device().allocate(1000);
  std::vector<unsigned char> host(2000, 1);
  stream.fill(small, uint8_t{9}, 100);
  expect_error([&] { stream.copy_from_host(small, host.data(), 101); }, ErrorCode::OutOfRange,
               {"copy_from_host", id(), "101 bytes", "offset 0", "100 bytes"});
  expect_error([&] { stream.copy_from_host(small, host.data(), 10, 95); }, ErrorCode::OutOfRange,
               {"10 bytes", "offset 95"});
  expect_error([&] { stream.copy_to_host(host.data(), small, 1, 100); }, ErrorCode::OutOfRange,
               {"copy_to_host", "offset 100"});
  expect_error([&] { stream.copy(small, large, 200); }, ErrorCode::OutOfRange,
               {"copy", "destination", "200 bytes"});
  expect_error([&] { stream.copy(large, small, 200); }, ErrorCode::OutOfRange, {"source"});
  expect_error([&] { stream.copy(large, small, 10, SIZE_MAX, 0); }, ErrorCode::OutOfRange,
               {std::to_string(SIZE_MAX)});
  expect_error([&] { stream.copy_from_host(small, nullptr, 4); }, ErrorCode::InvalidArgument,
               {"null", "4 bytes"});
  expect_error([&] { stream.copy_to_host(host.data(), Buffer(), 4); }, ErrorCode::InvalidArgument,
               {"source buffer is empty"});
  // Nothing was enqueued, and the stream works.
  stream.copy_to_host(host.data(), small, 100);
  stream.synchronize();
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(host[i], 9);
}

TEST_P(StreamSuite, ZeroByteCopiesAreNoOps) {
  Stream stream = device().create_stream();
  Buffer buffer = device().allocate(16);
  stream.copy_from_host(buffer, nullptr, 0);
  stream.copy_to_host(nullptr, buffer, 0, 16);
  stream.copy(buffer, buffer, 0);
  stream.synchronize();
  EXPECT_TRUE(stream.query());
}

TEST_P(StreamSuite, HostCallbacksRunInOrder) {
  Stream stream = device().create_stream();
  std::vector<int> order;
  for (int i = 0; i < 1000; ++i) stream.host_callback([&order, i] { order.push_back(i); });
  stream.synchronize();
  ASSERT_EQ(order.size(), 1000u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(order[static_cast<size_t>(i)], i);
  expect_error([&] { stream.host_callback(nullptr); }, ErrorCode::InvalidArgument,
               {"empty function"});
}

TEST_P(StreamSuite, WorkIsAsynchronousAndInOrder) {
  Stream stream = device().create_stream();
  Gate gate;
  Buffer buffer = device().allocate(4);
  const uint32_t value = 42;
  uint32_t out = 0;
  stream.host_callback(gate.hold());
  // These return at once although the stream is blocked.
  stream.copy_from_host(buffer, &value, 4);
  stream.copy_to_host(&out, buffer, 4);
  EXPECT_FALSE(stream.query());
  EXPECT_EQ(out, 0u);
  gate.open();
  stream.synchronize();
  EXPECT_TRUE(stream.query());
  EXPECT_EQ(out, 42u);
}

TEST_P(StreamSuite, IndependentStreamsDoNotWaitForEachOther) {
  Stream blocked = device().create_stream();
  Stream free = device().create_stream();
  Gate gate;
  blocked.host_callback(gate.hold());
  bool ran = false;
  free.host_callback([&ran] { ran = true; });
  free.synchronize();  // would hang if `free` waited for `blocked`
  EXPECT_TRUE(ran);
  EXPECT_FALSE(blocked.query());
  gate.open();
  blocked.synchronize();
}

TEST_P(StreamSuite, FailuresInEnqueuedWorkSurfaceAtSynchronize) {
  Stream stream = device().create_stream();
  bool later_ran = false;
  stream.host_callback([] { throw std::runtime_error("callback failed on purpose"); });
  stream.host_callback([&later_ran] { later_ran = true; });
  expect_error([&] { stream.synchronize(); }, ErrorCode::AsyncFailure,
               {id(), "callback failed on purpose"});
  EXPECT_TRUE(later_ran);
  // Reported once; the stream goes on working.
  stream.synchronize();
  uint32_t out = 0, value = 5;
  Buffer buffer = device().allocate(4);
  stream.copy_from_host(buffer, &value, 4);
  stream.copy_to_host(&out, buffer, 4);
  stream.synchronize();
  EXPECT_EQ(out, 5u);
}

TEST_P(StreamSuite, BuffersLiveUntilTheWorkThatUsesThemIsDone) {
  Stream stream = device().create_stream();
  Gate gate;
  const auto input = pattern_bytes(1 << 16, 3);
  std::vector<unsigned char> out(1 << 16);
  stream.host_callback(gate.hold());
  {
    Buffer temporary = device().allocate(1 << 16);
    stream.copy_from_host(temporary, input.data(), input.size());
    stream.copy_to_host(out.data(), temporary, out.size());
  }  // the last handle is gone while the copies are still queued
  gate.open();
  stream.synchronize();
  EXPECT_EQ(out, input);
}

TEST_P(StreamSuite, DestroyingAStreamFinishesItsWork) {
  uint32_t out = 0;
  const uint32_t value = 77;
  {
    Stream stream = device().create_stream();
    Buffer buffer = device().allocate(4);
    stream.copy_from_host(buffer, &value, 4);
    stream.host_callback([] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); });
    stream.copy_to_host(&out, buffer, 4);
  }
  EXPECT_EQ(out, 77u);
}

HAL_DEVICE_SUITE(StreamSuite);

}  // namespace
}  // namespace hal::test
