// Loading ONNX models and the errors for bad ones: every error names the file, node, op,
// opset, input or value that was wrong, and nothing crashes.
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hal/model.hpp"
#include "model_builder.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using onnx::TensorProto;

// y = x + w, with w an initializer.
ModelBuilder add_model(int64_t opset = 13) {
  ModelBuilder builder(opset);
  builder.input("x", TensorProto::FLOAT, {"N", "2"}).output("y", TensorProto::FLOAT, {"N", "2"});
  builder.initializer("w", {2}, {10, 20});
  builder.node("Add", {"x", "w"}, {"y"}, "plus");
  return builder;
}

std::filesystem::path scratch(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("hal_model_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

void write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Makes `tensor` say its elements are in the file `location` (its own elements dropped);
// returns the location entry, for a test to point elsewhere.
onnx::StringStringEntryProto* move_to_external_data(TensorProto& tensor,
                                                    const std::string& location) {
  tensor.clear_float_data();
  tensor.set_data_location(TensorProto::EXTERNAL);
  auto* entry = tensor.add_external_data();
  entry->set_key("location");
  entry->set_value(location);
  return entry;
}

TEST(ModelLoad, DescribesItsInputsOutputsAndOps) {
  const Model model = load_onnx_bytes(add_model().bytes(), "add");
  ASSERT_EQ(model.inputs().size(), 1u);  // the initializer is not an input
  EXPECT_EQ(model.inputs()[0].name, "x");
  EXPECT_EQ(to_string(model.inputs()[0].shape), "[N, 2]");
  EXPECT_EQ(model.outputs()[0].name, "y");
  EXPECT_EQ(model.opset(), 13);
  EXPECT_EQ(model.op_types(), std::vector<std::string>{"Add"});
}

TEST(ModelLoad, LoadsAFileAndItsExternalData) {
  ModelBuilder builder = add_model();
  auto& w = builder.proto().mutable_graph()->mutable_initializer()->at(0);
  auto* location = move_to_external_data(w, "weights.bin");
  const float values[] = {1.5f, -2.0f};
  std::ofstream(scratch("weights.bin"), std::ios::binary)
      .write(reinterpret_cast<const char*>(values), sizeof values);
  write(scratch("add.onnx"), builder.bytes());
  const Model model = load_onnx(scratch("add.onnx"));
  Stream stream = device("cpu:0").create_stream();
  const auto y = model.run({{"x", from_vector<float>({1, 1}, {1, 2}, stream)}}, stream).at("y");
  EXPECT_EQ(y.to_vector<float>(stream), (std::vector<float>{2.5f, -1.0f}));

  location->set_value("../../etc/passwd");
  expect_error([&] { load_onnx_bytes(builder.bytes(), "escape", scratch("").parent_path()); },
               ErrorCode::InvalidArgument, {"initializer 'w'", "leaves the model's directory"});
  location->set_value("missing.bin");
  expect_error([&] { load_onnx_bytes(builder.bytes(), "missing", scratch("").parent_path()); },
               ErrorCode::InvalidArgument, {"cannot open external data file", "missing.bin"});
  expect_error([&] { load_onnx_bytes(builder.bytes(), "in memory"); }, ErrorCode::InvalidArgument,
               {"not loaded from a file"});
  // A link in the model's folder to a file outside it is refused like a path that leaves it.
  std::filesystem::remove(scratch("link.bin"));
  std::filesystem::create_symlink("/etc/passwd", scratch("link.bin"));
  location->set_value("link.bin");
  expect_error([&] { load_onnx_bytes(builder.bytes(), "link", scratch("").parent_path()); },
               ErrorCode::InvalidArgument,
               {"initializer 'w'", "link.bin", "outside the model's directory"});
  // Dims that ask for 2 GiB of an 8-byte file are refused before anything is allocated.
  location->set_value("weights.bin");
  w.clear_dims();
  w.add_dims(int64_t{1} << 28);
  w.add_dims(2);
  expect_error([&] { load_onnx_bytes(builder.bytes(), "big", scratch("").parent_path()); },
               ErrorCode::InvalidArgument,
               {"initializer 'w'", "holds 8 bytes, fewer than the 0 + 2147483648"});
}

// A Hugging Face cache: snapshots/<rev>/ holds links into blobs/ for the model and its data.
// The data resolves outside the snapshot folder, but into the folder the model file resolves
// to: it loads. A link from a real model's folder to a file elsewhere is still refused.
TEST(ModelLoad, ExternalDataLinkedBesideItsLinkedModelLoads) {
  const std::filesystem::path hub = scratch("hub");
  std::filesystem::remove_all(hub);
  std::filesystem::create_directories(hub / "blobs");
  std::filesystem::create_directories(hub / "snapshots" / "rev");
  ModelBuilder builder = add_model();
  move_to_external_data(builder.proto().mutable_graph()->mutable_initializer()->at(0),
                        "weights.bin");
  const float values[] = {3.0f, -1.0f};
  std::ofstream(hub / "blobs" / "5e1f", std::ios::binary)
      .write(reinterpret_cast<const char*>(values), sizeof values);
  write(hub / "blobs" / "a9c0", builder.bytes());
  std::filesystem::create_symlink("../../blobs/a9c0", hub / "snapshots" / "rev" / "model.onnx");
  std::filesystem::create_symlink("../../blobs/5e1f", hub / "snapshots" / "rev" / "weights.bin");
  const Model model = load_onnx(hub / "snapshots" / "rev" / "model.onnx");
  Stream stream = device("cpu:0").create_stream();
  const auto y = model.run({{"x", from_vector<float>({1, 1}, {1, 2}, stream)}}, stream).at("y");
  EXPECT_EQ(y.to_vector<float>(stream), (std::vector<float>{4.0f, 0.0f}));

  std::filesystem::create_directories(hub / "evil");
  write(hub / "evil" / "model.onnx", builder.bytes());
  std::filesystem::create_symlink("/etc/passwd", hub / "evil" / "weights.bin");
  expect_error([&] { load_onnx(hub / "evil" / "model.onnx"); }, ErrorCode::InvalidArgument,
               {"initializer 'w'", "weights.bin", "outside the model's directory"});
}

// A Constant whose value is external data is read from the model's folder too, wherever the
// process runs (ONNX's checker looked for it in the working directory).
TEST(ModelLoad, AConstantsExternalValueIsReadFromTheModelsFolder) {
  ModelBuilder builder;
  builder.input("x", TensorProto::FLOAT, {"2"}).output("y", TensorProto::FLOAT, {"2"});
  auto& constant = builder.node("Constant", {}, {"c"}, "c");
  auto* value = constant.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  TensorProto* tensor = value->mutable_t();
  tensor->set_data_type(TensorProto::FLOAT);
  tensor->add_dims(2);
  move_to_external_data(*tensor, "constant.bin");
  builder.node("Add", {"x", "c"}, {"y"}, "plus");
  const float values[] = {0.25f, 4.0f};
  std::ofstream(scratch("constant.bin"), std::ios::binary)
      .write(reinterpret_cast<const char*>(values), sizeof values);
  write(scratch("constant.onnx"), builder.bytes());
  ASSERT_FALSE(std::filesystem::exists("constant.bin")) << "the test runs in the model's folder";
  const Model model = load_onnx(scratch("constant.onnx"));
  Stream stream = device("cpu:0").create_stream();
  const auto y = model.run({{"x", from_vector<float>({1, 2}, {2}, stream)}}, stream).at("y");
  EXPECT_EQ(y.to_vector<float>(stream), (std::vector<float>{1.25f, 6.0f}));
}

// Local functions F0 ... F7, each calling the next six times: 6^8 (1.7 million) Relus from a
// model of a few hundred bytes. Refused once the expansion passes its bound (it took gigabytes).
TEST(ModelLoad, FunctionsThatCallEachOtherManyTimesOverAreRefused) {
  ModelBuilder builder(17);
  builder.input("x", TensorProto::FLOAT, {"2"}).output("y", TensorProto::FLOAT, {"2"});
  builder.node("F0", {"x"}, {"y"}, "bomb").set_domain("bomb");
  auto* opset = builder.proto().add_opset_import();
  opset->set_domain("bomb");
  opset->set_version(1);
  constexpr int kLevels = 8, kFan = 6;
  for (int level = 0; level < kLevels; ++level) {
    onnx::FunctionProto* function = builder.proto().add_functions();
    function->set_name("F" + std::to_string(level));
    function->set_domain("bomb");
    function->add_input("x");
    function->add_output("y");
    for (const auto& [domain, version] : {std::pair<std::string, int>{"", 17}, {"bomb", 1}}) {
      auto* import = function->add_opset_import();
      import->set_domain(domain);
      import->set_version(version);
    }
    std::string previous = "x";
    for (int k = 0; k < kFan; ++k) {
      const std::string out = k + 1 < kFan ? "t" + std::to_string(k) : "y";
      onnx::NodeProto* node = function->add_node();
      node->add_input(previous);
      node->add_output(out);
      if (level + 1 < kLevels) {
        node->set_op_type("F" + std::to_string(level + 1));
        node->set_domain("bomb");
      } else {
        node->set_op_type("Relu");
      }
      previous = out;
    }
  }
  expect_error([&] { load_onnx_bytes(builder.bytes(), "bomb.onnx"); }, ErrorCode::Unsupported,
               {"bomb.onnx", "expanding its functions makes more than", "nodes"});
}

TEST(ModelLoad, AMissingTruncatedOrForeignFileIsRefusedNamingIt) {
  expect_error([] { load_onnx("/nonexistent/model.onnx"); }, ErrorCode::InvalidArgument,
               {"cannot open model file", "/nonexistent/model.onnx"});
  const std::string bytes = add_model().bytes();
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3})
    expect_error([&] { load_onnx_bytes(bytes.substr(0, cut), "cut.onnx"); },
                 ErrorCode::InvalidArgument, {"cut.onnx"});
  expect_error([] { load_onnx_bytes("this is text, not a model\n", "notes.txt"); },
               ErrorCode::InvalidArgument, {"notes.txt"});
  expect_error([] { load_onnx_bytes("", "empty.onnx"); }, ErrorCode::InvalidArgument,
               {"empty.onnx", "not a valid ONNX model"});
}

TEST(ModelLoad, OpsOpsetsAndDomainsHalCannotRunAreUnsupportedNamingThem) {
  expect_error([] { load_onnx_bytes(add_model(18).bytes(), "new.onnx"); }, ErrorCode::Unsupported,
               {"new.onnx", "opset 18", "opsets 1 to 17"});
  ModelBuilder builder = add_model();
  auto* import = builder.proto().add_opset_import();
  import->set_domain("com.example");
  import->set_version(1);
  builder.node("Frobnicate", {"y"}, {"z"}, "frob").set_domain("com.example");
  builder.output("z", TensorProto::FLOAT, {"N", "2"});
  expect_error([&] { load_onnx_bytes(builder.bytes(), "vendor.onnx"); }, ErrorCode::Unsupported,
               {"node 'frob'", "com.example.Frobnicate", "domain 'com.example'"});
  ModelBuilder pool(13);
  pool.input("x", TensorProto::FLOAT, {"1", "2", "3", "3"})
      .output("y", TensorProto::FLOAT, {"1", "2", "1", "1"});
  pool.node("GlobalLpPool", {"x"}, {"y"}, "norms");
  expect_error([&] { load_onnx_bytes(pool.bytes(), "pool.onnx"); }, ErrorCode::Unsupported,
               {"node 'norms' (GlobalLpPool, opset 13)", "no kernel"});
}

TEST(ModelLoad, CyclesAndUndefinedValuesAreRefusedNamingTheNode) {
  ModelBuilder cycle;
  cycle.input("x", TensorProto::FLOAT, {"2"}).output("b", TensorProto::FLOAT, {"2"});
  cycle.node("Relu", {"b"}, {"a"}, "first");
  cycle.node("Relu", {"a"}, {"b"}, "second");
  expect_error([&] { load_onnx_bytes(cycle.bytes(), "cycle.onnx"); }, ErrorCode::InvalidArgument,
               {"cycle.onnx"});
  ModelBuilder dangling;
  dangling.input("x", TensorProto::FLOAT, {"2"}).output("y", TensorProto::FLOAT, {"2"});
  dangling.node("Add", {"x", "ghost"}, {"y"}, "haunted");
  expect_error([&] { load_onnx_bytes(dangling.bytes(), "dangling.onnx"); },
               ErrorCode::InvalidArgument, {"dangling.onnx", "ghost"});
}

// ONNX's checker names a node by its name alone, which exporters often leave empty: an unnamed
// node's error says its index and op ("Node () has input size 1" named neither).
TEST(ModelLoad, CheckerErrorsNameAnUnnamedNodesIndexAndOp) {
  const auto model = [](const std::string& name,
                        const std::function<void(onnx::NodeProto&)>& last) {
    ModelBuilder builder;
    builder.input("x", TensorProto::FLOAT, {"2", "3"}).output("y", TensorProto::FLOAT, {"2", "3"});
    builder.node("Relu", {"x"}, {"r"});
    builder.node("Neg", {"r"}, {"n"});
    last(builder.node("Concat", {"n", "n"}, {"y"}, name));
    return builder.bytes();
  };
  expect_error([&] { load_onnx_bytes(model("", [](onnx::NodeProto&) {}), "no_axis.onnx"); },
               ErrorCode::InvalidArgument,
               {"no_axis.onnx: not a valid ONNX model: node 2 (Concat): Required attribute 'axis' "
                "is missing"});
  const auto one_input = [](onnx::NodeProto& node) {
    node.set_op_type("Add");
    node.mutable_input()->RemoveLast();
  };
  expect_error([&] { load_onnx_bytes(model("", one_input), "one_input.onnx"); },
               ErrorCode::InvalidArgument, {"node 2 (Add): Node () has input size 1"});
  // A named node is named by the checker itself: its message stays as it was.
  try {
    load_onnx_bytes(model("cat", [](onnx::NodeProto&) {}), "named.onnx");
    ADD_FAILURE() << "a Concat without axis loaded";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("Name: cat OpType: Concat"), std::string::npos)
        << error.message();
    EXPECT_EQ(error.message().find("node 2"), std::string::npos) << error.message();
  }
}

TEST(ModelRun, WrongInputsAreRefusedNamingTheInput) {
  const Model model = load_onnx_bytes(add_model().bytes(), "add");
  Stream stream = device("cpu:0").create_stream();
  const Tensor good = from_vector<float>({1, 2}, {1, 2}, stream);
  expect_error([&] { model.run({}, stream); }, ErrorCode::InvalidArgument,
               {"input 'x'", "is missing"});
  expect_error(
      [&] {
        model.run({{"x", good}, {"extra", good}}, stream);
      },
      ErrorCode::InvalidArgument, {"no input 'extra'", "its inputs: x"});
  expect_error(
      [&] {
        model.run({{"x", from_vector<int32_t>({1, 2}, {1, 2}, stream)}}, stream);
      },
      ErrorCode::InvalidArgument, {"input 'x'", "i32", "declares f32"});
  expect_error(
      [&] {
        model.run({{"x", from_vector<float>({1, 2, 3}, {1, 3}, stream)}}, stream);
      },
      ErrorCode::InvalidArgument, {"input 'x'", "[1, 3]", "[N, 2]"});
  expect_error(
      [&] {
        model.run({{"x", from_vector<float>({1, 2}, {2}, stream)}}, stream);
      },
      ErrorCode::InvalidArgument, {"input 'x'", "[2]", "[N, 2]"});
  // The model is intact after every refusal.
  const auto y = model.run({{"x", good}}, stream).at("y");
  EXPECT_EQ(y.to_vector<float>(stream), (std::vector<float>{11, 22}));
  expect_error([] { (void)Model().inputs(); }, ErrorCode::InvalidState, {"empty"});
}

// An output that is an initializer (or made of one alone: an Identity, folded at load) is the
// caller's own copy: writing to it, as through DLPack, leaves the model's resident weight, which
// the next run reads, alone.
TEST(ModelRun, AnInitializerOutputIsACopyOfTheWeight) {
  ModelBuilder builder = add_model();  // y = x + w, w = [10, 20]
  builder.output("w", TensorProto::FLOAT, {"2"}).output("same", TensorProto::FLOAT, {"2"});
  builder.node("Identity", {"w"}, {"same"});
  const Model model = load_onnx_bytes(builder.bytes(), "initializer_output");
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector<float>({1, 2}, {1, 2}, stream);
  const std::vector<float> scribble = {-1, -1};
  for (int run = 0; run < 2; ++run) {
    const auto out = model.run({{"x", x}}, stream);
    EXPECT_EQ(out.at("y").to_vector<float>(stream), (std::vector<float>{11, 22})) << "run " << run;
    for (const char* name : {"w", "same"}) {
      const Tensor& weight = out.at(name);
      EXPECT_EQ(weight.to_vector<float>(stream), (std::vector<float>{10, 20})) << name;
      stream.copy_from_host(weight.storage(), scribble.data(), weight.nbytes(),
                            static_cast<size_t>(weight.offset()) * sizeof(float));
    }
    stream.synchronize();
  }
}

// y = x - w with w an input whose initializer [1, 2] is its default (IR version 4 on, ONNX's IR
// spec): a run may give w, replacing the default for that run only, and a Neg of w is not folded
// into a constant at load. Before IR 4 every initializer is listed as an input, and stays a
// constant. w could not be given at all ("the model has no input 'w'").
ModelBuilder defaulted_input_model(int64_t ir_version) {
  ModelBuilder builder(7);
  builder.proto().set_ir_version(ir_version);
  builder.input("x", TensorProto::FLOAT, {"2"}).input("w", TensorProto::FLOAT, {"2"});
  builder.output("y", TensorProto::FLOAT, {"2"});
  builder.initializer("w", {2}, {1, 2});
  builder.node("Neg", {"w"}, {"minus_w"}, "negate");
  builder.node("Add", {"x", "minus_w"}, {"y"}, "plus");
  return builder;
}

TEST(ModelRun, AnInitializerNamedAsAnInputIsADefaultARunMayReplace) {
  const Model model = load_onnx_bytes(defaulted_input_model(8).bytes(), "defaulted");
  ASSERT_EQ(model.inputs().size(), 1u);
  EXPECT_EQ(model.inputs()[0].name, "x");
  ASSERT_EQ(model.optional_inputs().size(), 1u);
  EXPECT_EQ(model.optional_inputs()[0].name, "w");
  EXPECT_EQ(to_string(model.optional_inputs()[0].shape), "[2]");
  EXPECT_EQ(model.node_count(), 2u);  // Neg(w) is no constant
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector<float>({10, 20}, {2}, stream);
  const auto y = [&](const std::map<std::string, Tensor>& inputs) {
    return model.run(inputs, stream).at("y").to_vector<float>(stream);
  };
  EXPECT_EQ(y({{"x", x}}), (std::vector<float>{9, 18}));
  EXPECT_EQ(y({{"x", x}, {"w", from_vector<float>({100, 200}, {2}, stream)}}),
            (std::vector<float>{-90, -180}));
  EXPECT_EQ(y({{"x", x}}), (std::vector<float>{9, 18}));  // the default again
  expect_error(
      [&] {
        model.run({{"x", x}, {"w", from_vector<float>({1, 2, 3}, {3}, stream)}}, stream);
      },
      ErrorCode::InvalidArgument, {"input 'w'", "[3]", "declares [2]"});
  expect_error(
      [&] {
        model.run({{"x", x}, {"v", x}}, stream);
      },
      ErrorCode::InvalidArgument, {"no input 'v'", "its inputs: x, w (optional)"});

  const Model legacy = load_onnx_bytes(defaulted_input_model(3).bytes(), "ir3");
  EXPECT_TRUE(legacy.optional_inputs().empty());
  EXPECT_EQ(legacy.node_count(), 1u);  // Neg(w) folded
  EXPECT_EQ(legacy.run({{"x", x}}, stream).at("y").to_vector<float>(stream),
            (std::vector<float>{9, 18}));
  expect_error(
      [&] {
        legacy.run({{"x", x}, {"w", x}}, stream);
      },
      ErrorCode::InvalidArgument, {"no input 'w'"});
}

// A Conv's weights that a run may give are not constant weights: the CPU keeps constant ones
// packed by buffer, and a buffer the caller rewrote between runs gave the old weights' result.
TEST(ModelRun, AConvsReplaceableWeightsAreReadEachRun) {
  ModelBuilder builder(13);
  builder.input("x", TensorProto::FLOAT, {"1", "8", "5", "5"});
  builder.input("w", TensorProto::FLOAT, {"16", "8", "3", "3"});
  builder.output("y", TensorProto::FLOAT, {"1", "16", "3", "3"});
  builder.initializer("w", {16, 8, 3, 3}, std::vector<float>(16 * 8 * 3 * 3, 0.5f));
  builder.node("Conv", {"x", "w"}, {"y"}, "conv");
  const Model model = load_onnx_bytes(builder.bytes(), "conv_weights");
  Stream stream = device("cpu:0").create_stream();
  std::vector<float> pixels(8 * 5 * 5);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i % 7) - 3;
  const Tensor x = from_vector(pixels, {1, 8, 5, 5}, stream);
  const auto conv = [&](const Tensor& w) {
    return model.run({{"x", x}, {"w", w}}, stream).at("y").to_vector<float>(stream);
  };
  std::vector<float> weights(16 * 8 * 3 * 3);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i % 5) - 2;
  const Tensor w = from_vector(weights, {16, 8, 3, 3}, stream);
  const std::vector<float> first = conv(w);
  for (float& weight : weights) weight = -2 * weight + 1;
  stream.copy_from_host(w.storage(), weights.data(), w.nbytes(),
                        static_cast<size_t>(w.offset()) * sizeof(float));
  const std::vector<float> rewritten = conv(w);
  EXPECT_EQ(rewritten, conv(from_vector(weights, {16, 8, 3, 3}, stream)));
  EXPECT_NE(rewritten, first);
}

TEST(ModelRun, ASymbolicDimensionTakesOneSizePerRun) {
  ModelBuilder builder;
  builder.input("a", TensorProto::FLOAT, {"N"}).input("b", TensorProto::FLOAT, {"N"});
  builder.output("y", TensorProto::FLOAT, {"N"});
  builder.node("Mul", {"a", "b"}, {"y"});
  const Model model = load_onnx_bytes(builder.bytes(), "mul");
  Stream stream = device("cpu:0").create_stream();
  expect_error(
      [&] {
        model.run({{"a", from_vector<float>({1, 2}, {2}, stream)},
                   {"b", from_vector<float>({1, 2, 3}, {3}, stream)}},
                  stream);
      },
      ErrorCode::InvalidArgument, {"'N'", "size 3", "gave it 2"});
}

TEST(ModelRun, AnOpsErrorNamesTheNode) {
  ModelBuilder builder;
  builder.input("x", TensorProto::FLOAT, {"6"}).output("y", TensorProto::FLOAT, {"4"});
  auto& shape = builder.raw_initializer("shape");
  shape.set_data_type(TensorProto::INT64);
  shape.add_dims(1);
  shape.add_int64_data(4);
  builder.node("Reshape", {"x", "shape"}, {"y"}, "squash");
  const Model model = load_onnx_bytes(builder.bytes(), "reshape");
  Stream stream = device("cpu:0").create_stream();
  expect_error(
      [&] {
        model.run({{"x", from_vector<float>({1, 2, 3, 4, 5, 6}, {6}, stream)}}, stream);
      },
      ErrorCode::InvalidArgument, {"node 'squash' (Reshape, opset 13)"});
}

TEST(ModelData, ReadsOnnxTensorFilesAndRefusesOthers) {
  TensorProto proto;
  proto.set_name("input_0");
  proto.set_data_type(TensorProto::INT32);
  proto.add_dims(3);
  for (int v : {4, -5, 6}) proto.add_int32_data(v);
  write(scratch("input_0.pb"), proto.SerializeAsString());
  Stream stream = device("cpu:0").create_stream();
  std::string name;
  const Tensor t = read_onnx_tensor(scratch("input_0.pb"), stream, &name);
  EXPECT_EQ(name, "input_0");
  EXPECT_EQ(t.to_vector<int32_t>(stream), (std::vector<int32_t>{4, -5, 6}));

  proto.add_int32_data(7);  // 4 values for 3 elements
  write(scratch("bad.pb"), proto.SerializeAsString());
  expect_error([&] { read_onnx_tensor(scratch("bad.pb"), stream); }, ErrorCode::InvalidArgument,
               {"bad.pb", "4 values for 3 elements"});
  proto.set_data_type(TensorProto::STRING);
  write(scratch("strings.pb"), proto.SerializeAsString());
  expect_error([&] { read_onnx_tensor(scratch("strings.pb"), stream); }, ErrorCode::Unsupported,
               {"strings.pb", "STRING"});
  write(scratch("junk.pb"), std::string("\xff\xff\xff\xff", 4));
  expect_error([&] { read_onnx_tensor(scratch("junk.pb"), stream); }, ErrorCode::InvalidArgument,
               {"junk.pb", "not an ONNX TensorProto"});
}

}  // namespace
}  // namespace hal::test

namespace hal::test {
namespace {

// What model_bytes_fuzz found: a stride of 0 divided by zero, a 1-d input made the kernel's
// shape from past the end of the weights' shape.
TEST(ModelRun, ConvolutionAttributesAndShapesAreCheckedNamingThem) {
  Stream stream = device("cpu:0").create_stream();
  auto conv_model = [](std::vector<std::string> x_dims, std::vector<int64_t> w_dims,
                       std::vector<int64_t> strides) {
    ModelBuilder builder;
    builder.input("x", TensorProto::FLOAT, x_dims).output("y", TensorProto::FLOAT, {});
    int64_t count = 1;
    for (int64_t d : w_dims) count *= d;
    builder.initializer("w", w_dims, std::vector<float>(static_cast<size_t>(count), 1.0f));
    auto& conv = builder.node("Conv", {"x", "w"}, {"y"}, "conv");
    if (!strides.empty()) ModelBuilder::set_ints(conv, "strides", strides);
    return load_onnx_bytes(builder.bytes(), "conv.onnx");
  };
  const Model zero_stride = conv_model({"1", "1", "4", "4"}, {1, 1, 2, 2}, {0, 1});
  expect_error(
      [&] {
        zero_stride.run({{"x", zeros({1, 1, 4, 4}, DType::f32, stream)}}, stream);
      },
      ErrorCode::InvalidArgument, {"node 'conv' (Conv", "strides [0, 1]"});
  const Model flat = conv_model({"4"}, {4}, {});
  expect_error(
      [&] {
        flat.run({{"x", zeros({4}, DType::f32, stream)}}, stream);
      },
      ErrorCode::InvalidArgument, {"node 'conv' (Conv", "expects [N, C, D1, ...]"});
}

}  // namespace
}  // namespace hal::test
