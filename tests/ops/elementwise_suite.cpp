// The elementwise ops' errors on every device: what they refuse and how the message names it.
// Their values against host references are conformance cases (cts/op_reference_cases.cpp:
// op.binary.*, op.unary.*, op.elementwise.*).
#include "op_values.hpp"

namespace hal::test {
namespace {

class ElementwiseSuite : public DeviceTest {
 protected:
  void SetUp() override {
    if (!runs_kernels(device()))
      GTEST_SKIP() << id() << " runs neither host nor portable kernels, so it has no "
                   << "elementwise ops (DevicesWithoutKernels checks that it says so)";
  }
  Stream stream = device().create_stream();
};

TEST_P(ElementwiseSuite, BadArgumentsAreRefusedByName) {
  const Tensor a = zeros({2, 3}, DType::f32, stream);
  expect_error(
      [&] {
        add(a, zeros({2, 4}, DType::f32, stream), stream);
      },
      ErrorCode::InvalidArgument,
      {"add of f32[2, 3]", "[2, 3]", "[2, 4]", id(), "do not broadcast", "dimension 1"});
  expect_error(
      [&] {
        pow(a, zeros({4, 3}, DType::f32, stream), stream);
      },
      ErrorCode::InvalidArgument, {"pow of f32[2, 3]", "f32[4, 3]", "do not broadcast"});
  expect_error(
      [&] {
        where(zeros({3}, DType::boolean, stream), zeros({2}, DType::f32, stream),
              zeros({2}, DType::f32, stream), stream);
      },
      ErrorCode::InvalidArgument,
      {"where of condition bool[3]", ", f32[2] on " + id() + " and f32[2]", "do not broadcast"});
  expect_error([&] { exp(Tensor(), stream); }, ErrorCode::InvalidArgument, {"exp", "undefined"});
  for (const Device& other : suite_devices()) {
    if (other == device()) continue;
    Stream there = other.create_stream();
    const Tensor b = zeros({2, 3}, DType::f32, there);
    there.synchronize();
    expect_error([&] { add(a, b, stream); }, ErrorCode::InvalidArgument,
                 {"add", id(), other.id(), "different devices"});
    expect_error([&] { relu(a, there); }, ErrorCode::InvalidArgument,
                 {"relu", "stream of " + other.id()});
  }
}

class ElementwiseWithoutKernels : public ElementwiseSuite {
 protected:
  void SetUp() override {
    if (runs_kernels(device()) || has_builtin_ops(device()))
      GTEST_SKIP() << id() << " runs ops: see the other elementwise tests and the plugin tests";
  }
};

TEST_P(ElementwiseWithoutKernels, OpsSayTheyAreUnsupportedThere) {
  const Tensor a = zeros({2, 3}, DType::f32, stream);
  expect_error([&] { add(a, a, stream); }, ErrorCode::Unsupported,
               {"add of f32[2, 3]", id(), "no kernel for f32"});
  expect_error([&] { gelu(a, stream); }, ErrorCode::Unsupported,
               {"gelu of f32[2, 3]", id(), "no kernel for f32"});
}

HAL_DEVICE_SUITE(ElementwiseSuite);
HAL_DEVICE_SUITE(ElementwiseWithoutKernels);

}  // namespace
}  // namespace hal::test
