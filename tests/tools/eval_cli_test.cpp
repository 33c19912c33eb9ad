// `hal eval`: a data set sharded across devices gives, gathered in order, the outputs of a run on
// one device; accuracy against labels and agreement with reference outputs are counted right;
// bad input is refused by code and message.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../../tools/hal/agreement.hpp"  // header-only: the argmax hal eval scores with
#include "../model/model_builder.hpp"
#include "hal/model.hpp"
#include "hal/npy.hpp"
#include "hal/ops.hpp"
#include "hal/registry.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using Result = hal::test::ShellResult;

const std::string kModel = HAL_MODELS_DIR "/transformer_encoder.onnx";  // [batch, 16, 64] in
// Shards on devices of different backends where this machine has them (PoCL's opencl:0 and
// lavapipe's vulkan:0 on a bare Debian with the project's packages), else more streams of cpu:0.
std::string three_devices() {
  std::vector<std::string> ids{"cpu:0"};
  for (const hal::Device& d : hal::devices())
    if ((d.id() == "opencl:0" || d.id() == "vulkan:0") && ids.size() < 3) ids.push_back(d.id());
  while (ids.size() < 3) ids.push_back("cpu:0");
  return ids[1] + "," + ids[2] + "," + ids[0];
}

Result eval(const std::string& arguments) {
  return hal::test::run_shell("(" + hal::test::child_sanitizer_options() + HAL_CLI_PATH " eval " +
                              kModel + " " + arguments + " 2>/dev/null)");
}

nlohmann::json report_of(const Result& r) {
  EXPECT_EQ(r.status, 0) << r.output;
  return nlohmann::json::parse(r.output);
}

class EvalCli : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 ("hal_eval_test_" + std::to_string(getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(directory_ / "data");
    // 11 examples in three files (5, 4 and 2 rows), values that differ from row to row.
    int64_t row = 0;
    for (const auto& [name, rows] : {std::pair{"a.npy", 5}, {"b.npy", 4}, {"c.npy", 2}}) {
      std::vector<float> values(static_cast<size_t>(rows) * 16 * 64);
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(row));
      row += rows;
      hal::write_npy(directory_ / "data" / name, hal::from_vector(values, {rows, 16, 64}, stream_),
                     stream_);
    }
  }
  void TearDown() override { fs::remove_all(directory_); }
  std::string path(const std::string& name) const { return (directory_ / name).string(); }
  hal::Tensor read(const std::string& file) { return hal::read_npy(directory_ / file, stream_); }

  hal::Stream stream_ = hal::device("cpu:0").create_stream();
  fs::path directory_;
};

TEST_F(EvalCli, ShardsGatherInOrderAndAgreeWithOneDevice) {
  const nlohmann::json one = report_of(
      eval("--data " + path("data") + " --devices cpu:0 --batch 3 --json --output " + path("one")));
  EXPECT_EQ(one["schema"], "hal.eval/1");
  EXPECT_EQ(one["rows"], 11);
  EXPECT_EQ(one["devices"][0]["batches"], 4);  // 3 + 3 + 3 + 2
  EXPECT_EQ(one["outputs"][0]["name"], "probabilities");
  EXPECT_EQ(one["outputs"][0]["shape"], nlohmann::json({11, 16, 10}));
  EXPECT_TRUE(one["reference"].is_null());

  const nlohmann::json many =
      report_of(eval("--data " + path("data") + " --devices " + three_devices() +
                     " --batch 2 --json "
                     "--output " +
                     path("many") + " --reference " + path("one")));
  ASSERT_EQ(many["devices"].size(), 3u);
  const int64_t first_rows[] = {0, 4, 8}, rows[] = {4, 4, 3}, batches[] = {2, 2, 2};
  for (size_t i = 0; i < 3; ++i) {
    const auto& d = many["devices"][i];
    EXPECT_EQ(d["first_row"], first_rows[i]);
    EXPECT_EQ(d["rows"], rows[i]);
    EXPECT_EQ(d["batches"], batches[i]);
    EXPECT_GT(d["rows_per_s"].get<double>(), 0);
  }
  EXPECT_EQ(many["reference"]["kind"], "outputs");
  EXPECT_TRUE(many["reference"]["agree"].get<bool>()) << many["reference"];
  EXPECT_LE(many["reference"]["max_abs_diff"].get<double>(), 1e-5);  // 7e-8 on PoCL, lavapipe
  EXPECT_EQ(many["reference"]["argmax_agreement"], 1.0);

  // The gathered file against the model run here on the last file alone: rows 9 and 10.
  const hal::Model model = hal::load_onnx(kModel);
  const std::vector<float> direct = model.run({{"tokens", read("data/c.npy")}}, stream_)
                                        .at("probabilities")
                                        .to_vector<float>(stream_);
  const std::vector<float> gathered = read("many/probabilities.npy").to_vector<float>(stream_);
  ASSERT_EQ(gathered.size(), 11u * 16 * 10);
  const size_t offset = 9u * 16 * 10;
  for (size_t i = 0; i < direct.size(); ++i)
    ASSERT_NEAR(gathered[offset + i], direct[i], 1e-5) << i;
}

// Open MPI's settings of the project's MPI tests: shared memory on loopback, as root.
std::string mpirun(int processes) {
#ifdef HAL_MPIEXEC
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader "
         "OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_oob_tcp_if_include=lo "
         "HAL_DIST_TIMEOUT=60 " HAL_MPIEXEC " --oversubscribe --allow-run-as-root -np " +
         std::to_string(processes) + " ";
#else
  (void)processes;
  return {};
#endif
}

TEST_F(EvalCli, ProcessesUnderMpirunShareTheRowsAndRankZeroGathersThem) {
  if (mpirun(1).empty()) GTEST_SKIP() << "this build of hal has no MPI engine (or is sanitized)";
  report_of(eval("--data " + path("data") + " --devices cpu:0 --json --output " + path("one")));
  // 3 processes of 2 shards each: rows 0-3, 4-7 and 8-10 by process, halved by device.
  const Result r =
      hal::test::run_shell("(" + mpirun(3) + HAL_CLI_PATH " eval " + kModel + " --data " +
                           path("data") + " --devices cpu:0,cpu:0 --batch 2 --json --output " +
                           path("many") + " --reference " + path("one") + " 2>/dev/null)");
  const nlohmann::json many = report_of(r);  // rank 0's report alone on stdout
  EXPECT_EQ(many["processes"], 3);
  EXPECT_EQ(many["rows"], 11);
  ASSERT_EQ(many["devices"].size(), 6u) << many;
  const int64_t ranks[] = {0, 0, 1, 1, 2, 2}, first_rows[] = {0, 2, 4, 6, 8, 10},
                rows[] = {2, 2, 2, 2, 2, 1};
  for (size_t i = 0; i < 6; ++i) {
    const auto& d = many["devices"][i];
    EXPECT_EQ(d["rank"], ranks[i]) << i;
    EXPECT_EQ(d["first_row"], first_rows[i]) << i;
    EXPECT_EQ(d["rows"], rows[i]) << i;
    EXPECT_EQ(d["batches"], 1) << i;
  }
  EXPECT_EQ(many["outputs"][0]["shape"], nlohmann::json({11, 16, 10}));
  EXPECT_TRUE(many["reference"]["agree"].get<bool>()) << many["reference"];
  EXPECT_LE(many["reference"]["max_abs_diff"].get<double>(), 1e-5);
  // The gathered file row for row against the single process's.
  const std::vector<float> one = read("one/probabilities.npy").to_vector<float>(stream_);
  const std::vector<float> gathered = read("many/probabilities.npy").to_vector<float>(stream_);
  ASSERT_EQ(gathered.size(), one.size());
  for (size_t i = 0; i < one.size(); ++i) ASSERT_NEAR(gathered[i], one[i], 1e-5) << i;
}

TEST_F(EvalCli, ARankThatFailsIsNamedByRankZeroAndNoRankHangs) {
  if (mpirun(1).empty()) GTEST_SKIP() << "this build of hal has no MPI engine (or is sanitized)";
  // Rank 2 of 3 is given a device it does not have (MPMD: its own command line).
  const std::string command = std::string(HAL_CLI_PATH) + " eval " + kModel + " --data " +
                              path("data") + " --json --devices ";
  const Result r =
      hal::test::run_shell("(" + mpirun(2) + command + "cpu:0 : -np 1 " + command + "nope:0 2>&1)");
  EXPECT_NE(r.status, 0) << r.output;
  const size_t report = r.output.find("{");
  ASSERT_NE(report, std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"code\": \"NotFound\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 2: no device 'nope:0'"), std::string::npos) << r.output;
  // The failed rank says so on its standard error too.
  EXPECT_NE(r.output.find("hal eval: rank 2: no device 'nope:0'"), std::string::npos) << r.output;
}

TEST_F(EvalCli, CountsAccuracyAgainstLabels) {
  report_of(eval("--data " + path("data") + " --devices cpu:0 --json --output " + path("one")));
  // Labels: each position's argmax, every fifth one changed.
  const hal::Tensor probabilities = read("one/probabilities.npy");
  std::vector<int64_t> labels =
      hal::argmax(probabilities, {-1}, false, stream_).to_vector<int64_t>(stream_);
  size_t changed = 0;
  for (size_t i = 0; i < labels.size(); i += 5, ++changed) labels[i] = (labels[i] + 1) % 10;
  fs::create_directories(directory_ / "labels");
  hal::write_npy(directory_ / "labels" / "y.npy", hal::from_vector(labels, {11, 16}, stream_),
                 stream_);
  const nlohmann::json r =
      report_of(eval("--data " + path("data") + " --devices " + three_devices() +
                     " --batch 4 --json --reference " + path("labels")));
  EXPECT_EQ(r["reference"]["kind"], "labels");
  EXPECT_EQ(r["reference"]["positions"], labels.size());
  EXPECT_EQ(r["reference"]["correct"], labels.size() - changed);
  EXPECT_DOUBLE_EQ(
      r["reference"]["accuracy"].get<double>(),
      static_cast<double>(labels.size() - changed) / static_cast<double>(labels.size()));
}

// A model that outputs class indices itself (ArgMax at its end): labels of the output's own
// shape score it position by position.
TEST_F(EvalCli, CountsAccuracyOfAModelThatOutputsClassIndices) {
  std::vector<int64_t> labels;
  for (const char* file : {"data/a.npy", "data/b.npy", "data/c.npy"})
    for (int64_t label : hal::argmax(read(file), {-1}, false, stream_).to_vector<int64_t>(stream_))
      labels.push_back(label);
  size_t changed = 0;
  for (size_t i = 0; i < labels.size(); i += 7, ++changed) labels[i] = (labels[i] + 1) % 64;
  fs::create_directories(directory_ / "labels");
  hal::write_npy(directory_ / "labels" / "y.npy", hal::from_vector(labels, {11, 16}, stream_),
                 stream_);
  // ArgMax without and with its kept axis ([N, 16] and [N, 16, 1] against labels [N, 16]).
  for (int64_t keepdims : {0, 1}) {
    hal::test::ModelBuilder builder;
    std::vector<std::string> dims{"N", "16"};
    if (keepdims) dims.push_back("1");
    builder.input("x", onnx::TensorProto::FLOAT, {"N", "16", "64"})
        .output("label", onnx::TensorProto::INT64, dims);
    auto& argmax = builder.node("ArgMax", {"x"}, {"label"});
    hal::test::ModelBuilder::set_int(argmax, "axis", -1);
    hal::test::ModelBuilder::set_int(argmax, "keepdims", keepdims);
    const std::string model = path("argmax.onnx");
    std::ofstream(model, std::ios::binary) << builder.bytes();
    const nlohmann::json r = report_of(
        hal::test::run_shell("(" + hal::test::child_sanitizer_options() + HAL_CLI_PATH " eval " +
                             model + " --data " + path("data") + " --devices " + three_devices() +
                             " --batch 4 --json --reference " + path("labels") + " 2>/dev/null)"));
    EXPECT_EQ(r["reference"]["kind"], "labels") << "keepdims " << keepdims;
    EXPECT_EQ(r["reference"]["positions"], labels.size()) << "keepdims " << keepdims;
    EXPECT_EQ(r["reference"]["correct"], labels.size() - changed) << "keepdims " << keepdims;
  }
}

TEST_F(EvalCli, PrintsATable) {
  const Result r = hal::test::run_shell(std::string(HAL_CLI_PATH) + " eval " + kModel + " --data " +
                                        path("data") + " --devices cpu:0,cpu:0");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("rows/s"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  all "), std::string::npos) << r.output;
}

TEST_F(EvalCli, RefusesBadInput) {
  const auto refused = [&](const std::string& arguments, const std::string& code,
                           const std::string& message) {
    const Result r = eval(arguments + " --json");
    EXPECT_EQ(r.status, 1) << arguments << ": " << r.output;
    const nlohmann::json error = nlohmann::json::parse(r.output);
    EXPECT_EQ(error["code"], code) << arguments;
    EXPECT_NE(error["message"].get<std::string>().find(message), std::string::npos)
        << arguments << ": " << error["message"];
  };
  const std::string data = " --data " + path("data");
  refused(data + " --devices cpu:0,nope:1", "NotFound", "no device 'nope:1'");
  refused(data + " --devices cpu:0 --batch 0", "InvalidArgument", "--batch");
  refused(" --data " + path("nothing") + " --devices cpu:0", "InvalidArgument", "not a directory");
  fs::create_directories(directory_ / "empty");
  refused(" --data " + path("empty") + " --devices cpu:0", "InvalidArgument", "no .npy files");
  hal::write_npy(directory_ / "data" / "d.npy",
                 hal::from_vector(std::vector<float>(16 * 8), {1, 16, 8}, stream_), stream_);
  refused(data + " --devices cpu:0", "InvalidArgument", "does not join");
  fs::remove(directory_ / "data" / "d.npy");
  fs::create_directories(directory_ / "wrong");
  hal::write_npy(directory_ / "wrong" / "y.npy",
                 hal::from_vector(std::vector<float>(11 * 3), {11, 3}, stream_), stream_);
  refused(data + " --devices cpu:0 --reference " + path("wrong"), "InvalidArgument",
          "is neither the output's [11, 16, 10]");
}

// A difference that is not finite (NaN or infinity in the reference where the output has a
// number) is null in the JSON, as the tool writes a number it cannot give, and counted in
// nonfinite_elements; the table says inf and how many (it said "mean nan", and the JSON had
// nulls with nothing to say why).
TEST_F(EvalCli, ADifferenceThatIsNotFiniteIsNullAndCounted) {
  report_of(eval("--data " + path("data") + " --devices cpu:0 --json --output " + path("one")));
  std::vector<float> expected = read("one/probabilities.npy").to_vector<float>(stream_);
  expected[3] = std::nanf("");
  expected[7] = INFINITY;
  fs::create_directories(directory_ / "odd");
  hal::write_npy(directory_ / "odd" / "r.npy", hal::from_vector(expected, {11, 16, 10}, stream_),
                 stream_);
  const std::string arguments =
      "--data " + path("data") + " --devices cpu:0 --reference " + path("odd");
  const nlohmann::json r = report_of(eval(arguments + " --json"));
  nlohmann::json reference = r["reference"];
  EXPECT_TRUE(reference["max_abs_diff"].is_null()) << reference;
  EXPECT_TRUE(reference["mean_abs_diff"].is_null()) << reference;
  EXPECT_EQ(reference["nonfinite_elements"], 2) << reference;
  EXPECT_FALSE(reference["agree"].get<bool>()) << reference;
  EXPECT_TRUE(reference["argmax_agreement"].is_number()) << reference;

  const Result text = eval(arguments);
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("DIFFER, max|out - ref| = inf, mean inf"), std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("2 element(s) NaN or infinite"), std::string::npos) << text.output;
}

// Argmax as NumPy's and PyTorch's: a NaN is the largest value, the first NaN winning.
// std::max_element passed over a NaN that was not first, so a row with one counted as having
// its label (accuracy) or the reference's argmax (argmax_agreement).
TEST(EvalArgmax, ANanIsTheLargestValue) {
  using hal::tool::row_argmax;
  EXPECT_EQ(row_argmax(std::vector<float>{0.1f, 0.7f, 0.2f}), 1u);
  EXPECT_EQ(row_argmax(std::vector<float>{0.1f, 0.7f, NAN, 0.2f, NAN}), 2u);
  EXPECT_EQ(row_argmax(std::vector<float>{NAN, 0.7f}), 0u);
  EXPECT_EQ(row_argmax(std::vector<float>{0.5f, INFINITY, NAN}), 2u);
  EXPECT_EQ(row_argmax(std::vector<float>{0.3f, 0.3f}), 0u);  // a tie: the first
  EXPECT_EQ(row_argmax(std::vector<float>{-INFINITY, -INFINITY}), 0u);
}

// A reference with a NaN in one position away from the output's argmax there disagrees at that
// position alone (it agreed: the NaN was passed over).
TEST_F(EvalCli, ANanInTheReferenceIsItsArgmax) {
  report_of(eval("--data " + path("data") + " --devices cpu:0 --json --output " + path("one")));
  const hal::Tensor probabilities = read("one/probabilities.npy");  // [11, 16, 10]
  std::vector<float> expected = probabilities.to_vector<float>(stream_);
  const int64_t label =
      hal::argmax(probabilities, {-1}, false, stream_).to_vector<int64_t>(stream_)[0];
  expected[static_cast<size_t>((label + 1) % 10)] = std::nanf("");
  fs::create_directories(directory_ / "nan");
  hal::write_npy(directory_ / "nan" / "r.npy", hal::from_vector(expected, {11, 16, 10}, stream_),
                 stream_);
  const nlohmann::json r = report_of(
      eval("--data " + path("data") + " --devices cpu:0 --json --reference " + path("nan")));
  const nlohmann::json& reference = r["reference"];
  EXPECT_DOUBLE_EQ(reference["argmax_agreement"].get<double>(), 175.0 / 176.0) << reference;
  EXPECT_EQ(reference["nonfinite_elements"], 1) << reference;
  EXPECT_FALSE(reference["agree"].get<bool>()) << reference;
}

// --reference with data of no rows is refused (it was ignored: nothing to score, exit 0).
TEST_F(EvalCli, RefusesAReferenceWhenTheDataHasNoRows) {
  fs::create_directories(directory_ / "none");
  hal::write_npy(directory_ / "none" / "x.npy", hal::zeros({0, 16, 64}, hal::DType::f32, stream_),
                 stream_);
  fs::create_directories(directory_ / "labels");
  hal::write_npy(directory_ / "labels" / "y.npy", hal::zeros({0, 16}, hal::DType::i64, stream_),
                 stream_);
  const Result r = eval(" --data " + path("none") + " --devices cpu:0 --reference " +
                        path("labels") + " --json");
  EXPECT_EQ(r.status, 1) << r.output;
  const nlohmann::json error = nlohmann::json::parse(r.output);
  EXPECT_EQ(error["code"], "InvalidArgument") << error;
  EXPECT_EQ(error["message"], "--reference " + path("labels") + ": --data " + path("none") +
                                  " has no rows to score against it")
      << error;
  // Without --reference, no rows is no error.
  EXPECT_EQ(eval(" --data " + path("none") + " --devices cpu:0 --json").status, 0);
}

// --output naming a file is refused before any row runs, naming the path (it was an Internal
// filesystem error once every row had run).
TEST_F(EvalCli, RefusesAnOutputThatIsAFileBeforeRunning) {
  std::ofstream(directory_ / "taken") << "a file";
  const Result r =
      eval("--data " + path("data") + " --devices cpu:0 --json --output " + path("taken"));
  EXPECT_EQ(r.status, 1) << r.output;
  const nlohmann::json error = nlohmann::json::parse(r.output);
  EXPECT_EQ(error["code"], "InvalidArgument") << error;
  EXPECT_EQ(error["message"], "--output " + path("taken") + ": not a directory") << error;
}

}  // namespace
