// Buffers on every device: kinds a device lacks refused by name, out-of-memory messages with
// their figures, empty handles. Allocation itself, host pointers and what a device says of its
// memory are conformance (cts/memory_cases.cpp, cts/device_cases.cpp).
#include "device_suite.hpp"

namespace hal::test {
namespace {

using BufferSuite = DeviceTest;

TEST_P(BufferSuite, AllocatesEverySupportedKind) {
  for (MemoryKind kind : {MemoryKind::device, MemoryKind::pinned_host, MemoryKind::unified}) {
    Buffer buffer;
    try {
      buffer = device().allocate(4096, kind);
    } catch (const Error& error) {
      // A kind the device lacks is refused by name, never by crashing.
      EXPECT_EQ(error.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(error.message().find(std::string(to_string(kind))), std::string::npos);
      continue;
    }
    EXPECT_EQ(buffer.size(), 4096u);
    EXPECT_EQ(buffer.kind(), kind);
    EXPECT_EQ(buffer.device(), device());
    if (kind != MemoryKind::device) {
      EXPECT_TRUE(buffer.host_accessible()) << to_string(kind);
    }
  }
}

TEST_P(BufferSuite, AbsurdSizeIsOutOfMemoryWithTheFigures) {
  const size_t absurd = size_t{1} << 62;
  expect_error([&] { device().allocate(absurd); }, ErrorCode::OutOfMemory,
               {id(), std::to_string(absurd), "total", "free"});
  expect_error([&] { device().allocate(SIZE_MAX); }, ErrorCode::OutOfMemory, {id()});
  // The device works as before.
  EXPECT_EQ(device().allocate(1 << 20).size(), 1u << 20);
}

TEST_P(BufferSuite, EmptyHandlesThrowInsteadOfCrashing) {
  Buffer empty;
  EXPECT_FALSE(empty);
  expect_error([&] { (void)empty.size(); }, ErrorCode::InvalidArgument, {"empty", "Buffer"});
  expect_error([&] { (void)empty.device(); }, ErrorCode::InvalidArgument, {"Buffer"});
  Device none;
  expect_error([&] { none.allocate(1); }, ErrorCode::InvalidArgument, {"Device"});
  Stream no_stream;
  expect_error([&] { no_stream.synchronize(); }, ErrorCode::InvalidArgument, {"Stream"});
  Event no_event;
  expect_error([&] { no_event.query(); }, ErrorCode::InvalidArgument, {"Event"});
}

HAL_DEVICE_SUITE(BufferSuite);

}  // namespace
}  // namespace hal::test
