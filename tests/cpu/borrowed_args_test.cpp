// A CPU launch's arguments as its queued task keeps them (borrowed_args.hpp): every kind and
// scalar size comes back as it went in, buffers by address without a reference taken, and a
// launch through a stream hands the kernel exactly those values.
#include "backends/cpu/borrowed_args.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "hal/hal.hpp"

namespace hal {
namespace {

void expect_same(const KernelArg& got, const KernelArg& want, size_t index) {
  SCOPED_TRACE("argument " + std::to_string(index));
  ASSERT_EQ(got.kind(), want.kind());
  EXPECT_EQ(got.offset(), want.offset());
  EXPECT_EQ(got.buffer().impl().get(), want.buffer().impl().get());
  ASSERT_EQ(got.scalar_size(), want.scalar_size());
  EXPECT_EQ(std::memcmp(got.scalar_data(), want.scalar_data(), want.scalar_size()), 0);
}

void expect_round_trip(const std::vector<KernelArg>& args) {
  const cpu::BorrowedArgs borrowed(args);
  bool called = false;
  borrowed.with_args([&](std::span<const KernelArg> rebuilt) {
    called = true;
    ASSERT_EQ(rebuilt.size(), args.size());
    for (size_t i = 0; i < args.size(); ++i) expect_same(rebuilt[i], args[i], i);
  });
  EXPECT_TRUE(called);
}

TEST(BorrowedArgs, EveryScalarSizeComesBackByteForByte) {
  expect_round_trip(
      {KernelArg(int8_t{-7}), KernelArg(uint16_t{0xbeef}), KernelArg(-2.5f), KernelArg(1e300)});
  expect_round_trip({KernelArg(int64_t{-1234567890123}), KernelArg(uint32_t{0xdeadbeef})});
  expect_round_trip({KernelArg()});  // an empty scalar stays empty
  expect_round_trip({});
}

TEST(BorrowedArgs, BuffersComeBackByAddressWithTheirOffsetsAndNoReferenceTaken) {
  const Device cpu = device("cpu:0");
  const Buffer a = cpu.allocate(256), b = cpu.allocate(64);
  const std::vector<KernelArg> args{KernelArg(a, 128), KernelArg::local_memory(4096), KernelArg(b),
                                    KernelArg(3.0f)};
  const long uses_a = a.impl().use_count(), uses_b = b.impl().use_count();  // args' included
  const cpu::BorrowedArgs borrowed(args);
  borrowed.with_args([&](std::span<const KernelArg> rebuilt) {
    for (size_t i = 0; i < args.size(); ++i) expect_same(rebuilt[i], args[i], i);
    EXPECT_EQ(a.impl().use_count(), uses_a);
    EXPECT_EQ(rebuilt[0].buffer().impl().use_count(), 0);  // a handle that owns nothing
  });
  EXPECT_EQ(a.impl().use_count(), uses_a);
  EXPECT_EQ(b.impl().use_count(), uses_b);
}

TEST(BorrowedArgs, AQueuedLaunchSeesEachScalarAndItsBufferAtItsOffset) {
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  Buffer out = cpu.allocate(8 * sizeof(double));
  stream.fill(out, 0.0, 8);
  static const Kernel write = host_kernel("write_scalars", [](const KernelChunk& chunk) {
    double* o = chunk.args.ptr<double>(0);  // already offset by two doubles
    o[0] = chunk.args.scalar<int8_t>(1);
    o[1] = chunk.args.scalar<uint16_t>(2);
    o[2] = chunk.args.scalar<double>(3);
  });
  for (int i = 0; i < 3; ++i)  // queued behind each other: the task holds its own copy
    stream.launch(
        write, LaunchConfig::linear(1),
        {KernelArg(out, 2 * sizeof(double)), int8_t(-3 - i), uint16_t(60000 + i), 0.25 * i});
  stream.synchronize();
  const double* o = out.data<double>();
  EXPECT_EQ(o[0], 0.0);
  EXPECT_EQ(o[1], 0.0);
  EXPECT_EQ(o[2], -5.0);
  EXPECT_EQ(o[3], 60002.0);
  EXPECT_EQ(o[4], 0.5);
}

}  // namespace
}  // namespace hal
