// Launch arguments checked against the kernel's signature on every device: a wrong count,
// kind or scalar size is refused with InvalidArgument naming the kernel, the device, the
// argument and both sides, nothing runs, and the stream works on.
#include <cstdint>
#include <vector>

#include "device_suite.hpp"

namespace hal::test {
namespace {

constexpr const char* kOpenClSaxpy = R"(
__kernel void saxpy(float a, __global const float* x, __global float* y, unsigned n) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

constexpr const char* kOpenClGroupSum = R"(
__kernel void group_sum(__global const float* in, __global float* out, __local float* scratch,
                        uint n) {
  size_t i = get_global_id(0), l = get_local_id(0);
  scratch[l] = i < n ? in[i] : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    float sum = 0.0f;
    for (size_t k = 0; k < get_local_size(0); ++k) sum += scratch[k];
    out[get_group_id(0)] = sum;
  }
}
)";

constexpr const char* kPortableSaxpy = R"(
// y = a * x + y over the first n elements
KERNEL void saxpy(float a, GLOBAL const float* RESTRICT x, GLOBAL float* y,
                  unsigned int n) {
  size_t i = global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

class KernelArgsSuite : public DeviceTest {
 protected:
  static constexpr uint32_t kN = 256;

  bool compiles(KernelLanguage language) const {
    if (language == KernelLanguage::portable)
      return device().info().has_feature(feature::kPortableKernels);
    return language == KernelLanguage::opencl_c && device().info().backend() == "opencl";
  }

  // Launches saxpy(2, x = 1, y = 1, n) rightly and expects y = 3: the stream still works.
  void expect_saxpy_works(Stream& stream, const Kernel& kernel) {
    Buffer x = device().allocate(kN * sizeof(float)), y = device().allocate(kN * sizeof(float));
    stream.fill(x, 1.0f, kN);
    stream.fill(y, 1.0f, kN);
    stream.launch(kernel, LaunchConfig::linear(kN), {2.0f, x, y, kN});
    std::vector<float> out(kN);
    stream.copy_to_host(out.data(), y, kN * sizeof(float));
    stream.synchronize();
    EXPECT_EQ(out, std::vector<float>(kN, 3.0f));
  }

  // Every wrong saxpy launch is refused, naming the kernel, the device and the argument.
  void expect_saxpy_misuse_refused(const Kernel& kernel, const std::string& buffer_type) {
    Stream stream = device().create_stream();
    Buffer x = device().allocate(kN * sizeof(float)), y = device().allocate(kN * sizeof(float));
    stream.fill(y, 1.0f, kN);
    const auto launch = [&](std::vector<KernelArg> args) {
      return [&stream, &kernel, args = std::move(args)] {
        stream.launch(kernel, LaunchConfig::linear(kN), args);
      };
    };
    const std::string buffer = buffer_type.empty() ? "a buffer" : "a buffer (" + buffer_type;
    // The issue's reproducer: a scalar where the kernel reads a pointer.
    expect_error(
        launch({2.0f, 12345678ull, y, kN}), ErrorCode::InvalidArgument,
        {"saxpy", id(), "argument 1 (x): the kernel takes " + buffer, "given an 8-byte scalar"});
    expect_error(launch({2.0, x, y, kN}), ErrorCode::InvalidArgument,
                 {"saxpy", id(), "argument 0 (a): the kernel takes a 4-byte scalar",
                  "given an 8-byte scalar"});
    expect_error(launch({2.0f, x, y}), ErrorCode::InvalidArgument,
                 {"saxpy", id(), "takes 4 arguments, 3 given", "its signature is ("});
    expect_error(launch({2.0f, x, y, kN, kN}), ErrorCode::InvalidArgument,
                 {"saxpy", id(), "takes 4 arguments, 5 given"});
    expect_error(launch({2.0f, x, y, KernelArg::local_memory(64)}), ErrorCode::InvalidArgument,
                 {"saxpy", id(), "argument 3 (n)", "4-byte scalar", "64 bytes of local memory"});
    expect_error(launch({y, x, y, kN}), ErrorCode::InvalidArgument,
                 {"saxpy", id(), "argument 0 (a)", "given a buffer"});
    expect_error(launch({2.0f, x, y, uint64_t{kN}}), ErrorCode::InvalidArgument,
                 {"argument 3 (n)", "4-byte scalar", "given an 8-byte scalar"});
    // Nothing ran: y is as filled, and the stream works on.
    std::vector<float> out(kN);
    stream.copy_to_host(out.data(), y, kN * sizeof(float));
    stream.synchronize();
    EXPECT_EQ(out, std::vector<float>(kN, 1.0f));
    expect_saxpy_works(stream, kernel);
  }
};

TEST_P(KernelArgsSuite, OpenClCArgumentsAreCheckedAgainstTheReflectedSignature) {
  if (!compiles(KernelLanguage::opencl_c)) GTEST_SKIP() << id() << " compiles no OpenCL C";
  const Kernel kernel = device().compile({"saxpy", kOpenClSaxpy, KernelLanguage::opencl_c});
  ASSERT_TRUE(kernel.params());
  ASSERT_EQ(kernel.params()->size(), 4u);
  EXPECT_EQ((*kernel.params())[1],
            (KernelParam{KernelArg::Kind::buffer, 0, "x", "__global const float*"}));
  EXPECT_EQ((*kernel.params())[3], (KernelParam{KernelArg::Kind::scalar, 4, "n", "uint"}));
  expect_saxpy_misuse_refused(kernel, "__global const float*");
}

TEST_P(KernelArgsSuite, PortableArgumentsAreCheckedAgainstTheSignature) {
  if (!compiles(KernelLanguage::portable)) GTEST_SKIP() << id() << " compiles no portable kernels";
  const Kernel kernel = device().compile({"saxpy", kPortableSaxpy});
  ASSERT_TRUE(kernel.params());
  // Reflected (OpenCL: "__global const float*") or declared ("GLOBAL const float* RESTRICT").
  const std::string buffer_type = (*kernel.params())[1].type;
  EXPECT_NE(buffer_type.find("const float*"), std::string::npos) << buffer_type;
  expect_saxpy_misuse_refused(kernel, buffer_type);
}

TEST_P(KernelArgsSuite, LocalMemoryParametersTakeOnlyLocalMemory) {
  if (!compiles(KernelLanguage::opencl_c))
    GTEST_SKIP() << id() << " compiles no OpenCL C (the kernels that take local memory)";
  const Kernel kernel = device().compile({"group_sum", kOpenClGroupSum, KernelLanguage::opencl_c});
  Stream stream = device().create_stream();
  Buffer in = device().allocate(kN * sizeof(float)), out = device().allocate(4 * sizeof(float));
  const LaunchConfig config{{kN, 1, 1}, {64, 1, 1}};
  expect_error(
      [&] {
        stream.launch(kernel, config, {in, out, in, kN});
      },
      ErrorCode::InvalidArgument,
      {"group_sum", id(), "argument 2 (scratch)", "takes local memory (__local float*)",
       "given a buffer"});
  expect_error(
      [&] {
        stream.launch(kernel, config, {in, out, 64.0f, kN});
      },
      ErrorCode::InvalidArgument,
      {"group_sum", id(), "argument 2 (scratch)", "given a 4-byte scalar"});
  expect_error(
      [&] {
        stream.launch(kernel, config, {in, KernelArg::local_memory(256), in, kN});
      },
      ErrorCode::InvalidArgument, {"argument 1 (out)", "takes a buffer", "256 bytes of local"});
  stream.fill(in, 1.0f, kN);
  stream.launch(kernel, config, {in, out, KernelArg::local_memory(64 * sizeof(float)), kN});
  std::vector<float> sums(4);
  stream.copy_to_host(sums.data(), out, sums.size() * sizeof(float));
  stream.synchronize();
  EXPECT_EQ(sums, std::vector<float>(4, 64.0f));
}

TEST_P(KernelArgsSuite, HostKernelsWithDeclaredParametersAreCheckedAtLaunch) {
  if (!runs_host_kernels()) GTEST_SKIP() << id() << " runs no host kernels";
  const Kernel kernel = host_kernel("saxpy",
                                    {KernelParam::scalar<float>("a"), KernelParam::buffer("x"),
                                     KernelParam::buffer("y"), KernelParam::scalar<uint32_t>("n")},
                                    [](Index3 i, const KernelArgs& args) {
                                      if (i[0] >= args.scalar<uint32_t>(3)) return;
                                      args.ptr<float>(2)[i[0]] +=
                                          args.scalar<float>(0) * args.ptr<float>(1)[i[0]];
                                    });
  expect_saxpy_misuse_refused(kernel, "");
}

TEST_P(KernelArgsSuite, HostKernelsWithoutParametersFailWhenTheyReadAnArgumentWrongly) {
  if (!runs_host_kernels()) GTEST_SKIP() << id() << " runs no host kernels";
  const Kernel kernel = host_kernel(
      "reads_a_buffer", [](Index3, const KernelArgs& args) { args.ptr<float>(0)[0] = 1.0f; });
  EXPECT_FALSE(kernel.params());
  Stream stream = device().create_stream();
  Buffer buffer = device().allocate(16);
  stream.launch(kernel, LaunchConfig::linear(1), {12345678ull});  // no signature: runs
  expect_error([&] { stream.synchronize(); }, ErrorCode::AsyncFailure,
               {"argument 0 is not a buffer"});
  stream.launch(kernel, LaunchConfig::linear(1), {buffer});
  stream.synchronize();
}

TEST_P(KernelArgsSuite, KernelsWithoutASignatureAreLeftToTheBackend) {
  // sim compiles only its native format, whose signatures hal cannot read: hal checks nothing
  // and the plugin refuses what its kernels do not take.
  if (device().info().backend() != "sim")
    GTEST_SKIP() << id() << ": sim's native kernels are the ones without a signature";
  const Kernel kernel = device().compile({"saxpy", "kernel saxpy", KernelLanguage::native});
  EXPECT_FALSE(kernel.params());
  Stream stream = device().create_stream();
  Buffer y = device().allocate(kN * sizeof(float));
  expect_error(
      [&] {
        stream.launch(kernel, LaunchConfig::linear(kN), {2.0f, 12345678ull, y, kN});
        stream.synchronize();
      },
      ErrorCode::InvalidArgument, {"argument 1", "buffer"});
  expect_saxpy_works(stream, kernel);
}

HAL_DEVICE_SUITE(KernelArgsSuite);

}  // namespace
}  // namespace hal::test
