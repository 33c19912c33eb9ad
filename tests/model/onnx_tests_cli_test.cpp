// `hal onnx-tests` fails a case whose outputs differ from the expected ones, naming the output,
// how many elements differ and where: copies of two of ONNX's own cases with one expected element
// changed (a float past the tolerance, an integer by one).
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace hal::test {
namespace {

namespace fs = std::filesystem;

const fs::path kNodeData = "/usr/share/libonnx-testdata/data/node";

// Adds `delta` to element `index` of the raw little-endian tensor in `file`.
template <class T>
void change_element(const fs::path& file, size_t index, T delta) {
  onnx::TensorProto tensor;
  {
    std::ifstream in(file, std::ios::binary);
    ASSERT_TRUE(tensor.ParseFromIstream(&in)) << file;
  }
  std::string& raw = *tensor.mutable_raw_data();
  ASSERT_GE(raw.size(), (index + 1) * sizeof(T)) << file << " holds no raw element " << index;
  T value;
  std::memcpy(&value, raw.data() + index * sizeof(T), sizeof value);
  value += delta;
  std::memcpy(raw.data() + index * sizeof(T), &value, sizeof value);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(tensor.SerializeToOstream(&out)) << file;
}

TEST(OnnxTests, AnOutputThatDiffersFailsItsCaseNamingTheElement) {
  for (const char* name : {"test_add", "test_argmax_default_axis_example"})
    if (!fs::exists(kNodeData / name / "model.onnx"))
      GTEST_SKIP() << "no ONNX test data (Debian: libonnx-testdata)";
  const fs::path data =
      fs::temp_directory_path() / ("hal_onnx_tests_cli_" + std::to_string(getpid()));
  fs::remove_all(data);
  fs::create_directories(data / "node");
  for (const char* name : {"test_add", "test_argmax_default_axis_example"})
    fs::copy(kNodeData / name, data / "node" / name, fs::copy_options::recursive);

  const std::string command = child_sanitizer_options() + HAL_CLI_PATH " onnx-tests --data " +
                              data.string() + " --device cpu:0 --json";
  const ShellResult intact = run_shell_stdout(command);
  ASSERT_EQ(intact.status, 0) << intact.output;

  // test_add: 60 floats; 1.0 is far past the tolerance. argmax: two i64 indices; one more is
  // wrong however close.
  ASSERT_NO_FATAL_FAILURE(
      change_element<float>(data / "node/test_add/test_data_set_0/output_0.pb", 7, 1.0f));
  ASSERT_NO_FATAL_FAILURE(change_element<int64_t>(
      data / "node/test_argmax_default_axis_example/test_data_set_0/output_0.pb", 1, 1));
  const ShellResult changed = run_shell_stdout(command);
  EXPECT_EQ(changed.status, 1) << changed.output;
  const auto report = nlohmann::json::parse(changed.output, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(report.is_object()) << changed.output;
  EXPECT_EQ(report["passed"], 0);
  EXPECT_EQ(report["failed"], 2);
  for (const auto& c : report["cases"]) {
    EXPECT_EQ(c["status"], "failed") << c.dump();
    const std::string reason = c["reason"];
    const bool add = c["name"] == "test_add";
    for (const std::string& part :
         add ? std::vector<std::string>{"output 'sum': 1 of 60 elements differ",
                                        "worst at flat index 7"}
             : std::vector<std::string>{"output 'result': 1 of 2 elements differ",
                                        "max abs error 1", "worst at flat index 1"})
      EXPECT_NE(reason.find(part), std::string::npos) << reason << "\nlacks: " << part;
  }
  fs::remove_all(data);
}

}  // namespace
}  // namespace hal::test
