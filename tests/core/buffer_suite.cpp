// Buffers on every device: allocation, its errors, and the handle's accessors.
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

TEST_P(BufferSuite, ZeroBytesIsAnInvalidArgument) {
  expect_error([&] { device().allocate(0); }, ErrorCode::InvalidArgument, {id(), "0 bytes"});
  EXPECT_EQ(device().allocate(1).size(), 1u);
}

TEST_P(BufferSuite, AbsurdSizeIsOutOfMemoryWithTheFigures) {
  const size_t absurd = size_t{1} << 62;
  expect_error([&] { device().allocate(absurd); }, ErrorCode::OutOfMemory,
               {id(), std::to_string(absurd), "total", "free"});
  expect_error([&] { device().allocate(SIZE_MAX); }, ErrorCode::OutOfMemory, {id()});
  // The device works as before.
  EXPECT_EQ(device().allocate(1 << 20).size(), 1u << 20);
}

TEST_P(BufferSuite, HostDataOfDeviceOnlyMemoryIsRefused) {
  Buffer buffer = device().allocate(64);
  if (buffer.host_accessible()) {
    EXPECT_NE(buffer.host_data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.host_data()) % 256, 0u) << "256-byte alignment";
  } else {
    expect_error([&] { buffer.host_data(); }, ErrorCode::Unsupported, {id(), "copy_to_host"});
  }
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

TEST_P(BufferSuite, ReportsMemory) {
  const DeviceInfo& info = device().info();
  EXPECT_GT(info.memory_total.bytes, 0u);
  const MemoryFigure free = device().memory_free();
  EXPECT_LE(free.bytes, info.memory_total.bytes);
  EXPECT_EQ(info.id.substr(0, info.id.find(':')), info.backend());
  EXPECT_FALSE(info.uuid.empty());
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.compute_units, 0u);
  EXPECT_FALSE(info.dtypes.empty());
  EXPECT_TRUE(std::is_sorted(info.features.begin(), info.features.end()));
}

HAL_DEVICE_SUITE(BufferSuite);

}  // namespace
}  // namespace hal::test
