// Copies and events between devices of different backends: cpu:0, the "far" test
// accelerators, whose memory the host cannot address, so every copy is really staged, and
// every other visible device (OpenCL, CUDA ...), each paired with all the others.

#include "device_suite.hpp"
#include "support/far_backend.hpp"

namespace hal::test {
namespace {

class CrossBackend : public ::testing::Test {
 protected:
  Device cpu = device("cpu:0");
  Device far0 = device("far:0");
  Device far1 = device("far:1");
};

TEST_F(CrossBackend, FarDevicesAreRegisteredAndListed) {
  bool listed = false;
  for (const auto& backend : Registry::instance().backends())
    if (backend.name == "far") listed = backend.available && backend.device_count == kFarDevices;
  EXPECT_TRUE(listed);
  EXPECT_FALSE(far0.allocate(8).host_accessible());
}

TEST_F(CrossBackend, CopiesInEveryDirectionOnEitherSidesStream) {
  const size_t size = 300'000;
  const auto input = pattern_bytes(size, 11);
  for (const Device& stream_device : {cpu, far0, far1}) {
    Stream stream = stream_device.create_stream();
    Buffer on_cpu = cpu.allocate(size);
    Buffer on_far0 = far0.allocate(size);
    Buffer on_far1 = far1.allocate(size);
    std::vector<unsigned char> out(size);
    stream.copy_from_host(on_far0, input.data(),
                          size);         // host -> far0, maybe from another device's stream
    stream.copy(on_cpu, on_far0, size);  // far0 -> cpu
    stream.copy(on_far1, on_cpu, size);  // cpu -> far1
    stream.copy(on_far0, on_far1, size / 2, 0, size / 2);  // far1 -> far0, no peer access: staged
    stream.copy_to_host(out.data(), on_far0, size);
    stream.synchronize();
    for (size_t i = 0; i < size; ++i) {
      const unsigned char expected = i < size / 2 ? input[i + size / 2] : input[i];
      ASSERT_EQ(out[i], expected) << "stream of " << stream_device.id() << ", byte " << i;
    }
  }
}

TEST_F(CrossBackend, StagedCopiesKeepStreamOrder) {
  Stream stream = cpu.create_stream();
  Gate gate;
  Buffer on_cpu = cpu.allocate(4);
  Buffer on_far = far0.allocate(4);
  uint32_t first = 1, second = 2, out = 0;
  stream.host_callback(gate.hold());
  stream.copy_from_host(on_cpu, &first, 4);
  stream.copy(on_far, on_cpu, 4);
  stream.copy_from_host(on_cpu, &second, 4);
  stream.copy_to_host(&out, on_far, 4);
  gate.open();
  stream.synchronize();
  EXPECT_EQ(out, 1u);
}

TEST_F(CrossBackend, StreamsWaitOnEventsOfAnotherBackend) {
  Stream far_stream = far0.create_stream();
  Stream cpu_stream = cpu.create_stream();
  Gate gate;
  Buffer on_far = far0.allocate(4);
  Buffer on_cpu = cpu.allocate(4);
  const uint32_t value = 99;
  far_stream.host_callback(gate.hold());
  far_stream.copy_from_host(on_far, &value, 4);
  Event done = far_stream.record();
  cpu_stream.wait(done);
  cpu_stream.copy(on_cpu, on_far, 4);
  EXPECT_FALSE(cpu_stream.query());
  gate.open();
  cpu_stream.synchronize();
  EXPECT_EQ(*on_cpu.data<uint32_t>(), 99u);
}

TEST_F(CrossBackend, EveryPairOfDevicesCopiesBothWaysOnEitherSidesStream) {
  const size_t size = 70'001;  // odd: no copy path may assume aligned sizes
  const auto input = pattern_bytes(size, 5);
  const std::vector<Device> all = devices();
  for (const Device& a : all)
    for (const Device& b : all) {
      if (a == b) continue;
      for (const Device& stream_device : {a, b}) {
        Stream stream = stream_device.create_stream();
        Buffer on_a = a.allocate(size), on_b = b.allocate(size);
        std::vector<unsigned char> out(size);
        stream.copy_from_host(on_a, input.data(), size);
        stream.copy(on_b, on_a, size);
        if (stream_device == a) {  // and back, over a cleared source
          stream.fill(on_a, uint8_t{0}, size);
          stream.copy(on_a, on_b, size);
        }
        stream.copy_to_host(out.data(), stream_device == a ? on_a : on_b, size);
        stream.synchronize();
        ASSERT_EQ(out, input) << a.id() << " -> " << b.id() << " on a stream of "
                              << stream_device.id();
      }
    }
}

TEST_F(CrossBackend, EveryDeviceWaitsOnEventsOfEveryOther) {
  const std::vector<Device> all = devices();
  for (const Device& a : all)
    for (const Device& b : all) {
      if (a == b) continue;
      Stream producer = a.create_stream();
      Stream consumer = b.create_stream();
      Gate gate;
      Buffer on_a = a.allocate(4), on_b = b.allocate(4);
      const uint32_t value = 7;
      uint32_t out = 0;
      producer.host_callback(gate.hold());
      producer.copy_from_host(on_a, &value, 4);
      Event done = producer.record();
      consumer.wait(done);
      consumer.copy(on_b, on_a, 4);
      consumer.copy_to_host(&out, on_b, 4);
      EXPECT_FALSE(consumer.query()) << b.id() << " did not wait for " << a.id();
      gate.open();
      consumer.synchronize();
      EXPECT_EQ(out, 7u) << a.id() << " -> " << b.id();
    }
}

TEST_F(CrossBackend, FillOfAnotherDevicesBufferIsRefused) {
  Stream stream = cpu.create_stream();
  Buffer on_far = far0.allocate(16);
  expect_error([&] { stream.fill(on_far, uint8_t{1}, 16); }, ErrorCode::InvalidArgument,
               {"cpu:0", "far:0"});
}

TEST_F(CrossBackend, OutOfBoundsAcrossBackendsIsRefused) {
  Stream stream = cpu.create_stream();
  Buffer on_far = far0.allocate(16);
  Buffer on_cpu = cpu.allocate(32);
  expect_error([&] { stream.copy(on_far, on_cpu, 32); }, ErrorCode::OutOfRange,
               {"far:0", "16 bytes"});
}

}  // namespace
}  // namespace hal::test
