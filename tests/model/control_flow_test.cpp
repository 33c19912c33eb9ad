// If, Loop and Scan (subgraphs reading the enclosing graph's values) and the sequence ops,
// against values worked out by hand here; and the errors for bodies, positions and names that
// do not fit.
#include <limits>

#include "hal/execution_plan.hpp"
#include "hal/model.hpp"
#include "model_builder.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using onnx::TensorProto;

void describe(onnx::ValueInfoProto* info, const std::string& name, int32_t elem,
              const std::vector<int64_t>& dims) {
  info->set_name(name);
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem);
  auto* shape = tensor->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

// A subgraph: inputs and outputs (name, elem type, dims) and nodes added by the caller.
struct Graph {
  onnx::GraphProto proto;
  explicit Graph(const std::string& name) { proto.set_name(name); }
  Graph& input(const std::string& name, int32_t elem, std::vector<int64_t> dims) {
    describe(proto.add_input(), name, elem, dims);
    return *this;
  }
  Graph& output(const std::string& name, int32_t elem, std::vector<int64_t> dims) {
    describe(proto.add_output(), name, elem, dims);
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string& name = "") {
    auto* node = proto.add_node();
    node->set_op_type(op);
    node->set_name(name);
    for (auto& in : inputs) node->add_input(in);
    for (auto& out : outputs) node->add_output(out);
    return *node;
  }
};

void set_graph(onnx::NodeProto& node, const std::string& name, const Graph& graph) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = graph.proto;
}

void set_sequence_output(ModelBuilder& builder, const std::string& name, int32_t elem) {
  auto* info = builder.proto().mutable_graph()->add_output();
  info->set_name(name);
  info->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(elem);
}

void add_i64_initializer(ModelBuilder& builder, const std::string& name,
                         const std::vector<int64_t>& values, std::vector<int64_t> dims) {
  auto& tensor = builder.raw_initializer(name);
  tensor.set_data_type(TensorProto::INT64);
  for (int64_t d : dims) tensor.add_dims(d);
  for (int64_t v : values) tensor.add_int64_data(v);
}

Tensor scalar_bool(bool value, Stream& stream) {
  const uint8_t byte = value ? 1 : 0;
  return from_host(&byte, {}, DType::boolean, stream);
}
Tensor scalar_i64(int64_t value, Stream& stream) {
  return from_host(&value, {}, DType::i64, stream);
}

void expect_values(const Tensor& tensor, Stream& stream, const std::vector<float>& want) {
  const std::vector<float> got = tensor.to_vector<float>(stream);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << "at " << i;
}

// then: x + x; else: -x. Both read the graph's input x, which is not the If's input.
TEST(ControlFlow, IfRunsTheBranchItsConditionPicksReadingOuterValues) {
  Graph then_branch("then"), else_branch("else");
  then_branch.output("y_then", TensorProto::FLOAT, {3});
  then_branch.node("Add", {"x", "x"}, {"y_then"});
  else_branch.output("y_else", TensorProto::FLOAT, {3});
  else_branch.node("Neg", {"x"}, {"y_else"});
  ModelBuilder builder(13);
  builder.input("cond", TensorProto::BOOL, {}).input("x", TensorProto::FLOAT, {"3"});
  builder.output("y", TensorProto::FLOAT, {"3"});
  auto& node = builder.node("If", {"cond"}, {"y"}, "if");
  set_graph(node, "then_branch", then_branch);
  set_graph(node, "else_branch", else_branch);
  const Model model = load_onnx_bytes(builder.bytes(), "if");
  EXPECT_EQ(model.op_types(), (std::vector<std::string>{"Add", "If", "Neg"}));  // branches too
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector(std::vector<float>{1, -2, 3}, {3}, stream);
  expect_values(model.run({{"cond", scalar_bool(true, stream)}, {"x", x}}, stream).at("y"), stream,
                {2, -4, 6});
  expect_values(model.run({{"cond", scalar_bool(false, stream)}, {"x", x}}, stream).at("y"), stream,
                {-1, 2, -3});
}

// sum += step each iteration while i < 1 (the body's condition, computed with the step), at
// most M = INT64_MAX times (a while loop as PyTorch exports it): 2 iterations; the scan output
// holds each iteration's sum.
TEST(ControlFlow, LoopCarriesValuesStopsOnItsConditionAndStacksScanOutputs) {
  Graph body("body");
  body.input("i", TensorProto::INT64, {}).input("cond_in", TensorProto::BOOL, {});
  body.input("sum_in", TensorProto::FLOAT, {2});
  body.output("cond_out", TensorProto::BOOL, {}).output("sum_out", TensorProto::FLOAT, {2});
  body.output("trace", TensorProto::FLOAT, {2});
  body.node("Less", {"i", "limit"}, {"cond_out"});
  body.node("Add", {"sum_in", "step"}, {"sum_out"});
  body.node("Identity", {"sum_out"}, {"trace"});
  ModelBuilder builder(13);
  builder.input("step", TensorProto::FLOAT, {"2"}).input("sum0", TensorProto::FLOAT, {"2"});
  builder.output("sum", TensorProto::FLOAT, {"2"}).output("sums", TensorProto::FLOAT, {"2", "2"});
  add_i64_initializer(builder, "M", {std::numeric_limits<int64_t>::max()}, {});
  add_i64_initializer(builder, "limit", {1}, {});
  auto& node = builder.node("Loop", {"M", "", "sum0"}, {"sum", "sums"}, "loop");
  set_graph(node, "body", body);
  const Model model = load_onnx_bytes(builder.bytes(), "loop");
  Stream stream = device("cpu:0").create_stream();
  const auto out = model.run({{"step", from_vector(std::vector<float>{1, 10}, {2}, stream)},
                              {"sum0", from_vector(std::vector<float>{0, 100}, {2}, stream)}},
                             stream);
  // i = 0: sum (1, 110), cond 0 < 1; i = 1: (2, 120), cond false: stop.
  expect_values(out.at("sum"), stream, {2, 120});
  EXPECT_EQ(out.at("sums").shape(), (Shape{2, 2}));
  expect_values(out.at("sums"), stream, {1, 110, 2, 120});
}

// The planner places the Loop where its inputs are and runs it there, the body's nodes on the
// same device; nothing is folded away although M and the limit are constants.
TEST(ControlFlow, ALoopIsPlannedAndRunsFromItsPlan) {
  Graph body("body");
  body.input("i", TensorProto::INT64, {}).input("cond_in", TensorProto::BOOL, {});
  body.input("sum_in", TensorProto::FLOAT, {2});
  body.output("cond_out", TensorProto::BOOL, {}).output("sum_out", TensorProto::FLOAT, {2});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("Add", {"sum_in", "step"}, {"sum_out"});
  ModelBuilder builder(13);
  builder.input("sum0", TensorProto::FLOAT, {"2"});
  builder.output("sum", TensorProto::FLOAT, {"2"});
  builder.initializer("step", {2}, {1, 2});
  add_i64_initializer(builder, "M", {3}, {});
  auto& node = builder.node("Loop", {"M", "", "sum0"}, {"sum"}, "loop");
  set_graph(node, "body", body);
  const Model model = load_onnx_bytes(builder.bytes(), "planned_loop");
  ASSERT_EQ(model.node_count(), 1u);
  PlanOptions options;
  options.device = "cpu:0";
  const ExecutionPlan plan = plan_model(model, options);
  ASSERT_EQ(plan.nodes.size(), 1u);
  EXPECT_EQ(plan.nodes[0].device, "cpu:0");
  Stream stream = device("cpu:0").create_stream();
  const Tensor sum0 = from_vector(std::vector<float>{0, 10}, {2}, stream);
  stream.synchronize();  // run_planned reads its inputs on streams of its own
  const PlannedRun run = run_planned(model, plan, {{"sum0", sum0}});
  expect_values(run.outputs.at("sum"), stream, {3, 16});
}

TEST(ControlFlow, LoopWithZeroTripsGivesTheInitialValuesAndEmptyScans) {
  Graph body("body");
  body.input("i", TensorProto::INT64, {}).input("cond_in", TensorProto::BOOL, {});
  body.input("v_in", TensorProto::FLOAT, {1});
  body.output("cond_out", TensorProto::BOOL, {}).output("v_out", TensorProto::FLOAT, {1});
  body.output("scan", TensorProto::FLOAT, {1});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("Neg", {"v_in"}, {"v_out"});
  body.node("Identity", {"v_out"}, {"scan"});
  ModelBuilder builder(16);
  builder.input("M", TensorProto::INT64, {}).input("v0", TensorProto::FLOAT, {"1"});
  builder.output("v", TensorProto::FLOAT, {"1"}).output("scans", TensorProto::FLOAT, {"N", "1"});
  auto& node = builder.node("Loop", {"M", "", "v0"}, {"v", "scans"});
  set_graph(node, "body", body);
  const Model model = load_onnx_bytes(builder.bytes(), "loop0");
  Stream stream = device("cpu:0").create_stream();
  const Tensor v0 = from_vector(std::vector<float>{7}, {1}, stream);
  auto out = model.run({{"M", scalar_i64(0, stream)}, {"v0", v0}}, stream);
  expect_values(out.at("v"), stream, {7});
  EXPECT_EQ(out.at("scans").shape(), (Shape{0, 1}));
  out = model.run({{"M", scalar_i64(3, stream)}, {"v0", v0}}, stream);
  expect_values(out.at("v"), stream, {-7});
  expect_values(out.at("scans"), stream, {-7, 7, -7});
}

// Running sums of x's rows taken last to first, the scan output stacked along axis 1:
// rows (5, 6), (3, 4), (1, 2) give sums (5, 6), (8, 10), (9, 12).
TEST(ControlFlow, ScanSlicesInReverseAndStacksAlongTheOutputAxis) {
  Graph body("body");
  body.input("s_in", TensorProto::FLOAT, {2}).input("row", TensorProto::FLOAT, {2});
  body.output("s_out", TensorProto::FLOAT, {2}).output("y_t", TensorProto::FLOAT, {2});
  body.node("Add", {"s_in", "row"}, {"s_out"});
  body.node("Identity", {"s_out"}, {"y_t"});
  ModelBuilder builder(16);
  builder.input("s0", TensorProto::FLOAT, {"2"}).input("x", TensorProto::FLOAT, {"3", "2"});
  builder.output("s", TensorProto::FLOAT, {"2"}).output("y", TensorProto::FLOAT, {"2", "3"});
  auto& node = builder.node("Scan", {"s0", "x"}, {"s", "y"}, "scan");
  set_graph(node, "body", body);
  ModelBuilder::set_int(node, "num_scan_inputs", 1);
  ModelBuilder::set_ints(node, "scan_input_directions", {1});
  ModelBuilder::set_ints(node, "scan_output_axes", {1});
  const Model model = load_onnx_bytes(builder.bytes(), "scan");
  Stream stream = device("cpu:0").create_stream();
  const auto out =
      model.run({{"s0", from_vector(std::vector<float>{0, 0}, {2}, stream)},
                 {"x", from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2}, stream)}},
                stream);
  expect_values(out.at("s"), stream, {9, 12});
  EXPECT_EQ(out.at("y").shape(), (Shape{2, 3}));
  expect_values(out.at("y"), stream, {5, 8, 9, 6, 10, 12});
}

// x [3, 2] split into its rows; the last erased, x's first row inserted at the front, then
// stacked: rows (1, 2), (1, 2), (3, 4); the length before stacking is 3.
TEST(Sequences, SplitEraseInsertAtLengthAndConcatenate) {
  ModelBuilder builder(13);
  builder.input("x", TensorProto::FLOAT, {"3", "2"});
  builder.output("stacked", TensorProto::FLOAT, {"3", "2"})
      .output("length", TensorProto::INT64, {});
  builder.output("second", TensorProto::FLOAT, {"2"});
  add_i64_initializer(builder, "zero", {0}, {});
  auto& split = builder.node("SplitToSequence", {"x"}, {"rows"});
  ModelBuilder::set_int(split, "keepdims", 0);
  builder.node("SequenceErase", {"rows"}, {"two"});
  builder.node("SequenceAt", {"two", "zero"}, {"first"});
  builder.node("SequenceInsert", {"two", "first", "zero"}, {"three"});
  builder.node("SequenceLength", {"three"}, {"length"});
  add_i64_initializer(builder, "minus_two", {-2}, {});
  builder.node("SequenceAt", {"three", "minus_two"}, {"second"});
  auto& concat = builder.node("ConcatFromSequence", {"three"}, {"stacked"});
  ModelBuilder::set_int(concat, "axis", 0);
  ModelBuilder::set_int(concat, "new_axis", 1);
  const Model model = load_onnx_bytes(builder.bytes(), "sequences");
  Stream stream = device("cpu:0").create_stream();
  const auto out =
      model.run({{"x", from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2}, stream)}}, stream);
  EXPECT_EQ(out.at("stacked").shape(), (Shape{3, 2}));
  expect_values(out.at("stacked"), stream, {1, 2, 1, 2, 3, 4});
  EXPECT_EQ(out.at("length").to_vector<int64_t>(stream), std::vector<int64_t>{3});
  expect_values(out.at("second"), stream, {1, 2});
}

// A sequence as the graph's input and output: run_values takes and gives it; run() refuses
// the sequence output, naming it.
TEST(Sequences, SequenceInputsAndOutputsGoThroughRunValues) {
  ModelBuilder builder(13);
  auto* input = builder.proto().mutable_graph()->add_input();
  input->set_name("seq");
  input->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(TensorProto::FLOAT);
  builder.input("t", TensorProto::FLOAT, {"1"});
  set_sequence_output(builder, "longer", TensorProto::FLOAT);
  builder.node("SequenceInsert", {"seq", "t"}, {"longer"});
  const Model model = load_onnx_bytes(builder.bytes(), "sequence_io");
  ASSERT_TRUE(model.inputs()[0].sequence);
  Stream stream = device("cpu:0").create_stream();
  const Tensor t = from_vector(std::vector<float>{4}, {1}, stream);
  TensorSequence seq{DType::f32, {from_vector(std::vector<float>{1, 2}, {2}, stream)}};
  const auto out = model.run_values({{"seq", seq}, {"t", t}}, stream);
  const auto& longer = std::get<TensorSequence>(out.at("longer"));
  ASSERT_EQ(longer.tensors.size(), 2u);
  expect_values(longer.tensors[0], stream, {1, 2});
  expect_values(longer.tensors[1], stream, {4});
  expect_error(
      [&] {
        model.run_values({{"seq", t}, {"t", t}}, stream);
      },
      ErrorCode::InvalidArgument, {"input 'seq'", "sequence"});
  expect_error(
      [&] {
        TensorSequence ints{DType::i64, {}};
        model.run_values({{"seq", ints}, {"t", t}}, stream);
      },
      ErrorCode::InvalidArgument, {"input 'seq'", "i64"});
  expect_error(
      [&] {
        model.run({{"t", t}}, stream);
      },
      ErrorCode::InvalidArgument, {"input 'seq'", "missing"});
}

TEST(Sequences, RunRefusesASequenceOutput) {
  ModelBuilder builder(13);
  builder.input("x", TensorProto::FLOAT, {"2"});
  set_sequence_output(builder, "seq", TensorProto::FLOAT);
  builder.node("SequenceConstruct", {"x", "x"}, {"seq"});
  const Model model = load_onnx_bytes(builder.bytes(), "sequence_out");
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector(std::vector<float>{1, 2}, {2}, stream);
  expect_error(
      [&] {
        model.run({{"x", x}}, stream);
      },
      ErrorCode::Unsupported, {"output 'seq'", "run_values"});
  EXPECT_EQ(std::get<TensorSequence>(model.run_values({{"x", x}}, stream).at("seq")).tensors.size(),
            2u);
}

// Optional(x) has an element, Optional() none; OptionalGetElement passes the element on.
TEST(Sequences, OptionalsHoldAValueOrNone) {
  ModelBuilder builder(16);
  builder.input("x", TensorProto::FLOAT, {"2"});
  builder.output("has", TensorProto::BOOL, {}).output("has_not", TensorProto::BOOL, {});
  builder.output("y", TensorProto::FLOAT, {"2"});
  builder.node("Optional", {"x"}, {"some"});
  auto& none = builder.node("Optional", {}, {"none"});
  auto* type = none.add_attribute();
  type->set_name("type");
  type->set_type(onnx::AttributeProto::TYPE_PROTO);
  type->mutable_tp()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  builder.node("OptionalHasElement", {"some"}, {"has"});
  builder.node("OptionalHasElement", {"none"}, {"has_not"});
  builder.node("OptionalGetElement", {"some"}, {"y"});
  const Model model = load_onnx_bytes(builder.bytes(), "optionals");
  Stream stream = device("cpu:0").create_stream();
  const auto out = model.run({{"x", from_vector(std::vector<float>{1, 2}, {2}, stream)}}, stream);
  EXPECT_EQ(out.at("has").to_vector<uint8_t>(stream), std::vector<uint8_t>{1});
  EXPECT_EQ(out.at("has_not").to_vector<uint8_t>(stream), std::vector<uint8_t>{0});
  expect_values(out.at("y"), stream, {1, 2});
}

// Identity passes a sequence on; Neg, a tensor op, refuses one as unsupported, naming itself.
TEST(Sequences, IdentityPassesASequenceAndATensorOpRefusesOne) {
  ModelBuilder builder(16);
  builder.input("x", TensorProto::FLOAT, {"2"});
  set_sequence_output(builder, "same", TensorProto::FLOAT);
  builder.node("SequenceConstruct", {"x"}, {"seq"});
  builder.node("Identity", {"seq"}, {"same"});
  const Model model = load_onnx_bytes(builder.bytes(), "identity");
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector(std::vector<float>{1, 2}, {2}, stream);
  const auto out = model.run_values({{"x", x}}, stream);
  ASSERT_EQ(std::get<TensorSequence>(out.at("same")).tensors.size(), 1u);

  ModelBuilder wrong(16);
  wrong.input("x", TensorProto::FLOAT, {"2"}).output("y", TensorProto::FLOAT, {"2"});
  wrong.node("SequenceConstruct", {"x"}, {"seq"});
  wrong.node("Neg", {"seq"}, {"y"}, "negate");
  // ONNX's checker does not check types; hal says what it cannot do when it runs.
  const Model refused = load_onnx_bytes(wrong.bytes(), "neg_of_sequence");
  expect_error(
      [&] {
        refused.run({{"x", x}}, stream);
      },
      ErrorCode::Unsupported, {"node 'negate' (Neg", "input 'seq' is a sequence"});
}

TEST(ControlFlowErrors, SequenceAtOutOfRangeNamesTheNodeAndThePosition) {
  ModelBuilder builder(13);
  builder.input("x", TensorProto::FLOAT, {"2"}).input("at", TensorProto::INT64, {});
  builder.output("y", TensorProto::FLOAT, {"2"});
  builder.node("SequenceConstruct", {"x", "x", "x"}, {"seq"});
  builder.node("SequenceAt", {"seq", "at"}, {"y"}, "pick");
  const Model model = load_onnx_bytes(builder.bytes(), "sequence_at");
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector(std::vector<float>{1, 2}, {2}, stream);
  for (int64_t at : {3, -4})
    expect_error(
        [&] {
          model.run({{"x", x}, {"at", scalar_i64(at, stream)}}, stream);
        },
        ErrorCode::InvalidArgument,
        {"node 'pick' (SequenceAt", "position " + std::to_string(at), "sequence of 3 tensors"});
  expect_values(model.run({{"x", x}, {"at", scalar_i64(-3, stream)}}, stream).at("y"), stream,
                {1, 2});
}

// The body carries one value but gives only its condition.
TEST(ControlFlowErrors, LoopBodyWithTooFewOutputsNamesTheNode) {
  Graph body("body");
  body.input("i", TensorProto::INT64, {}).input("cond_in", TensorProto::BOOL, {});
  body.input("v_in", TensorProto::FLOAT, {1});
  body.output("cond_out", TensorProto::BOOL, {});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  ModelBuilder builder(13);
  builder.input("M", TensorProto::INT64, {}).input("v0", TensorProto::FLOAT, {"1"});
  builder.output("v", TensorProto::FLOAT, {"1"});
  auto& node = builder.node("Loop", {"M", "", "v0"}, {"v"}, "bad_loop");
  set_graph(node, "body", body);
  const Model model = load_onnx_bytes(builder.bytes(), "bad_loop");
  Stream stream = device("cpu:0").create_stream();
  expect_error(
      [&] {
        model.run(
            {{"M", scalar_i64(2, stream)}, {"v0", from_vector(std::vector<float>{1}, {1}, stream)}},
            stream);
      },
      ErrorCode::InvalidArgument, {"node 'bad_loop' (Loop, opset 13)", "body gives 1 output"});
}

TEST(ControlFlowErrors, SubgraphReadingAnUndefinedNameIsRefusedAtLoad) {
  Graph then_branch("then"), else_branch("else");
  then_branch.output("y_then", TensorProto::FLOAT, {1});
  then_branch.node("Neg", {"ghost"}, {"y_then"}, "haunted");
  else_branch.output("y_else", TensorProto::FLOAT, {1});
  else_branch.node("Neg", {"x"}, {"y_else"});
  ModelBuilder builder(13);
  builder.input("cond", TensorProto::BOOL, {}).input("x", TensorProto::FLOAT, {"1"});
  builder.output("y", TensorProto::FLOAT, {"1"});
  auto& node = builder.node("If", {"cond"}, {"y"}, "if");
  set_graph(node, "then_branch", then_branch);
  set_graph(node, "else_branch", else_branch);
  expect_error([&] { load_onnx_bytes(builder.bytes(), "ghost"); }, ErrorCode::InvalidArgument,
               {"ghost", "haunted"});
}

// A value computed after the If is not in the branch's scope.
TEST(ControlFlowErrors, SubgraphReadingALaterValueIsRefused) {
  Graph then_branch("then"), else_branch("else");
  then_branch.output("y_then", TensorProto::FLOAT, {1});
  then_branch.node("Neg", {"later"}, {"y_then"}, "early");
  else_branch.output("y_else", TensorProto::FLOAT, {1});
  else_branch.node("Neg", {"x"}, {"y_else"});
  ModelBuilder builder(13);
  builder.input("cond", TensorProto::BOOL, {}).input("x", TensorProto::FLOAT, {"1"});
  builder.output("y", TensorProto::FLOAT, {"1"}).output("later", TensorProto::FLOAT, {"1"});
  auto& node = builder.node("If", {"cond"}, {"y"}, "if");
  set_graph(node, "then_branch", then_branch);
  set_graph(node, "else_branch", else_branch);
  builder.node("Neg", {"x"}, {"later"});
  expect_error([&] { load_onnx_bytes(builder.bytes(), "later"); }, ErrorCode::InvalidArgument,
               {"later", "early"});
}

// SequenceMap over a sequence a node makes: the function ONNX builds for it needs to know its
// input is a sequence, which hal records for the sequence ops' outputs. The body sums each
// tensor; the sums are stacked.
TEST(Sequences, SequenceMapOverASequenceANodeMakes) {
  Graph body("body");
  body.proto.add_input()->set_name("a");
  body.proto.mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      TensorProto::FLOAT);
  body.proto.add_output()->set_name("b");
  body.proto.mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      TensorProto::FLOAT);
  ModelBuilder::set_int(body.node("ReduceSum", {"a"}, {"b"}), "keepdims", 0);
  ModelBuilder builder(17);
  builder.input("x", TensorProto::FLOAT, {"2", "3"}).input("y", TensorProto::FLOAT, {"4", "3"});
  builder.output("c", TensorProto::FLOAT, {"2"});
  builder.node("SequenceConstruct", {"x", "y"}, {"s"});
  set_graph(builder.node("SequenceMap", {"s"}, {"sums"}, "the_map"), "body", body);
  auto& concat = builder.node("ConcatFromSequence", {"sums"}, {"c"});
  ModelBuilder::set_int(concat, "axis", 0);
  ModelBuilder::set_int(concat, "new_axis", 1);
  const Model model = load_onnx_bytes(builder.bytes(), "sequence_map");
  Stream stream = device("cpu:0").create_stream();
  std::vector<float> x(6), y(12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);      // sums to 15
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i) * 2;  // sums to 132
  const auto out = model.run(
      {{"x", from_vector(x, {2, 3}, stream)}, {"y", from_vector(y, {4, 3}, stream)}}, stream);
  EXPECT_EQ(out.at("c").shape(), (Shape{2}));
  EXPECT_EQ(out.at("c").to_vector<float>(stream), (std::vector<float>{15, 132}));
}

// ONNX's builder of SequenceMap's function throws its own exception for a tensor where a
// sequence goes: hal's error, naming the node (it was a plain std::invalid_argument).
TEST(Sequences, SequenceMapOverATensorIsRefusedNamingTheNode) {
  Graph body("body");
  body.input("a", TensorProto::FLOAT, {3}).output("b", TensorProto::FLOAT, {3});
  body.node("Neg", {"a"}, {"b"});
  ModelBuilder builder(17);
  builder.input("x", TensorProto::FLOAT, {"3"});
  set_sequence_output(builder, "negated", TensorProto::FLOAT);
  set_graph(builder.node("SequenceMap", {"x"}, {"negated"}, "the_map"), "body", body);
  expect_error([&] { load_onnx_bytes(builder.bytes(), "map_of_tensor"); }, ErrorCode::Unsupported,
               {"node 'the_map' (SequenceMap, opset 17)", "Expected a sequence type for input 0"});
}

// An omitted input has no tensor to put in a sequence: refused naming the node and the input
// (it failed later, naming neither: "use of an empty (default-constructed) Buffer").
TEST(ControlFlowErrors, SequenceConstructOfAnOmittedInputNamesTheNode) {
  ModelBuilder builder(13);
  builder.input("x", TensorProto::FLOAT, {"2"}).output("n", TensorProto::INT64, {});
  builder.node("SequenceConstruct", {"x", ""}, {"s"}, "sc");
  builder.node("SequenceLength", {"s"}, {"n"}, "len");
  const Model model = load_onnx_bytes(builder.bytes(), "omitted");
  Stream stream = device("cpu:0").create_stream();
  expect_error(
      [&] {
        model.run({{"x", from_vector(std::vector<float>{1, 2}, {2}, stream)}}, stream);
      },
      ErrorCode::InvalidArgument, {"node 'sc' (SequenceConstruct", "input 1 is omitted"});
}

}  // namespace
}  // namespace hal::test
