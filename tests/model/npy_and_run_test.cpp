// .npy files (hal/npy.hpp) against NumPy itself, their errors, and `hal run` end to end on one
// of ONNX's test models: inputs from .npy, outputs written as .npy and checked against ONNX's
// expected output.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "hal/model.hpp"
#include "hal/npy.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

namespace fs = std::filesystem;

fs::path scratch_dir() {
  const fs::path dir = fs::temp_directory_path() / ("hal_npy_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

const std::string& kCliSanitizer = child_sanitizer_options();

bool have_numpy() { return run_shell("/usr/bin/python3 -c 'import numpy'").status == 0; }

TEST(Npy, EveryDtypeRoundTrips) {
  Stream stream = device("cpu:0").create_stream();
  const fs::path file = scratch_dir() / "round.npy";
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::i8, DType::u8, DType::i32,
                      DType::i64, DType::boolean}) {
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3}, Shape{0, 4}}) {
      const Tensor original =
          cast(arange(0, static_cast<double>(numel(shape)), 1, DType::f32, stream).reshape(shape),
               dtype, stream);
      write_npy(file, original, stream);
      const Tensor back = read_npy(file, stream);
      EXPECT_EQ(back.dtype(), dtype);
      EXPECT_EQ(back.shape(), shape);
      EXPECT_EQ(cast(back, DType::f64, stream).to_vector<double>(stream),
                cast(original, DType::f64, stream).to_vector<double>(stream))
          << to_string(dtype) << " " << to_string(shape);
    }
  }
}

TEST(Npy, NumPyReadsWhatHalWritesAndTheOtherWayRound) {
  if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 has no numpy (Debian: python3-numpy)";
  Stream stream = device("cpu:0").create_stream();
  const fs::path dir = scratch_dir();
  write_npy(dir / "from_hal.npy", from_vector<int32_t>({1, -2, 3, 4, 5, -6}, {2, 3}, stream),
            stream);
  const ShellResult check = run_shell(
      "/usr/bin/python3 -c \"import numpy as np; a = np.load('" + (dir / "from_hal.npy").string() +
      "'); assert a.dtype == np.int32 and a.shape == (2, 3) and a.tolist() "
      "== [[1, -2, 3], [4, 5, -6]], a\"");
  EXPECT_EQ(check.status, 0) << check.output;
  const ShellResult make = run_shell(
      "/usr/bin/python3 -c \"import numpy as np; "
      "np.save('" +
      (dir / "c.npy").string() +
      "', np.arange(6, dtype=np.float16).reshape(2, 3)); "
      "np.save('" +
      (dir / "f.npy").string() +
      "', np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3)))\"");
  ASSERT_EQ(make.status, 0) << make.output;
  const Tensor c = read_npy(dir / "c.npy", stream);
  EXPECT_EQ(c.dtype(), DType::f16);
  EXPECT_EQ(cast(c, DType::f32, stream).to_vector<float>(stream),
            (std::vector<float>{0, 1, 2, 3, 4, 5}));
  const Tensor f = read_npy(dir / "f.npy", stream);  // Fortran order, given back row-major
  EXPECT_EQ(f.shape(), (Shape{2, 3}));
  EXPECT_EQ(f.to_vector<double>(stream), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(Npy, BadFilesAreRefusedNamingTheFileAndWhatIsWrong) {
  Stream stream = device("cpu:0").create_stream();
  const fs::path dir = scratch_dir();
  auto file_with = [&](const std::string& name, const std::string& header, size_t data_bytes) {
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    bytes += header + std::string(data_bytes, '\0');
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return dir / name;
  };
  expect_error([&] { read_npy(dir / "absent.npy", stream); }, ErrorCode::InvalidArgument,
               {"absent.npy", "cannot open"});
  std::ofstream(dir / "text.npy") << "not numpy at all";
  expect_error([&] { read_npy(dir / "text.npy", stream); }, ErrorCode::InvalidArgument,
               {"text.npy", "magic"});
  const auto short_data =
      file_with("short.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 20);
  expect_error([&] { read_npy(short_data, stream); }, ErrorCode::InvalidArgument,
               {"short.npy", "holds 20 bytes", "needs 24"});
  const auto complex =
      file_with("complex.npy", "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", 8);
  expect_error([&] { read_npy(complex, stream); }, ErrorCode::Unsupported,
               {"complex.npy", "'<c8'"});
  const auto big =
      file_with("big.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }\n", 4);
  expect_error([&] { read_npy(big, stream); }, ErrorCode::Unsupported, {"big.npy", "big-endian"});
  const auto odd =
      file_with("odd.npy", "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }\n", 4);
  expect_error([&] { read_npy(odd, stream); }, ErrorCode::InvalidArgument,
               {"odd.npy", "fortran_order"});
  const auto cut = file_with("cut.npy", "{'descr': '<f4', 'shape': (1,", 0);
  expect_error([&] { read_npy(cut, stream); }, ErrorCode::InvalidArgument, {"cut.npy", "header"});
}

TEST(HalRun, RunsAnOnnxTestModelFromNpyFilesAndWritesItsOutputs) {
  const fs::path model_dir = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding";
  if (!fs::exists(model_dir / "model.onnx"))
    GTEST_SKIP() << "no ONNX test data (Debian: libonnx-testdata)";
  Stream stream = device("cpu:0").create_stream();
  const fs::path dir = scratch_dir() / "run";
  fs::create_directories(dir);
  std::string args;
  for (int i = 0; i < 2; ++i) {
    std::string name;
    const Tensor input = read_onnx_tensor(
        model_dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb"), stream, &name);
    write_npy(dir / (name + ".npy"), input, stream);
    args += " --input " + name + "=" + (dir / (name + ".npy")).string();
  }
  const ShellResult run =
      run_shell(kCliSanitizer + HAL_CLI_PATH " run " + (model_dir / "model.onnx").string() + args +
                " --output " + (dir / "out").string() + " --repeat 3");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("latency over 3 run(s)"), std::string::npos) << run.output;
  const Tensor expected = read_onnx_tensor(model_dir / "test_data_set_0" / "output_0.pb", stream);
  const Tensor actual = read_npy(dir / "out" / "y.npy", stream);
  ASSERT_EQ(actual.shape(), expected.shape());
  const auto a = actual.to_vector<float>(stream), e = expected.to_vector<float>(stream);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], e[i], 1e-4 + 1e-4 * std::abs(e[i])) << i;

  const ShellResult wrong =
      run_shell(kCliSanitizer + HAL_CLI_PATH " run " + (model_dir / "model.onnx").string() + args +
                " --input nope=" + (dir / "x.npy").string());
  EXPECT_EQ(wrong.status, 1);
  EXPECT_NE(wrong.output.find("no input 'nope'"), std::string::npos) << wrong.output;
  const ShellResult malformed = run_shell(kCliSanitizer + HAL_CLI_PATH " run " +
                                          (model_dir / "model.onnx").string() + " --input x");
  EXPECT_EQ(malformed.status, 1);
  EXPECT_NE(malformed.output.find("expected NAME=FILE.npy"), std::string::npos) << malformed.output;
}

TEST(HalRun, PlansWithoutRunningAndRunsThroughThePlan) {
  const fs::path model_dir = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding";
  if (!fs::exists(model_dir / "model.onnx"))
    GTEST_SKIP() << "no ONNX test data (Debian: libonnx-testdata)";
  const std::string model = (model_dir / "model.onnx").string();
  const ShellResult planned =
      run_shell(kCliSanitizer + HAL_CLI_PATH " run " + model + " --plan --json --device cpu:0");
  ASSERT_EQ(planned.status, 0) << planned.output;
  const auto plan = nlohmann::json::parse(planned.output);
  EXPECT_EQ(plan["schema"], "hal.plan/1");
  ASSERT_EQ(plan["nodes"].size(), 1u);
  EXPECT_EQ(plan["nodes"][0]["op"], "Conv");
  EXPECT_EQ(plan["nodes"][0]["device"], "cpu:0");
  EXPECT_EQ(plan["nodes"][0]["reason"], "pinned");
  // x [1,1,7,5], W [1,1,3,3], y [1,1,4,3] in f32, each rounded up to 256 bytes: all alive at
  // the convolution.
  EXPECT_EQ(plan["lower_bound_bytes"], 3 * 256);
  EXPECT_EQ(plan["peak_bytes"], 3 * 256);
  EXPECT_TRUE(plan["unknown_shapes"].empty());

  Stream stream = device("cpu:0").create_stream();
  const fs::path dir = scratch_dir() / "planned";
  fs::create_directories(dir);
  std::string args;
  for (int i = 0; i < 2; ++i) {
    std::string name;
    const Tensor input = read_onnx_tensor(
        model_dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb"), stream, &name);
    write_npy(dir / (name + ".npy"), input, stream);
    args += " --input " + name + "=" + (dir / (name + ".npy")).string();
  }
  const ShellResult run =
      run_shell(kCliSanitizer + HAL_CLI_PATH " run " + model + args + " --device auto --plan " +
                "--json --output " + (dir / "out").string());
  ASSERT_EQ(run.status, 0) << run.output;
  const auto report = nlohmann::json::parse(run.output);
  EXPECT_EQ(report["schema"], "hal.run/1");
  EXPECT_EQ(report["device"], "auto");
  EXPECT_EQ(report["plan"]["schema"], "hal.plan/1");
  EXPECT_TRUE(report["fallbacks"].is_array());
  const Tensor expected = read_onnx_tensor(model_dir / "test_data_set_0" / "output_0.pb", stream);
  const Tensor actual = read_npy(dir / "out" / "y.npy", stream);
  ASSERT_EQ(actual.shape(), expected.shape());
  const auto a = actual.to_vector<float>(stream), e = expected.to_vector<float>(stream);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], e[i], 1e-4 + 1e-4 * std::abs(e[i])) << i;
}

}  // namespace
}  // namespace hal::test
