// KernelArg::borrow: an argument that refers to a buffer without a reference of its own, and
// whose copies and moves hold one, so a stream that keeps its arguments keeps their buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "hal/hal.hpp"

namespace hal {
namespace {

long references(const Buffer& buffer) { return buffer.impl().use_count(); }

TEST(KernelArgBorrow, RefersToTheBufferWithoutAReference) {
  const Buffer buffer = device("cpu:0").allocate(64);
  const long before = references(buffer);
  const KernelArg arg = KernelArg::borrow(buffer, 16);
  EXPECT_EQ(arg.kind(), KernelArg::Kind::buffer);
  EXPECT_EQ(arg.offset(), 16u);
  EXPECT_EQ(arg.buffer().impl(), buffer.impl());
  EXPECT_EQ(references(buffer), before);
}

TEST(KernelArgBorrow, CopiesAndMovesHoldTheirOwnReference) {
  std::vector<KernelArg> kept;
  Buffer buffer = device("cpu:0").allocate(64);
  const BufferImpl* memory = buffer.impl().get();
  {
    const KernelArg borrowed = KernelArg::borrow(buffer, 8);
    kept.push_back(borrowed);  // a copy
    KernelArg moved_from = KernelArg::borrow(buffer, 24);
    kept.push_back(std::move(moved_from));  // a move
    KernelArg assigned;
    assigned = KernelArg::borrow(buffer, 32);  // a move assignment
    kept.push_back(assigned);
    KernelArg copy_assigned;
    copy_assigned = borrowed;
    kept.push_back(copy_assigned);
  }
  EXPECT_EQ(references(buffer), 5);  // the handle and the four kept arguments
  buffer = Buffer();                 // the arguments alone keep the memory now
  const std::vector<size_t> offsets{8, 24, 32, 8};
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].buffer().impl().get(), memory) << i;
    EXPECT_EQ(kept[i].offset(), offsets[i]) << i;
    EXPECT_EQ(kept[i].kind(), KernelArg::Kind::buffer) << i;
  }
}

TEST(KernelArgBorrow, ScalarsAndLocalMemoryCopyAsBefore) {
  const KernelArg scalar(2.5f), copy = scalar;
  EXPECT_EQ(copy.kind(), KernelArg::Kind::scalar);
  ASSERT_EQ(copy.scalar_size(), sizeof(float));
  float value = 0;
  std::memcpy(&value, copy.scalar_data(), sizeof value);
  EXPECT_EQ(value, 2.5f);
  const KernelArg local = KernelArg::local_memory(256);
  KernelArg moved = local;
  moved = KernelArg(local);
  EXPECT_EQ(moved.kind(), KernelArg::Kind::local_memory);
  EXPECT_EQ(moved.offset(), 256u);
  EXPECT_FALSE(moved.buffer());
}

// A launch of borrowed arguments whose input's handle is dropped before the kernel runs: the
// stream holds that buffer until its work is done, so memory allocated meanwhile (and written at
// once from the host) is other memory.
TEST(KernelArgBorrow, ALaunchKeepsBorrowedBuffersUntilItsWorkIsDone) {
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  constexpr uint64_t n = 1000;
  const Buffer out = cpu.allocate(n * sizeof(float));
  Stream holder = cpu.create_stream();
  holder.launch(host_kernel("hold",
                            [](const KernelChunk&) {
                              std::this_thread::sleep_for(std::chrono::milliseconds(20));
                            }),
                LaunchConfig::linear(1));
  stream.wait(holder.record());  // the launch below runs after the input's handle is gone
  {
    const Buffer in = cpu.allocate(n * sizeof(float));  // written here: the launch alone holds it
    for (uint64_t i = 0; i < n; ++i) in.data<float>()[i] = static_cast<float>(i);
    const Kernel twice = host_kernel("twice", [](const KernelChunk& chunk) {
      float* dst = chunk.args.ptr<float>(0);
      const float* src = chunk.args.ptr<const float>(1);
      for (uint64_t i = chunk.begin[0]; i < chunk.end[0]; ++i) dst[i] = 2 * src[i];
    });
    stream.launch(twice, LaunchConfig::linear(n), {KernelArg::borrow(out), KernelArg::borrow(in)});
  }
  const Buffer meanwhile = cpu.allocate(n * sizeof(float));
  std::fill_n(meanwhile.data<float>(), n, -1.0f);
  stream.synchronize();
  const float* result = out.data<float>();
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(result[i], 2.0f * static_cast<float>(i)) << i;
}

}  // namespace
}  // namespace hal
