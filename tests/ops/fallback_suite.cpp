// CPU fallback: ops a device cannot run are refused, unless the caller allows fallback, when they
// run on cpu:0 with their data copied both ways and a warning says so.
#include "hal/log.hpp"
#include "op_values.hpp"

namespace hal::test {
namespace {

class FallbackSuite : public DeviceTest {
 protected:
  Stream stream = device().create_stream();
};

TEST_P(FallbackSuite, OpsTheDeviceLacksRunOnTheCpuWhenAllowed) {
  if (runs_kernels(device()) || has_builtin_ops(device()))
    GTEST_SKIP() << id() << " runs ops itself; the plugin tests check what sim lacks falls back";
  ASSERT_FALSE(CpuFallback::allowed());
  const std::vector<double> a{1, 2, 3, 4, 5, 6}, b{10, 20, 30};
  const Tensor x = make(a, {2, 3}, DType::f32, stream), y = make(b, {3}, DType::f32, stream);
  expect_error([&] { add(x, y, stream); }, ErrorCode::Unsupported, {"add", id()});

  LogCapture log;
  {
    CpuFallback allow;
    const Tensor total = add(x, y, stream);
    EXPECT_EQ(total.device(), device()) << "the result comes back to the device";
    EXPECT_EQ(total.to_vector<float>(stream), (std::vector<float>{11, 22, 33, 14, 25, 36}));
    EXPECT_EQ(sum(x.transpose(0, 1), {1}, false, stream).to_vector<float>(stream),
              (std::vector<float>{5, 7, 9}));
    const auto probabilities = softmax(x, -1, stream).to_vector<float>(stream);
    EXPECT_NEAR(probabilities[0] + probabilities[1] + probabilities[2], 1.0, 1e-6);
    EXPECT_EQ(matmul(x, x.transpose(0, 1), stream).to_vector<float>(stream),
              (std::vector<float>{14, 32, 32, 77}));
    {
      CpuFallback refuse(false);
      expect_error([&] { relu(x, stream); }, ErrorCode::Unsupported, {"relu", id()});
    }
    EXPECT_TRUE(CpuFallback::allowed()) << "the inner scope restores the outer setting";
    // What the CPU cannot run either is still refused, by the CPU.
    expect_error(
        [&] { pow(zeros({2}, DType::i32, stream), zeros({2}, DType::i32, stream), stream); },
        ErrorCode::Unsupported, {"pow of i32[2] on " + id(), "nor can cpu:0"});
  }
  EXPECT_FALSE(CpuFallback::allowed());
  const std::string lines = log.lines();
  for (const char* op : {"add", "sum", "softmax", "matmul"})
    EXPECT_NE(lines.find(std::string(1, '\n').append(op) + " runs on cpu:0 instead of " + id()),
              std::string::npos)
        << op << " in:\n"
        << lines;
  EXPECT_EQ(lines.find("\nmax runs on"), std::string::npos) << "softmax falls back once, whole";
}

TEST_P(FallbackSuite, DevicesWithKernelsUseThemAndFallBackOnlyForWhatTheyLack) {
  if (!runs_kernels(device())) GTEST_SKIP() << id() << " runs no kernels: see the other test";
  LogCapture log;
  CpuFallback allow;
  const Tensor x = make({1, -2, 3}, {3}, DType::f32, stream);
  EXPECT_EQ(relu(x, stream).to_vector<float>(stream), (std::vector<float>{1, 0, 3}));
  expect_error([&] { pow(zeros({2}, DType::i32, stream), zeros({2}, DType::i32, stream), stream); },
               ErrorCode::Unsupported, {"pow of i32[2]", id()});
  if (id() != "cpu:0") {
    EXPECT_NE(log.lines().find("pow runs on cpu:0"), std::string::npos) << "it tried the CPU";
  }
  EXPECT_EQ(log.lines().find("relu"), std::string::npos);
}

HAL_DEVICE_SUITE(FallbackSuite);

}  // namespace
}  // namespace hal::test
