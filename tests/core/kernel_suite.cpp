// Kernel launch on every device. Devices that run only compiled kernels skip the host-kernel
// cases with the reason; compiled kernels arrive with the GPU backends.
#include <numeric>

#include "device_suite.hpp"

namespace hal::test {
namespace {

using KernelSuite = DeviceTest;

Kernel saxpy() {
  return host_kernel("saxpy", [](Index3 i, const KernelArgs& args) {
    const float a = args.scalar<float>(0);
    const float* x = args.ptr<float>(1);
    float* y = args.ptr<float>(2);
    y[i[0]] = a * x[i[0]] + y[i[0]];
  });
}

TEST_P(KernelSuite, HostKernelsOnDevicesWithoutThemAreUnsupported) {
  if (runs_host_kernels()) GTEST_SKIP() << id() << " runs host kernels";
  Stream stream = device().create_stream();
  expect_error([&] { stream.launch(saxpy(), LaunchConfig::linear(4)); }, ErrorCode::Unsupported,
               {"saxpy", id(), "host (C++) kernel"});
}

TEST_P(KernelSuite, SaxpyMatchesTheReference) {
  if (!runs_host_kernels()) GTEST_SKIP() << id() << " runs only compiled kernels";
  for (size_t n : {size_t{1}, size_t{1000}, size_t{1} << 20}) {
    std::vector<float> x(n), y(n), out(n);
    std::iota(x.begin(), x.end(), 0.0f);
    std::fill(y.begin(), y.end(), 1.0f);
    Stream stream = device().create_stream();
    Buffer bx = device().allocate(n * 4), by = device().allocate(n * 4);
    stream.copy_from_host(bx, x.data(), n * 4);
    stream.copy_from_host(by, y.data(), n * 4);
    stream.launch(saxpy(), LaunchConfig::linear(n), {2.0f, bx, by});
    stream.copy_to_host(out.data(), by, n * 4);
    stream.synchronize();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 2.0f * x[i] + 1.0f) << "n=" << n << " i=" << i;
  }
}

TEST_P(KernelSuite, LaunchErrorsNameTheKernelAndLeaveTheStreamUsable) {
  if (!runs_host_kernels()) GTEST_SKIP() << id() << " runs only compiled kernels";
  Stream stream = device().create_stream();
  Buffer buffer = device().allocate(16);
  expect_error([&] { stream.launch(Kernel(), LaunchConfig::linear(1)); },
               ErrorCode::InvalidArgument, {"empty kernel"});
  expect_error([&] { stream.launch(saxpy(), LaunchConfig::grid(4, 0)); },
               ErrorCode::InvalidArgument, {"saxpy", id(), "{4, 0, 1}", "zero"});
  expect_error([&] { stream.launch(saxpy(), LaunchConfig::grid(1ull << 32, 1ull << 32, 2)); },
               ErrorCode::InvalidArgument, {"overflows"});
  expect_error(
      [&] {
        stream.launch(saxpy(), LaunchConfig::linear(4), {1.0f, Buffer(), buffer});
      },
      ErrorCode::InvalidArgument, {"argument 1", "empty buffer"});
  expect_error(
      [&] {
        stream.launch(saxpy(), LaunchConfig::linear(4), {1.0f, KernelArg(buffer, 17), buffer});
      },
      ErrorCode::OutOfRange, {"argument 1", "offset 17", "16-byte"});
  // A kernel that reads its arguments wrongly fails when it runs, reported by synchronize.
  stream.launch(saxpy(), LaunchConfig::linear(1), {buffer, buffer, buffer});
  expect_error([&] { stream.synchronize(); }, ErrorCode::AsyncFailure,
               {"argument 0 is not a scalar"});
  stream.launch(saxpy(), LaunchConfig::linear(1), {1.0, buffer, buffer});
  expect_error([&] { stream.synchronize(); }, ErrorCode::AsyncFailure,
               {"8-byte scalar, read as 4"});
  stream.fill(buffer, 1.0f, 4);
  stream.launch(saxpy(), LaunchConfig::linear(4), {3.0f, buffer, buffer});
  float out[4];
  stream.copy_to_host(out, buffer, 16);
  stream.synchronize();
  for (float v : out) EXPECT_EQ(v, 4.0f);
}

TEST_P(KernelSuite, BuffersOfOtherDevicesAreRefusedUnlessTheHostCanReachThem) {
  if (!runs_host_kernels()) GTEST_SKIP() << id() << " runs only compiled kernels";
  for (const Device& other : devices()) {
    if (other == device()) continue;
    Buffer foreign = other.allocate(16);
    if (foreign.host_accessible()) continue;
    Stream stream = device().create_stream();
    expect_error(
        [&] {
          stream.launch(saxpy(), LaunchConfig::linear(4), {1.0f, foreign, foreign});
        },
        ErrorCode::InvalidArgument, {"argument 1", other.id(), "copy it first"});
    return;
  }
  GTEST_SKIP() << "no other device with memory the host cannot address";
}

HAL_DEVICE_SUITE(KernelSuite);

}  // namespace
}  // namespace hal::test
