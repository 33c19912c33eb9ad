// Checkpoints: safetensors files written and read back exactly (every dtype, views, metadata),
// read by Python (json and NumPy by hand, and the safetensors library where it is installed),
// training resumed from a checkpoint giving the same losses bit for bit, and every kind of bad
// file refused by name with nothing half-loaded.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "hal/checkpoint.hpp"
#include "hal/train.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

namespace fs = std::filesystem;

class Checkpoint : public ::testing::Test {
 protected:
  Device cpu = device("cpu:0");
  Stream s = cpu.create_stream();
  fs::path dir = fs::temp_directory_path() / ("hal_checkpoint_test_" + std::to_string(getpid()));

  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }

  std::vector<unsigned char> bytes_of(const fs::path& path) {
    std::ifstream file(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(file), {}};
  }
  void write_bytes(const fs::path& path, const std::vector<unsigned char>& bytes) {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  // A file of the given header text and data bytes.
  fs::path raw(const std::string& name, const std::string& header, size_t data_bytes) {
    std::vector<unsigned char> bytes(8 + header.size() + data_bytes, 0);
    const uint64_t length = header.size();
    std::memcpy(bytes.data(), &length, 8);
    std::memcpy(bytes.data() + 8, header.data(), header.size());
    write_bytes(dir / name, bytes);
    return dir / name;
  }
};

std::vector<nn::NamedTensor> every_dtype(Stream& s) {
  const Tensor base = arange(-3, 9, 1, DType::f32, s).reshape({3, 4});
  std::vector<nn::NamedTensor> out;
  for (DType dtype : kAllDTypes)
    out.push_back({"t_" + std::string(to_string(dtype)), cast(base, dtype, s)});
  out.push_back({"strided_view", base.transpose(0, 1)});  // written row-major
  out.push_back({"scalar", full({}, 2.5, DType::f64, s)});
  out.push_back({"empty", zeros({0, 3}, DType::f32, s)});
  return out;
}

TEST_F(Checkpoint, SafetensorsRoundTripsEveryDtypeExactly) {
  const auto tensors = every_dtype(s);
  save_safetensors(dir / "all.safetensors", tensors, {{"note", "hello"}}, s);
  const Safetensors back = load_safetensors(dir / "all.safetensors", s);
  EXPECT_EQ(back.metadata.at("note"), "hello");
  ASSERT_EQ(back.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(back.tensors[i].name, tensors[i].name);
    EXPECT_EQ(back.tensors[i].tensor.dtype(), tensors[i].tensor.dtype());
    EXPECT_EQ(back.tensors[i].tensor.shape(), tensors[i].tensor.shape());
    std::vector<unsigned char> want(tensors[i].tensor.nbytes()), got(want.size());
    tensors[i].tensor.copy_to_host(want.data(), s);
    back.tensors[i].tensor.copy_to_host(got.data(), s);
    s.synchronize();
    EXPECT_EQ(got, want) << tensors[i].name;
  }
  // The header is 8-byte aligned JSON: the data starts at a multiple of 8.
  const auto bytes = bytes_of(dir / "all.safetensors");
  uint64_t length = 0;
  std::memcpy(&length, bytes.data(), 8);
  EXPECT_EQ(length % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
}

// Python reads the file by the format's description alone: json for the header, NumPy for the
// little-endian data.
TEST_F(Checkpoint, PythonReadsTheFormatByHand) {
  if (std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0)
    GTEST_SKIP() << "/usr/bin/python3 has no NumPy";
  save_safetensors(dir / "py.safetensors",
                   {{"w", from_vector<float>({1.5f, -2, 3.25f, 4}, {2, 2}, s)},
                    {"n", from_vector<int64_t>({7, -9}, {2}, s)}},
                   {{"k", "v"}}, s);
  const std::string script =
      "import json, struct, sys, numpy as np\n"
      "b = open(sys.argv[1], 'rb').read()\n"
      "n = struct.unpack('<Q', b[:8])[0]\n"
      "h = json.loads(b[8:8 + n])\n"
      "d = b[8 + n:]\n"
      "def get(k, t):\n"
      "    s, e = h[k]['data_offsets']\n"
      "    return np.frombuffer(d[s:e], dtype=t).reshape(h[k]['shape'])\n"
      "assert h['__metadata__'] == {'k': 'v'}, h\n"
      "assert h['w']['dtype'] == 'F32' and h['n']['dtype'] == 'I64'\n"
      "assert (get('w', '<f4') == np.array([[1.5, -2], [3.25, 4]], 'f4')).all()\n"
      "assert (get('n', '<i8') == np.array([7, -9])).all()\n";
  std::ofstream(dir / "read.py") << script;
  EXPECT_EQ(std::system(("/usr/bin/python3 " + (dir / "read.py").string() + " " +
                         (dir / "py.safetensors").string())
                            .c_str()),
            0);
}

TEST_F(Checkpoint, TheSafetensorsLibraryReadsAndWritesWithHal) {
  if (std::system("/usr/bin/python3 -c 'import safetensors.numpy' 2>/dev/null") != 0)
    GTEST_SKIP() << "Python's safetensors is not installed for /usr/bin/python3 (Debian 12 does "
                    "not package it); the format is checked by hand in PythonReadsTheFormatByHand";
  save_safetensors(dir / "hal.safetensors", {{"w", from_vector<float>({1, 2, 3}, {3}, s)}}, {}, s);
  const std::string script =
      "import sys, numpy as np\n"
      "from safetensors.numpy import load_file, save_file\n"
      "t = load_file(sys.argv[1])\n"
      "assert (t['w'] == np.array([1, 2, 3], 'f4')).all()\n"
      "save_file({'x': np.arange(6, dtype='f8').reshape(2, 3)}, sys.argv[2])\n";
  std::ofstream(dir / "lib.py") << script;
  ASSERT_EQ(
      std::system(("/usr/bin/python3 " + (dir / "lib.py").string() + " " +
                   (dir / "hal.safetensors").string() + " " + (dir / "py.safetensors").string())
                      .c_str()),
      0);
  const Safetensors back = load_safetensors(dir / "py.safetensors", s);
  EXPECT_EQ(back.tensors.at(0).tensor.to_vector<double>(s),
            (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

// A small classifier and its training, for resuming.
struct TrainingRun {
  std::shared_ptr<nn::Sequential> model;
  std::unique_ptr<optim::AdamW> optimizer;
  std::unique_ptr<train::Trainer> trainer;
};

// `seed` draws the weights; the dropout's seed is the run's configuration, the same for all.
TrainingRun make_run(uint64_t seed, Stream& s) {
  TrainingRun run;
  run.model = nn::make_mlp({6, 16, 4}, seed, s);
  run.model->add(std::make_shared<nn::Dropout>(0.2, 5));  // host state that must resume too
  run.optimizer = std::make_unique<optim::AdamW>(run.model->parameters(), optim::AdamWOptions{});
  run.trainer = std::make_unique<train::Trainer>(
      *run.model, *run.optimizer,
      [](nn::Module& m, const Tensor& x, const Tensor& y, Stream& st) {
        return cross_entropy(m.forward(x, st), y, -100, 0.0, st);
      },
      s);
  return run;
}

float train_step(TrainingRun& run, int step, Stream& s) {
  const Tensor x = normal({8, 6}, DType::f32, 1000 + static_cast<uint64_t>(step), s);
  const Tensor y = cast(mul(uniform({8}, DType::f32, 2000 + static_cast<uint64_t>(step), s),
                            full({}, 4, DType::f32, s), s),
                        DType::i64, s);
  return run.trainer->step(x, y).to_vector<float>(s)[0];
}

TEST_F(Checkpoint, ResumingReproducesTheNextLossesBitForBit) {
  TrainingRun first = make_run(5, s);
  for (int step = 0; step < 3; ++step) train_step(first, step, s);
  save_checkpoint(dir / "run.safetensors", *first.model, *first.optimizer, {{"epoch", "3"}}, s);
  std::vector<float> expected;
  for (int step = 3; step < 7; ++step) expected.push_back(train_step(first, step, s));

  TrainingRun resumed = make_run(99, s);  // other weights: the checkpoint must replace them all
  const auto metadata =
      load_checkpoint(dir / "run.safetensors", *resumed.model, *resumed.optimizer, s);
  EXPECT_EQ(metadata, (std::map<std::string, std::string>{{"epoch", "3"}}));
  EXPECT_EQ(resumed.optimizer->steps(), 3);
  std::vector<float> got;
  for (int step = 3; step < 7; ++step) got.push_back(train_step(resumed, step, s));
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(std::memcmp(&got[i], &expected[i], sizeof(float)), 0)
        << "step " << i + 3 << ": " << got[i] << " against " << expected[i];
}

// Loading parameters between a forward and its backward rewrites a weight the graph saved:
// backward is refused by name, having added to no gradient, and a forward after the load
// differentiates the loaded values, as the model the file came from does.
TEST_F(Checkpoint, LoadingBetweenForwardAndBackwardIsRefused) {
  auto source = nn::make_mlp({6, 16, 4}, 1, s);
  save_safetensors(dir / "weights.safetensors", source->parameters(), {}, s);
  auto model = nn::make_mlp({6, 16, 4}, 2, s);
  const Tensor x = normal({8, 6}, DType::f32, 7, s);
  const Tensor y = from_vector<int64_t>({0, 1, 2, 3, 3, 2, 1, 0}, {8}, s);
  const auto loss_of = [&](nn::Module& m) {
    return cross_entropy(m.forward(x, s), y, -100, 0.0, s);
  };
  const Tensor stale = loss_of(*model);
  load_parameters(dir / "weights.safetensors", *model, s);
  // The second layer's weight, seen transposed by its matmul.
  expect_error([&] { stale.backward(s); }, ErrorCode::InvalidState,
               {"backward through 'matmul'", "saved input 1 (b) of shape [16, 4]",
                "in-place write after forward", "checkpoint load"});
  for (const nn::NamedTensor& p : model->parameters())
    EXPECT_FALSE(p.tensor.grad().defined()) << p.name;
  loss_of(*model).backward(s);
  loss_of(*source).backward(s);
  const std::vector<nn::NamedTensor> loaded = model->parameters(), original = source->parameters();
  ASSERT_EQ(loaded.size(), original.size());
  for (size_t i = 0; i < loaded.size(); ++i)
    EXPECT_EQ(loaded[i].tensor.grad().to_vector<float>(s),
              original[i].tensor.grad().to_vector<float>(s))
        << loaded[i].name;
}

TEST_F(Checkpoint, MismatchedCheckpointsAreRefusedAndNothingIsHalfLoaded) {
  TrainingRun run = make_run(1, s);
  train_step(run, 0, s);
  save_checkpoint(dir / "good.safetensors", *run.model, *run.optimizer, {}, s);
  const auto parameters_of = [&](TrainingRun& r) {
    std::vector<std::vector<float>> values;
    for (const nn::NamedTensor& p : r.model->parameters())
      values.push_back(p.tensor.detach().to_vector<float>(s));
    return values;
  };
  TrainingRun target = make_run(2, s);
  const auto before = parameters_of(target);
  const auto refused = [&](const fs::path& path, const std::vector<std::string>& parts) {
    expect_error([&] { load_checkpoint(path, *target.model, *target.optimizer, s); },
                 ErrorCode::InvalidArgument, parts);
    EXPECT_EQ(parameters_of(target), before) << path;
    EXPECT_EQ(target.optimizer->steps(), 0) << path;
  };
  // A model with an extra layer, one with a layer of another size, one missing a layer.
  auto wider = nn::make_mlp({6, 17, 4}, 3, s);
  optim::AdamW wider_optimizer(wider->parameters(), {});
  save_checkpoint(dir / "wider.safetensors", *wider, wider_optimizer, {}, s);
  refused(dir / "wider.safetensors", {"wider.safetensors", "'0.weight' is f32[17, 6]", "[16, 6]"});
  auto deeper = nn::make_mlp({6, 16, 4, 4}, 3, s);
  optim::AdamW deeper_optimizer(deeper->parameters(), {});
  save_checkpoint(dir / "deeper.safetensors", *deeper, deeper_optimizer, {}, s);
  refused(dir / "deeper.safetensors", {"'4.weight' is not a parameter of the module"});
  auto shallow = nn::make_mlp({6, 4}, 3, s);
  optim::AdamW shallow_optimizer(shallow->parameters(), {});
  save_checkpoint(dir / "shallow.safetensors", *shallow, shallow_optimizer, {}, s);
  refused(dir / "shallow.safetensors", {"'0.weight' is f32[4, 6]"});
  // Parameters alone (no optimizer state, no format) are not a checkpoint.
  save_safetensors(dir / "bare.safetensors", run.model->parameters(), {}, s);
  refused(dir / "bare.safetensors", {"not a hal checkpoint"});
  // Optimizer state missing a buffer.
  const Safetensors good = load_safetensors(dir / "good.safetensors", s);
  std::vector<nn::NamedTensor> fewer;
  for (const nn::NamedTensor& t : good.tensors)
    if (t.name != "optimizer.0.bias.exp_avg") fewer.push_back(t);
  save_safetensors(dir / "fewer.safetensors", fewer, good.metadata, s);
  refused(dir / "fewer.safetensors", {"fewer.safetensors", "optimizer state"});
  // The good one loads.
  load_checkpoint(dir / "good.safetensors", *target.model, *target.optimizer, s);
  EXPECT_EQ(parameters_of(target), parameters_of(run));
}

// A child module named "optimizer": its parameters share the prefix the optimizer's state
// takes in the file, and load by the module's own names (they were taken for state).
TEST_F(Checkpoint, AChildNamedOptimizerLoadsAsParameters) {
  struct Holder : nn::Module {
    Holder(uint64_t seed, Stream& s) {
      inner = register_module("optimizer", std::make_shared<nn::Linear>(2, 2, true, seed, s));
    }
    Tensor forward(const Tensor& x, Stream& s) override { return inner->forward(x, s); }
    std::shared_ptr<nn::Linear> inner;
  };
  Holder saved(1, s), loaded(2, s);
  optim::AdamW saved_optimizer(saved.parameters(), {}), loaded_optimizer(loaded.parameters(), {});
  save_checkpoint(dir / "holder.safetensors", saved, saved_optimizer, {}, s);
  load_checkpoint(dir / "holder.safetensors", loaded, loaded_optimizer, s);
  for (size_t i = 0; i < saved.parameters().size(); ++i)
    EXPECT_EQ(loaded.parameters()[i].tensor.detach().to_vector<float>(s),
              saved.parameters()[i].tensor.detach().to_vector<float>(s))
        << saved.parameters()[i].name;
}

TEST_F(Checkpoint, CorruptFilesAreRefusedByName) {
  const auto refused = [&](const fs::path& path, const std::vector<std::string>& parts) {
    expect_error([&] { load_safetensors(path, s); }, ErrorCode::InvalidArgument, parts);
  };
  refused(dir / "absent.safetensors", {"absent.safetensors", "cannot be opened"});
  // A directory opens as a stream and reads as nothing: it said "not a JSON object".
  refused(dir, {"safetensors file " + dir.string() + ": is a directory"});
  write_bytes(dir / "short.safetensors", {1, 2, 3});
  refused(dir / "short.safetensors", {"short.safetensors", "shorter than"});
  std::vector<unsigned char> huge(16, 0);
  huge[6] = 1;  // a header length of 2^48
  write_bytes(dir / "huge.safetensors", huge);
  refused(dir / "huge.safetensors", {"the header claims"});
  refused(raw("json.safetensors", "{\"a\": ", 0), {"json.safetensors", "not a JSON object"});
  refused(raw("dtype.safetensors",
              R"({"a": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}})", 8),
          {"tensor 'a' has dtype \"C64\""});
  refused(raw("size.safetensors",
              R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8),
          {"tensor 'a' (F32[3]) has data_offsets [0,8]"});
  refused(raw("past.safetensors",
              R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8),
          {"for 8 bytes of data"});
  refused(raw("overlap.safetensors",
              R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
              R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
              12),
          {"overlap or leave a gap"});
  refused(raw("tail.safetensors",
              R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 8),
          {"4 bytes of data follow the last tensor"});
  refused(raw("shape.safetensors",
              R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4),
          {"tensor 'a' has shape [-1]"});
  refused(raw("meta.safetensors", R"({"__metadata__": {"k": 1}})", 0), {"__metadata__ 'k'"});
  // 2^61 f64 elements: 2^64 bytes, 0 when the product wraps, which matched offsets [0, 0].
  refused(
      raw("wrap.safetensors",
          R"({"a": {"dtype": "F64", "shape": [2305843009213693952], "data_offsets": [0, 0]}})", 0),
      {"wrap.safetensors", "tensor 'a' (F64[2305843009213693952]) has data_offsets [0,0]"});
  expect_error(
      [&] {
        save_safetensors(dir / "x.safetensors",
                         {{"a", ones({1}, DType::f32, s)}, {"a", ones({1}, DType::f32, s)}}, {}, s);
      },
      ErrorCode::InvalidArgument, {"'a' is reserved or given twice"});
  // A folder that is not there: named, and nothing is left behind.
  const fs::path nowhere = dir / "missing" / "x.safetensors";
  expect_error(
      [&] {
        save_safetensors(nowhere, {{"a", ones({1}, DType::f32, s)}}, {}, s);
      },
      ErrorCode::InvalidArgument, {"save_safetensors: cannot write " + nowhere.string()});
  EXPECT_FALSE(fs::exists(dir / "missing"));
}

}  // namespace
}  // namespace hal::test
