// Streams on every device: the errors of fills, copies and host callbacks, and that a refused
// call enqueues nothing. Copies, fills, order, asynchrony and failures surfacing at
// synchronize are conformance (cts/copy_cases.cpp, cts/stream_cases.cpp).
#include <chrono>
#include <future>
#include <thread>

#include "device_suite.hpp"

namespace hal::test {
namespace {

using StreamSuite = DeviceTest;

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
  // Counts of elements whose bytes pass 2^64 wrapped to a small range inside the buffer.
  expect_error([&] { stream.fill(buffer, 1.0, 4, size_t{1} << 61); }, ErrorCode::OutOfRange,
               {"fill of 4 elements of 8 bytes from element 2305843009213693952", "2^64"});
  expect_error([&] { stream.fill(buffer, 1.0f, size_t{1} << 62); }, ErrorCode::OutOfRange,
               {"fill of 4611686018427387904 elements"});
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

// The last handle of a stream, held by its own callback, goes on the stream's own thread after
// the callback ran: the stream is destroyed elsewhere, not by waiting for that thread (the CPU
// worker joined itself and aborted the process; sim's callback thread waited for itself).
TEST_P(StreamSuite, AStreamWhoseOwnCallbackHeldItsLastHandleIsDestroyedElsewhere) {
  std::promise<void> ran;
  std::future<void> done = ran.get_future();
  Buffer buffer = device().allocate(64);
  {
    Gate gate;
    Stream stream = device().create_stream();
    stream.host_callback(gate.hold());
    stream.fill(buffer, uint8_t{5}, 64);
    stream.host_callback([keep = stream, &ran] { ran.set_value(); });
  }  // the gate opens after the handle here has gone: the callback's is the last
  ASSERT_EQ(done.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  Stream other = device().create_stream();
  std::vector<unsigned char> out(64);
  other.copy_to_host(out.data(), buffer, 64);
  other.synchronize();
  for (unsigned char byte : out) ASSERT_EQ(byte, 5);
}

TEST_P(StreamSuite, AnEmptyCallbackIsRefused) {
  Stream stream = device().create_stream();
  expect_error([&] { stream.host_callback(nullptr); }, ErrorCode::InvalidArgument,
               {"empty function"});
}

// keep_until_done holds its value while the work before it has yet to run (here held back by a
// callback waiting on a flag), and lets it go once that work has run.
TEST_P(StreamSuite, KeepUntilDoneHoldsItsValueUntilTheWorkBeforeItHasRun) {
  Stream stream = device().create_stream();
  std::promise<void> open;
  std::shared_future<void> opened = open.get_future().share();
  stream.host_callback([opened] { opened.wait(); });
  auto value = std::make_shared<std::vector<float>>(16, 1.0f);
  const std::weak_ptr<std::vector<float>> watch = value;
  stream.keep_until_done(std::move(value));
  EXPECT_FALSE(watch.expired()) << "let go while the work before it was held back";
  open.set_value();
  stream.synchronize();
  // Dropped by whichever thread ran the work: at most a moment after synchronize.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!watch.expired() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(watch.expired()) << "still held 2 s after the stream synchronized";
  expect_error([&] { stream.keep_until_done(nullptr); }, ErrorCode::InvalidArgument,
               {id(), "keep_until_done", "empty pointer"});
}

HAL_DEVICE_SUITE(StreamSuite);

}  // namespace
}  // namespace hal::test
