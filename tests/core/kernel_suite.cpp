// Kernel launch errors on every device: host (C++) kernels where the device runs them, kernels
// in hal's portable dialect where it compiles them; a device that does neither skips with the
// reason. Launches and their results, and the compile cache, are conformance
// (cts/kernel_cases.cpp).
#include <cstdint>

#include "device_suite.hpp"

namespace hal::test {
namespace {

constexpr const char* kSaxpySource = R"(
KERNEL void saxpy(float a, GLOBAL const float* x, GLOBAL float* y, uint n) {
  size_t i = global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

Kernel host_saxpy() {
  return host_kernel("saxpy", [](Index3 i, const KernelArgs& args) {
    const float a = args.scalar<float>(0);
    const float* x = args.ptr<float>(1);
    float* y = args.ptr<float>(2);
    y[i[0]] = a * x[i[0]] + y[i[0]];
  });
}

class KernelSuite : public DeviceTest {
 protected:
  bool compiles() const { return device().info().has_feature(feature::kPortableKernels); }
  // saxpy(a, x, y, n) as this device runs it, or empty when it runs no kernels.
  Kernel saxpy() const {
    if (runs_host_kernels()) return host_saxpy();
    if (compiles()) return device().compile({"saxpy", kSaxpySource});
    return {};
  }
};

TEST_P(KernelSuite, DevicesWithoutACompilerSayTheyCannotCompile) {
  if (compiles()) GTEST_SKIP() << id() << " compiles portable kernels";
  expect_error(
      [&] {
        device().compile({"saxpy", kSaxpySource});
      },
      ErrorCode::Unsupported, {id(), "compiling kernels", "saxpy"});
}

TEST_P(KernelSuite, LaunchErrorsNameTheKernelAndLeaveTheStreamUsable) {
  Kernel kernel = saxpy();
  if (!kernel) GTEST_SKIP() << id() << " runs neither host nor portable kernels";
  Stream stream = device().create_stream();
  Buffer buffer = device().allocate(16);
  const uint32_t four = 4;
  expect_error([&] { stream.launch(Kernel(), LaunchConfig::linear(1)); },
               ErrorCode::InvalidArgument, {"empty kernel"});
  expect_error([&] { stream.launch(kernel, LaunchConfig::grid(4, 0)); }, ErrorCode::InvalidArgument,
               {"saxpy", id(), "{4, 0, 1}", "zero"});
  expect_error([&] { stream.launch(kernel, LaunchConfig::grid(1ull << 32, 1ull << 32, 2)); },
               ErrorCode::InvalidArgument, {"overflows"});
  expect_error(
      [&] {
        stream.launch(kernel, LaunchConfig::linear(4), {1.0f, Buffer(), buffer, four});
      },
      ErrorCode::InvalidArgument, {"argument 1", "empty buffer"});
  expect_error(
      [&] {
        stream.launch(kernel, LaunchConfig::linear(4), {1.0f, KernelArg(buffer, 17), buffer, four});
      },
      ErrorCode::OutOfRange, {"argument 1", "offset 17", "16-byte"});
  if (runs_host_kernels()) {
    // A host kernel that reads its arguments wrongly fails when it runs, reported by
    // synchronize.
    stream.launch(kernel, LaunchConfig::linear(1), {buffer, buffer, buffer});
    expect_error([&] { stream.synchronize(); }, ErrorCode::AsyncFailure,
                 {"argument 0 is not a scalar"});
    stream.launch(kernel, LaunchConfig::linear(1), {1.0, buffer, buffer});
    expect_error([&] { stream.synchronize(); }, ErrorCode::AsyncFailure,
                 {"8-byte scalar, read as 4"});
  } else {
    // A compiled kernel declares its parameters: mismatches are refused before anything runs.
    expect_error(
        [&] {
          stream.launch(kernel, LaunchConfig::linear(1), {1.0f, buffer, buffer});
        },
        ErrorCode::InvalidArgument, {"saxpy", "takes 4 arguments, 3 given"});
    expect_error(
        [&] {
          stream.launch(kernel, LaunchConfig::linear(1), {1.0, buffer, buffer, four});
        },
        ErrorCode::InvalidArgument, {"saxpy", "argument 0", "8-byte scalar"});
    LaunchConfig too_wide = LaunchConfig::linear(1 << 20);
    too_wide.local = {device().info().limits.max_work_group_size * 2, 1, 1};
    expect_error(
        [&] {
          stream.launch(kernel, too_wide, {1.0f, buffer, buffer, four});
        },
        ErrorCode::InvalidArgument, {"saxpy", "local size", "at most"});
  }
  stream.fill(buffer, 1.0f, 4);
  stream.launch(kernel, LaunchConfig::linear(4), {3.0f, buffer, buffer, four});
  float out[4];
  stream.copy_to_host(out, buffer, 16);
  stream.synchronize();
  for (float v : out) EXPECT_EQ(v, 4.0f);
}

TEST_P(KernelSuite, BuffersOfOtherDevicesAreRefused) {
  Kernel kernel = saxpy();
  if (!kernel) GTEST_SKIP() << id() << " runs neither host nor portable kernels";
  for (const Device& other : devices()) {
    if (other == device()) continue;
    Buffer foreign = other.allocate(16);
    // Host kernels may use any memory the host addresses.
    if (runs_host_kernels() && foreign.host_accessible()) continue;
    Stream stream = device().create_stream();
    expect_error(
        [&] {
          stream.launch(kernel, LaunchConfig::linear(4), {1.0f, foreign, foreign, uint32_t{4}});
        },
        ErrorCode::InvalidArgument, {"argument 1", other.id(), "copy it first"});
    return;
  }
  GTEST_SKIP() << "no other device whose memory " << id() << " cannot use";
}

TEST_P(KernelSuite, CompiledKernelsRunOnlyOnTheirDevice) {
  if (!compiles()) GTEST_SKIP() << id() << " compiles no portable kernels";
  Kernel kernel = saxpy();
  for (const Device& other : devices()) {
    if (other == device()) continue;
    Stream stream = other.create_stream();
    Buffer buffer = other.allocate(16);
    expect_error(
        [&] {
          stream.launch(kernel, LaunchConfig::linear(4), {1.0f, buffer, buffer, uint32_t{4}});
        },
        ErrorCode::InvalidArgument, {"saxpy", "compiled for " + id()});
    return;
  }
  GTEST_SKIP() << "no other device";
}

HAL_DEVICE_SUITE(KernelSuite);

}  // namespace
}  // namespace hal::test
