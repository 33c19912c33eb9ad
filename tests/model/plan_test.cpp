// The execution plan: memory planning against a brute-force check, placement pinned and
// automatic (a node a device cannot run goes to cpu:0, saying why), constants folded at load
// and shapes resolved while planning, planned runs checked against a run on cpu:0, and the
// errors for plans that do not fit.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <future>
#include <random>

#include "hal/calibration.hpp"
#include "hal/execution_plan.hpp"
#include "hal/model.hpp"
#include "hal/ops.hpp"
#include "model/memory_plan.hpp"
#include "model/node_cost.hpp"
#include "model/onnx_dtype.hpp"
#include "model/onnx_ops.hpp"
#include "model_builder.hpp"
#include "one_node_model.hpp"
#include "sched/calibration_store.hpp"
#include "test_main.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using model::Lifetime;
using onnx::TensorProto;

PlanOptions options(const std::string& device, std::map<std::string, Shape> input_shapes = {},
                    int64_t symbol_size = 1, std::vector<std::string> candidates = {}) {
  PlanOptions options;
  options.device = device;
  options.devices = std::move(candidates);
  options.input_shapes = std::move(input_shapes);
  options.symbol_size = symbol_size;
  return options;
}

TEST(MemoryPlan, BuffersAliveTogetherNeverShareBytesAndThePeakIsNearTheBound) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Lifetime> lifetimes;
    for (int i = 0; i < 40; ++i) {
      const size_t first = random() % 30;
      lifetimes.push_back(
          {static_cast<int64_t>(1 + random() % 100000), first, first + random() % 6});
    }
    const model::MemoryPlan plan = model::plan_memory(lifetimes, 256);
    auto size = [](const Lifetime& l) { return (l.bytes + 255) / 256 * 256; };
    int64_t most = 0;
    for (size_t step = 0; step < 40; ++step) {
      int64_t alive = 0;
      for (const Lifetime& l : lifetimes)
        if (l.first <= step && step <= l.last) alive += size(l);
      most = std::max(most, alive);
    }
    EXPECT_EQ(plan.lower_bound_bytes, most);
    EXPECT_GE(plan.peak_bytes, plan.lower_bound_bytes);
    for (size_t a = 0; a < lifetimes.size(); ++a) {
      EXPECT_LE(plan.offsets[a] + size(lifetimes[a]), plan.peak_bytes);
      for (size_t b = a + 1; b < lifetimes.size(); ++b) {
        const bool together =
            lifetimes[a].first <= lifetimes[b].last && lifetimes[b].first <= lifetimes[a].last;
        const bool share = plan.offsets[a] < plan.offsets[b] + size(lifetimes[b]) &&
                           plan.offsets[b] < plan.offsets[a] + size(lifetimes[a]);
        EXPECT_FALSE(together && share) << "buffers " << a << " and " << b << ", trial " << trial;
      }
    }
  }
}

TEST(MemoryPlan, AChainReusesTheBuffersItFrees) {
  // x0 -> x1 -> x2 -> x3, each 1 KiB and read only by the next step: two alive at a time.
  const std::vector<Lifetime> chain{{1024, 0, 1}, {1024, 1, 2}, {1024, 2, 3}, {1024, 3, 4}};
  const model::MemoryPlan plan = model::plan_memory(chain, 256);
  EXPECT_EQ(plan.lower_bound_bytes, 2048);
  EXPECT_EQ(plan.peak_bytes, 2048);
}

// y = relu(x W1 + b1) W2 + b2 over a symbolic batch, then erf (which the simulator lacks). The
// biases and the relu fuse into their products at load (fusion.hpp): fc1, fc2 [, erf].
ModelBuilder mlp(bool with_erf) {
  ModelBuilder builder(13);
  builder.input("x", TensorProto::FLOAT, {"batch", "4"});
  builder.output("y", TensorProto::FLOAT, {"batch", "3"});
  std::vector<float> w1(4 * 8), w2(8 * 3);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.05f * static_cast<float>(i % 5) - 0.1f;
  builder.initializer("w1", {4, 8}, w1).initializer("b1", {8}, std::vector<float>(8, 0.1f));
  builder.initializer("w2", {8, 3}, w2).initializer("b2", {3}, {0.5f, -0.5f, 0});
  builder.node("MatMul", {"x", "w1"}, {"h"}, "fc1");
  builder.node("Add", {"h", "b1"}, {"hb"}, "bias1");
  builder.node("Relu", {"hb"}, {"r"}, "relu");
  builder.node("MatMul", {"r", "w2"}, {"o"}, "fc2");
  builder.node("Add", {"o", "b2"}, {with_erf ? "z" : "y"}, "bias2");
  if (with_erf) builder.node("Erf", {"z"}, {"y"}, "erf");
  return builder;
}

Tensor batch_of(int64_t rows, Stream& stream) {
  std::vector<float> values(static_cast<size_t>(rows * 4));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 9) * 0.25f - 1;
  return from_vector<float>(values, {rows, 4}, stream);
}

TEST(Plan, PinnedToCpuEveryNodeRunsThereWithItsMemoryPlanned) {
  const Model model = load_onnx_bytes(mlp(false).bytes(), "mlp");
  const ExecutionPlan plan = plan_model(model, options("cpu:0", {{"x", {16, 4}}}));
  ASSERT_EQ(plan.nodes.size(), 2u);
  EXPECT_EQ(plan.nodes[1].name, "fc2");
  EXPECT_EQ(plan.nodes[1].op, "MatMul");
  for (const PlannedNode& node : plan.nodes) {
    EXPECT_EQ(node.device, "cpu:0") << node.name;
    EXPECT_EQ(node.reason, "pinned") << node.name;
  }
  EXPECT_EQ(plan.nodes[0].name, "fc1");
  EXPECT_EQ(plan.nodes[0].op, "MatMul");
  EXPECT_EQ(plan.bindings.at("batch"), 16);
  EXPECT_TRUE(plan.unknown_shapes.empty());
  EXPECT_TRUE(plan.transfers.empty());
  // x [16,4], r [16,8], y [16,3] in f32, the weights: all known, so the bound is real (r and y
  // are alive together while fc2 runs).
  EXPECT_GE(plan.lower_bound_bytes, 16 * 8 * 4 + 16 * 3 * 4);
  EXPECT_GE(plan.peak_bytes, plan.lower_bound_bytes);
  EXPECT_LE(static_cast<double>(plan.peak_bytes),
            1.2 * static_cast<double>(plan.lower_bound_bytes));
}

TEST(Plan, SymbolsTakeTheSizeAskedForWhenNoInputGivesThem) {
  const Model model = load_onnx_bytes(mlp(false).bytes(), "mlp");
  const ExecutionPlan one = plan_model(model, options("cpu:0"));
  const ExecutionPlan many = plan_model(model, options("cpu:0", {}, 64));
  EXPECT_EQ(one.bindings.at("batch"), 1);
  EXPECT_EQ(many.bindings.at("batch"), 64);
  EXPECT_GT(many.lower_bound_bytes, one.lower_bound_bytes);
}

// An unused initializer also declared an input (IR 4) with a symbolic dimension: folded away,
// it came back as an input of the model kept for shape inference, whose symbol no run input
// binds, and the plan failed with "map::at".
TEST(Plan, AnUnusedInitializerDeclaredAnInputWithASymbolPlans) {
  ModelBuilder builder(9);
  builder.input("x", TensorProto::FLOAT, {"2", "3"})
      .input("w", TensorProto::FLOAT, {"N", "3"})
      .output("z", TensorProto::FLOAT, {"2", "3"})
      .initializer("w", {2, 3}, std::vector<float>(6, 1.0f));
  builder.node("Neg", {"x"}, {"z"}, "neg");
  builder.proto().set_ir_version(4);
  const Model model = load_onnx_bytes(builder.bytes(), "unused");
  const ExecutionPlan plan = plan_model(model, options("cpu:0"));
  ASSERT_EQ(plan.nodes.size(), 1u);
  EXPECT_EQ(plan.nodes[0].op, "Neg");
}

TEST(Plan, ANodeTheDeviceCannotRunGoesToCpuWithTheReason) {
  const auto sims = backend_devices("sim");
  if (sims.empty()) GTEST_SKIP() << backend_reason("sim");
  const Device sim = sims[0];
  if (supports_op(sim, "erf", DType::f32)) GTEST_SKIP() << sim.id() << " runs erf";
  const Model model = load_onnx_bytes(mlp(true).bytes(), "mlp");
  const ExecutionPlan plan = plan_model(model, options(sim.id(), {{"x", {5, 4}}}));
  ASSERT_EQ(plan.nodes.size(), 3u);
  EXPECT_EQ(plan.nodes[0].device, sim.id());
  const PlannedNode& erf = plan.nodes.back();
  EXPECT_EQ(erf.device, "cpu:0");
  EXPECT_NE(erf.reason.find(sim.id() + " has no f32 erf"), std::string::npos) << erf.reason;
  // z moves from the simulator to the host for the erf.
  ASSERT_EQ(plan.transfers.size(), 2u);  // x in, z out
  EXPECT_EQ(plan.transfers[1].value, "z");
  EXPECT_EQ(plan.transfers[1].from, sim.id());
  EXPECT_EQ(plan.transfers[1].to, "cpu:0");
  EXPECT_EQ(plan.transfers[1].bytes, 5 * 3 * 4);

  // The planned run moves the values and matches a run on cpu:0.
  Stream cpu = device("cpu:0").create_stream();
  const Tensor x = batch_of(5, cpu);
  const auto expected = model.run({{"x", x}}, cpu).at("y").to_vector<float>(cpu);
  const PlannedRun run = run_planned(model, plan, {{"x", x}});
  EXPECT_TRUE(run.fallbacks.empty());
  const Tensor& y = run.outputs.at("y");
  EXPECT_EQ(y.device().id(), "cpu:0");
  const auto actual = y.to_vector<float>(cpu);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], 1e-5) << i;
}

TEST(Plan, AutomaticPlacementRunsAndMatchesCpu) {
  const Model model = load_onnx_bytes(mlp(true).bytes(), "mlp");
  const ExecutionPlan plan = plan_model(model, options("auto", {{"x", {3, 4}}}));
  ASSERT_EQ(plan.nodes.size(), 3u);
  for (const PlannedNode& node : plan.nodes) EXPECT_FALSE(node.reason.empty()) << node.name;
  Stream cpu = device("cpu:0").create_stream();
  const Tensor x = batch_of(3, cpu);
  const auto expected = model.run({{"x", x}}, cpu).at("y").to_vector<float>(cpu);
  const PlannedRun run = run_planned(model, plan, {{"x", x}});
  const Tensor& y = run.outputs.at("y");
  Stream out = y.device().create_stream();
  const auto actual = y.to_vector<float>(out);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], 1e-4) << i;

  // Candidates named: only those are considered.
  const ExecutionPlan only_cpu = plan_model(model, options("auto", {}, 1, {"cpu:0"}));
  for (const PlannedNode& node : only_cpu.nodes) {
    EXPECT_EQ(node.device, "cpu:0") << node.name;
    EXPECT_EQ(node.reason, "the only device") << node.name;
  }
}

TEST(Plan, ConstantsFoldAtLoadAndShapeComputationsWhilePlanning) {
  // y = reshape(x, [shape(x)[0], -1]) + transpose(w): the transpose of an initializer folds at
  // load; the shape arithmetic (Shape, Gather, Unsqueeze, Concat) folds once x's shape is known.
  ModelBuilder builder(13);
  builder.input("x", TensorProto::FLOAT, {"n", "2", "3"});
  builder.output("y", TensorProto::FLOAT, {"n", "6"});
  builder.initializer("w", {6, 1}, {1, 2, 3, 4, 5, 6});
  auto& zero = builder.raw_initializer("zero");
  zero.set_data_type(TensorProto::INT64);
  zero.add_int64_data(0);
  auto& minus_one = builder.raw_initializer("minus_one");
  minus_one.set_data_type(TensorProto::INT64);
  minus_one.add_dims(1);
  minus_one.add_int64_data(-1);
  builder.node("Transpose", {"w"}, {"wt"}, "transpose_w");
  builder.node("Shape", {"x"}, {"shape"}, "shape");
  builder.node("Gather", {"shape", "zero"}, {"rows"}, "rows");
  auto& axes = builder.raw_initializer("axes");
  axes.set_data_type(TensorProto::INT64);
  axes.add_dims(1);
  axes.add_int64_data(0);
  builder.node("Unsqueeze", {"rows", "axes"}, {"rows1"}, "unsqueeze");
  ModelBuilder::set_int(builder.node("Concat", {"rows1", "minus_one"}, {"target"}, "concat"),
                        "axis", 0);
  builder.node("Reshape", {"x", "target"}, {"flat"}, "reshape");
  builder.node("Add", {"flat", "wt"}, {"y"}, "add");
  const Model model = load_onnx_bytes(builder.bytes(), "folding");
  EXPECT_EQ(model.node_count(), 6u);  // the transpose folded
  const ExecutionPlan plan = plan_model(model, options("cpu:0", {{"x", {4, 2, 3}}}));
  EXPECT_TRUE(plan.unknown_shapes.empty()) << plan.unknown_shapes.front();
  Stream cpu = device("cpu:0").create_stream();
  std::vector<float> values(24);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  const auto y = model.run({{"x", from_vector<float>(values, {4, 2, 3}, cpu)}}, cpu).at("y");
  ASSERT_EQ(y.shape(), (Shape{4, 6}));
  const auto got = y.to_vector<float>(cpu);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i], values[i] + static_cast<float>(i % 6 + 1)) << i;
}

TEST(Plan, WeightsStayOnTheDeviceBetweenRunsAndGoWithTheModel) {
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  const Tensor x = batch_of(2, stream);
  stream.synchronize();
  const uint64_t before = cpu.allocator().stats().allocated_bytes.current;
  {
    const Model model = load_onnx_bytes(mlp(false).bytes(), "mlp");
    const auto first = model.run({{"x", x}}, stream).at("y").to_vector<float>(stream);
    const uint64_t after_first = cpu.allocator().stats().allocated_bytes.current;
    // w1, b1, w2, b2 (f32): resident now, each in at least its own bytes.
    EXPECT_GE(after_first - before, (4 * 8 + 8 + 8 * 3 + 3) * sizeof(float));
    const uint64_t allocations = cpu.allocator().stats().num_allocs;
    const auto second = model.run({{"x", x}}, stream).at("y").to_vector<float>(stream);
    EXPECT_EQ(second, first);
    EXPECT_EQ(cpu.allocator().stats().allocated_bytes.current, after_first);
    // The second run allocates its activations only: fc1's product with its bias (oneDNN's
    // matmul) and its relu (an op of its own: oneDNN's would lose NaN), fc2's product with its
    // bias; no weight.
    EXPECT_EQ(cpu.allocator().stats().num_allocs - allocations, 3u);
  }
  EXPECT_EQ(cpu.allocator().stats().allocated_bytes.current, before);
}

// An optional input (an initializer a run may replace, IR >= 4) is planned for the shape given,
// as a required one; before, plan_model refused its name ("the model has no input 'w'").
TEST(Plan, AnOptionalInputsShapeMayBeGiven) {
  ModelBuilder builder;
  builder.input("x", TensorProto::FLOAT, {"n"}).input("w", TensorProto::FLOAT, {"n"});
  builder.output("y", TensorProto::FLOAT, {"n"});
  builder.initializer("w", {2}, {1, 2});
  builder.node("Sub", {"x", "w"}, {"y"}, "minus");
  const Model model = load_onnx_bytes(builder.bytes(), "optional");
  ASSERT_EQ(model.optional_inputs().size(), 1u);
  const ExecutionPlan plan = plan_model(model, options("cpu:0", {{"x", {3}}, {"w", {3}}}));
  EXPECT_EQ(plan.bindings.at("n"), 3);
  Stream stream = device("cpu:0").create_stream();
  const PlannedRun run = run_planned(model, plan,
                                     {{"x", from_vector<float>({10, 20, 30}, {3}, stream)},
                                      {"w", from_vector<float>({1, 2, 3}, {3}, stream)}});
  EXPECT_EQ(run.outputs.at("y").to_vector<float>(stream), (std::vector<float>{9, 18, 27}));
  expect_error(
      [&] {
        plan_model(model, options("cpu:0", {{"w", {2, 2}}}));
      },
      ErrorCode::InvalidArgument, {"input 'w'", "[2, 2]", "declares [n]"});
}

TEST(Plan, PlansThatDoNotFitAreRefusedNamingWhy) {
  const Model model = load_onnx_bytes(mlp(false).bytes(), "mlp");
  expect_error(
      [&] {
        plan_model(model, options("auto", {{"nope", {1, 4}}}));
      },
      ErrorCode::InvalidArgument, {"mlp", "no input 'nope'"});
  expect_error(
      [&] {
        plan_model(model, options("auto", {{"x", {2, 5}}}));
      },
      ErrorCode::InvalidArgument, {"input 'x'", "[2, 5]", "[batch, 4]"});
  expect_error([&] { plan_model(model, options("nosuch:0")); }, ErrorCode::NotFound, {"nosuch:0"});
  expect_error([&] { plan_model(model, options("auto", {}, 0)); }, ErrorCode::InvalidArgument,
               {"symbol_size 0"});
  const Model other = load_onnx_bytes(mlp(true).bytes(), "other");
  const ExecutionPlan plan = plan_model(other, options("cpu:0"));
  Stream cpu = device("cpu:0").create_stream();
  expect_error(
      [&] {
        run_planned(model, plan, {{"x", batch_of(1, cpu)}});
      },
      ErrorCode::InvalidArgument, {"the plan (of other, 3 nodes)", "mlp"});
  expect_error([&] { run_planned(other, plan, {}); }, ErrorCode::InvalidArgument,
               {"input 'x'", "missing"});
}

// A device that cannot hold a node's values is no candidate for it, and says so (before, the
// plan put it there and the run failed with OutOfMemory); a value of more bytes than int64
// counts is refused (a [2^61] f64 value was planned as 0 bytes).
TEST(Plan, ANodeTooLargeForADeviceIsNotPlacedThere) {
  const Model model = load_onnx_bytes(mlp(false).bytes(), "mlp");
  const int64_t rows = int64_t{1} << 36;  // h: 2 TiB, more than any device here
  const ExecutionPlan plan = plan_model(model, options("auto", {{"x", {rows, 4}}}));
  const PlannedNode& fc1 = plan.nodes.at(0);
  EXPECT_EQ(fc1.device, "cpu:0");
  EXPECT_TRUE(fc1.reason.find("of memory, the node's values take") != std::string::npos ||
              fc1.reason.find("allocates at most") != std::string::npos)
      << fc1.reason;
  expect_error(
      [&] {
        plan_model(model, options("auto", {{"x", {int64_t{1} << 57, 4}}}));
      },
      ErrorCode::InvalidArgument, {"mlp: value '", "more bytes than a plan can hold"});
}

// Einsum is priced by its contraction: "ij,jk->ik" as the MatMul it is (before, one flop per
// output element: 2 000 times too cheap at 1024^2).
TEST(Plan, AnEinsumCostsWhatItsContractionDoes) {
  const auto priced = [](bool einsum) {
    ModelBuilder builder(13);
    builder.input("a", TensorProto::FLOAT, {"1024", "1024"});
    builder.input("b", TensorProto::FLOAT, {"1024", "1024"});
    builder.output("c", TensorProto::FLOAT, {"1024", "1024"});
    onnx::NodeProto& node = builder.node(einsum ? "Einsum" : "MatMul", {"a", "b"}, {"c"}, "n");
    if (einsum) ModelBuilder::set_string(node, "equation", "ij,jk->ik");
    const Model model = load_onnx_bytes(builder.bytes(), "contraction");
    return plan_model(model, options("cpu:0")).nodes.at(0).predicted_us;
  };
  const double matmul = priced(false), einsum = priced(true);
  ASSERT_GT(matmul, 0);
  EXPECT_NEAR(einsum / matmul, 1.0, 0.01) << einsum << " us against " << matmul;
}

// Hardmax, TopK, MatMulInteger, ConvInteger, QuantizeLinear, Resize, Trilu and Mod were missing
// from the planner's kernel table, so they were priced as data moves, which every device runs:
// pinned to the simulator, which lacks eq, cast, round, ge and lt, each stayed there (and
// failed at run time). Now each goes to cpu:0 naming the kernel the simulator lacks, in the
// dtype the op computes in (MatMulInteger casts its u8 inputs; Trilu compares i64 positions),
// and cpu:0, which has them all, keeps it.
TEST(Plan, ComputingOpsGoOnlyWhereTheirKernelsRun) {
  const auto sims = backend_devices("sim");
  if (sims.empty()) GTEST_SKIP() << backend_reason("sim");
  const std::string sim = sims[0].id();
  constexpr int32_t kF32 = TensorProto::FLOAT, kF16 = TensorProto::FLOAT16,
                    kU8 = TensorProto::UINT8, kI32 = TensorProto::INT32, kI64 = TensorProto::INT64;
  struct Case {
    std::string op;
    int64_t opset;
    std::vector<Value> inputs, outputs;
    std::function<void(onnx::NodeProto&)> attributes;
    std::string missing;  // what the simulator lacks; empty: it runs the op
  };
  const auto with_mode = [](const char* name) {
    return [name](onnx::NodeProto& node) { ModelBuilder::set_string(node, "mode", name); };
  };
  const auto with_fmod = [](int64_t value) {
    return [value](onnx::NodeProto& node) { ModelBuilder::set_int(node, "fmod", value); };
  };
  const std::vector<Case> cases{
      {"Hardmax", 13, {{"x", kF32, 2}}, {{"y", kF32, 2}}, {}, "i64 eq"},
      {"TopK",
       11,
       {{"x", kF32, 2}, {"k", kI64, 1}},
       {{"values", kF32, 2}, {"indices", kI64, 2}},
       {},
       "f32 eq"},
      {"MatMulInteger", 10, {{"a", kU8, 2}, {"b", kU8, 2}}, {{"y", kI32, 2}}, {}, "u8 cast"},
      {"ConvInteger", 10, {{"x", kU8, 4}, {"w", kU8, 4}}, {{"y", kI32, 4}}, {}, "u8 cast"},
      {"QuantizeLinear",
       13,
       {{"x", kF32, 1}, {"scale", kF32, 0}, {"zero", kU8, 0}},
       {{"y", kU8, 1}},
       {},
       "f32 round"},
      {"Resize",
       10,
       {{"x", kF16, 4}, {"scales", kF32, 1}},
       {{"y", kF16, 4}},
       with_mode("linear"),
       "f16 mul"},
      {"Resize",
       10,
       {{"x", kF16, 4}, {"scales", kF32, 1}},
       {{"y", kF16, 4}},
       with_mode("nearest"),
       ""},
      {"Trilu", 14, {{"x", kF32, 2}}, {{"y", kF32, 2}}, {}, "i64 ge"},
      {"Mod", 13, {{"a", kI32, 1}, {"b", kI32, 1}}, {{"y", kI32, 1}}, with_fmod(0), "i32 lt"},
      {"Mod", 13, {{"a", kI32, 1}, {"b", kI32, 1}}, {{"y", kI32, 1}}, with_fmod(1), ""},
  };
  for (const Case& c : cases) {
    ModelBuilder builder(c.opset);
    const Model model = one_node(builder, c.op, c.inputs, c.outputs, c.attributes);
    const PlannedNode on_sim = plan_model(model, options(sim)).nodes.at(0);
    const PlannedNode on_cpu = plan_model(model, options("cpu:0")).nodes.at(0);
    EXPECT_EQ(on_cpu.device, "cpu:0") << c.op;
    EXPECT_EQ(on_cpu.reason, "pinned") << c.op;
    if (c.missing.empty()) {
      EXPECT_EQ(on_sim.device, sim) << c.op << ": " << on_sim.reason;
      continue;
    }
    EXPECT_EQ(on_sim.device, "cpu:0") << c.op << ": " << on_sim.reason;
    EXPECT_NE(on_sim.reason.find(sim + " has no " + c.missing), std::string::npos)
        << c.op << ": " << on_sim.reason;
  }
}

// An op the planner's table does not know may need any kernel: it fails closed, onto cpu:0,
// which runs every hal op (before, it was priced as a data move and placed anywhere). Gradient
// is one: its kernels are those of the nodes it differentiates.
TEST(Plan, AnOpThePlannerDoesNotKnowRunsOnlyOnCpu) {
  model::Node unknown;
  unknown.op_type = "NoSuchOp";
  EXPECT_FALSE(model::node_kernels(unknown));
  model::Node reshape;
  reshape.op_type = "Reshape";
  ASSERT_TRUE(model::node_kernels(reshape));
  EXPECT_TRUE(model::node_kernels(reshape)->empty()) << "a data move needs no kernel";

  const auto sims = backend_devices("sim");
  if (sims.empty()) GTEST_SKIP() << backend_reason("sim");
  const std::string sim = sims[0].id();
  constexpr const char* kTraining = "ai.onnx.preview.training";
  ModelBuilder builder(12);
  auto* import = builder.proto().add_opset_import();
  import->set_domain(kTraining);
  import->set_version(1);
  builder.input("a", TensorProto::FLOAT, {}).input("b", TensorProto::FLOAT, {});
  builder.output("d", TensorProto::FLOAT, {}).output("dd_da", TensorProto::FLOAT, {});
  builder.output("dd_db", TensorProto::FLOAT, {});
  builder.node("Add", {"a", "b"}, {"c"}, "add");
  builder.node("Mul", {"c", "a"}, {"d"}, "mul");
  auto& gradient = builder.node("Gradient", {"a", "b"}, {"dd_da", "dd_db"}, "grad");
  gradient.set_domain(kTraining);
  ModelBuilder::set_strings(gradient, "xs", {"a", "b"});
  ModelBuilder::set_string(gradient, "y", "d");
  const Model model = load_onnx_bytes(builder.bytes(), "gradient");

  const ExecutionPlan pinned = plan_model(model, options(sim));
  ASSERT_EQ(pinned.nodes.size(), 3u);
  EXPECT_EQ(pinned.nodes[1].device, sim) << pinned.nodes[1].reason;
  const PlannedNode& grad = pinned.nodes[2];
  EXPECT_EQ(grad.op, "Gradient");
  EXPECT_EQ(grad.device, "cpu:0") << grad.reason;
  EXPECT_NE(grad.reason.find(sim + " may lack what Gradient needs"), std::string::npos)
      << grad.reason;
  const ExecutionPlan both = plan_model(model, options("auto", {}, 1, {sim, "cpu:0"}));
  EXPECT_EQ(both.nodes.at(2).device, "cpu:0") << both.nodes[2].reason;
  EXPECT_EQ(plan_model(model, options("cpu:0")).nodes.at(2).reason, "pinned");
}

// Every op hal runs is in the planner's kernel table or known to move data only, but for the
// value ops and host ops, placed without it, and Gradient: an op added without an entry would
// fail closed onto cpu:0 and is caught here instead.
TEST(Plan, ThePlannerKnowsTheKernelsOfEveryOpHalRuns) {
  for (const std::string& name : model::onnx_op_types()) {
    const size_t dot = name.rfind('.');
    model::Node node;
    node.domain = dot == std::string::npos ? "" : name.substr(0, dot);
    node.op_type = dot == std::string::npos ? name : name.substr(dot + 1);
    node.op = model::find_onnx_op(node.domain, node.op_type, 1000);
    ASSERT_NE(node.op, nullptr) << name;
    if (node.op->run_values || node.op->host || node.op_type == "Gradient") continue;
    EXPECT_TRUE(model::node_kernels(node)) << name << " is not in the planner's kernel table";
  }
}

// The integer products are priced as the products they are (before, one flop per output
// element: 2 048 times too cheap at 1024^3).
TEST(Plan, AnIntegerMatMulCostsWhatAMatMulDoes) {
  model::Node node;
  node.op_type = "MatMulInteger";
  node.inputs = {"a", "b"};
  node.outputs = {"y"};
  model::ValueTypes types;
  types["a"] = {DType::u8, {1024, 1024}, true};
  types["b"] = {DType::u8, {1024, 1024}, true};
  types["y"] = {DType::i32, {1024, 1024}, true};
  EXPECT_DOUBLE_EQ(model::node_workload(node, types).flops, 2.0 * 1024 * 1024 * 1024);
}

// A device's calibration as the cache would give it: `gflops` for f32 products, `copy_gbps`
// each way (0: not measured).
void calibrate_as(const Device& device, double gflops, double gbps, double copy_gbps,
                  double launch_us) {
  Calibration c;
  c.device_id = device.id();
  c.uuid = device.info().uuid;
  c.driver_version = device.info().driver_version;
  c.device_bandwidth_gbps = gbps;
  c.host_to_device_gbps = copy_gbps;
  c.device_to_host_gbps = copy_gbps;
  c.launch_latency_us = launch_us;
  c.matmul = {{DType::f32, 128, gflops}};
  c.measured_at = "2026-01-01T00:00:00Z";
  hal::detail::store_calibration(device, c);
}

// A price with gaps is a lower bound: a copy to a device without copy figures cost nothing, so
// a device calibrated but for its copies won over one with every figure, however slow. A
// complete price now ranks first (as `hal select` ranks), and a copy of unknown time says so.
TEST(Plan, ADeviceLackingFiguresRanksAfterOneWithEveryFigure) {
  const auto sims = backend_devices("sim");
  if (sims.empty()) GTEST_SKIP() << backend_reason("sim");
  const std::string sim = sims[0].id();
  ScopedCacheDir cache("plan");
  calibrate_as(device("cpu:0"), 1, 1, 1, 1000);  // slow, every figure
  calibrate_as(sims[0], 1e6, 1e4, 0, 0.1);       // fast, its copies not measured
  ModelBuilder builder(13);
  builder.input("x", TensorProto::FLOAT, {"256"}).output("y", TensorProto::FLOAT, {"256"});
  builder.node("Relu", {"x"}, {"y"}, "relu");
  const Model model = load_onnx_bytes(builder.bytes(), "gaps");
  const PlanOptions both = options("auto", {}, 1, {sim, "cpu:0"});
  const PlannedNode relu = plan_model(model, both).nodes.at(0);
  EXPECT_EQ(relu.device, "cpu:0") << relu.reason;
  EXPECT_NE(relu.reason.find(sim + " at least "), std::string::npos) << relu.reason;
  EXPECT_NE(relu.reason.find("(no figure for " + sim + " host_to_device_bandwidth)"),
            std::string::npos)
      << relu.reason;
  const ExecutionPlan pinned = plan_model(model, options(sim));
  ASSERT_EQ(pinned.transfers.size(), 1u);
  EXPECT_EQ(pinned.transfers[0].value, "x");
  EXPECT_TRUE(std::isnan(pinned.transfers[0].predicted_us)) << pinned.transfers[0].predicted_us;

  calibrate_as(sims[0], 1e6, 1e4, 1e3, 0.1);  // its copies measured: now it is cheaper
  EXPECT_EQ(plan_model(model, both).nodes.at(0).device, sim);
}

// Each node's values were checked against the device's memory alone, never with the values
// already alive there: five 4 MiB results of one 4 MiB input were all planned on a device that
// may hold 16 MiB. A node that would take the device past its memory (or its allocator's
// limit) now goes elsewhere, saying so.
TEST(Plan, TheValuesAliveOnADeviceCountAgainstItsMemory) {
  const auto sims = backend_devices("sim");
  if (sims.empty()) GTEST_SKIP() << backend_reason("sim");
  const std::string sim = sims[0].id();
  Allocator& allocator = sims[0].allocator();
  struct Restore {
    Allocator& allocator;
    uint64_t limit;
    ~Restore() { allocator.set_limit(limit); }
  } restore{allocator, allocator.config().limit_bytes};
  allocator.set_limit(16 << 20);
  ModelBuilder builder(13);
  builder.input("x", TensorProto::FLOAT, {"1048576"});  // 4 MiB, as each result
  for (int k = 0; k < 5; ++k) {
    const std::string y = "y" + std::to_string(k);
    builder.output(y, TensorProto::FLOAT, {"1048576"});
    builder.node("Relu", {"x"}, {y}, "relu" + std::to_string(k));
  }
  const Model model = load_onnx_bytes(builder.bytes(), "many");
  const ExecutionPlan plan = plan_model(model, options(sim));
  ASSERT_EQ(plan.nodes.size(), 5u);
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(plan.nodes[k].device, sim) << plan.nodes[k].reason;
  for (size_t k = 3; k < 5; ++k) {
    EXPECT_EQ(plan.nodes[k].device, "cpu:0") << k;
    EXPECT_EQ(plan.nodes[k].reason,
              sim +
                  " is limited to 16.0 MiB by its allocator, the node's values with the 16.0 MiB "
                  "alive there take 20.0 MiB; cpu:0 runs it, the last resort");
  }
}

// The memory plan freed a value on the device that made it at its last reader there, though a
// reader on another device still had it copied from there: a made on sim, read by Erf on cpu:0
// at the last step, is alive on sim while b and c are made.
TEST(Plan, AValueStaysWhereItWasMadeUntilItIsCopiedAway) {
  const auto sims = backend_devices("sim");
  if (sims.empty()) GTEST_SKIP() << backend_reason("sim");
  const std::string sim = sims[0].id();
  if (supports_op(sims[0], "erf", DType::f32)) GTEST_SKIP() << sim << " runs erf";
  ModelBuilder builder(13);
  builder.input("x", TensorProto::FLOAT, {"1024"});
  builder.output("c", TensorProto::FLOAT, {"1024"}).output("d", TensorProto::FLOAT, {"1024"});
  builder.node("Softmax", {"x"}, {"a"}, "a");
  builder.node("Softmax", {"x"}, {"b"}, "b");
  builder.node("Softmax", {"b"}, {"c"}, "c");
  builder.node("Erf", {"a"}, {"d"}, "d");
  const Model model = load_onnx_bytes(builder.bytes(), "lifetimes");
  const ExecutionPlan plan = plan_model(model, options(sim));
  ASSERT_EQ(plan.nodes.size(), 4u);
  EXPECT_EQ(plan.nodes[3].device, "cpu:0");
  bool found = false;
  for (const PlannedMemory& memory : plan.memory) {
    if (memory.device != sim) continue;
    found = true;
    EXPECT_EQ(memory.lower_bound_bytes, 3 * 4096) << "a, b and c at step 2";
    EXPECT_GE(memory.peak_bytes, memory.lower_bound_bytes);
  }
  EXPECT_TRUE(found);
}

// run_planned reads its inputs on streams of its own: an input still being made on the
// caller's stream was read before it was (zeros on OpenCL and Vulkan, some runs). It now waits
// for the work that makes its inputs.
TEST(Plan, APlannedRunWaitsForTheWorkThatMakesItsInputs) {
  ModelBuilder builder(13);
  builder.input("x", TensorProto::FLOAT, {"4"}).output("y", TensorProto::FLOAT, {"4"});
  builder.node("Relu", {"x"}, {"y"}, "relu");
  const Model model = load_onnx_bytes(builder.bytes(), "waits");
  const ExecutionPlan plan = plan_model(model, options("cpu:0"));
  Stream caller = device("cpu:0").create_stream();
  const Tensor x = full({4}, -1.0, DType::f32, caller);
  caller.synchronize();
  Gate gate;
  caller.host_callback(gate.hold());
  const std::vector<float> twos(4, 2.0f);
  caller.copy_from_host(x.storage(), twos.data(), twos.size() * sizeof(float));  // held
  auto run = std::async(std::launch::async, [&] { return run_planned(model, plan, {{"x", x}}); });
  EXPECT_EQ(run.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout)
      << "the run did not wait for x";
  gate.open();
  const PlannedRun result = run.get();
  Stream out = device("cpu:0").create_stream();
  EXPECT_EQ(result.outputs.at("y").to_vector<float>(out), twos);
}

// Values an If reads from outside (in its branches) were moved to its device but neither
// priced nor listed: a made on cpu:0 (the simulator lacks erf) is copied to the If on sim.
TEST(Plan, ValuesASubgraphReadsFromOutsideAreTransfers) {
  const auto sims = backend_devices("sim");
  if (sims.empty()) GTEST_SKIP() << backend_reason("sim");
  const std::string sim = sims[0].id();
  if (supports_op(sims[0], "erf", DType::f32)) GTEST_SKIP() << sim << " runs erf";
  ModelBuilder builder(13);
  builder.input("x", TensorProto::FLOAT, {"4"}).input("cond", TensorProto::BOOL, {});
  builder.output("y", TensorProto::FLOAT, {"4"});
  builder.node("Erf", {"x"}, {"a"}, "erf");
  auto& branch = builder.node("If", {"cond"}, {"y"}, "if");
  for (const char* name : {"then_branch", "else_branch"}) {
    auto* attribute = branch.add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto& graph = *attribute->mutable_g();
    graph.set_name(name);
    const std::string out = std::string(name) + "_y";
    onnx::NodeProto& node = *graph.add_node();
    node.set_op_type(std::string(name) == "then_branch" ? "Neg" : "Abs");
    node.add_input("a");  // the outer value
    node.add_output(out);
    onnx::ValueInfoProto& output = *graph.add_output();
    output.set_name(out);
    auto* type = output.mutable_type()->mutable_tensor_type();
    type->set_elem_type(TensorProto::FLOAT);
    type->mutable_shape()->add_dim()->set_dim_value(4);
  }
  const Model model = load_onnx_bytes(builder.bytes(), "captured");
  const ExecutionPlan plan = plan_model(model, options(sim));
  ASSERT_EQ(plan.nodes.size(), 2u);
  EXPECT_EQ(plan.nodes[0].device, "cpu:0");
  EXPECT_EQ(plan.nodes[1].device, sim);
  bool moved = false;
  for (const PlannedTransfer& transfer : plan.transfers)
    if (transfer.value == "a") {
      moved = true;
      EXPECT_EQ(transfer.from, "cpu:0");
      EXPECT_EQ(transfer.to, sim);
      EXPECT_EQ(transfer.bytes, 16);
    }
  EXPECT_TRUE(moved) << "a is not among the transfers";

  Stream cpu = device("cpu:0").create_stream();
  const Tensor x = from_vector<float>({-1, 0, 0.5f, 2}, {4}, cpu);
  const uint8_t yes = 1;
  const Tensor cond = from_host(&yes, {}, DType::boolean, cpu);
  const auto expected = model.run({{"x", x}, {"cond", cond}}, cpu).at("y").to_vector<float>(cpu);
  const PlannedRun run = run_planned(model, plan, {{"x", x}, {"cond", cond}});
  Stream out = run.outputs.at("y").device().create_stream();
  EXPECT_EQ(run.outputs.at("y").to_vector<float>(out), expected);
}

// The kernel table missed kernels, so that a node placed on a device lacking one fell back to
// cpu:0 when run: Cast's target dtype (f32 to bf16 on Vulkan), ReduceLogSumExp's max, eq and
// where (the simulator has no eq), TopK's i32 max and gt (Vulkan's max takes floats only). On
// every device here, each case is planned there or on cpu:0 and runs where it is planned.
TEST(Plan, ANodePlannedOnADeviceRunsThere) {
  const auto needs = [](const model::Node& node, model::NodeKernel kernel,
                        const model::ValueTypes* types = nullptr) {
    const auto kernels = model::node_kernels(node, types);
    return kernels && std::find(kernels->begin(), kernels->end(), kernel) != kernels->end();
  };
  model::Node cast;
  cast.op_type = "Cast";
  cast.attributes["to"] = int64_t{TensorProto::BFLOAT16};
  EXPECT_TRUE(needs(cast, {"cast", DType::bf16}));
  model::Node cast_like;
  cast_like.op_type = "CastLike";
  cast_like.inputs = {"x", "like"};
  const model::ValueTypes types{{"like", {DType::f16, {1}, true}}};
  EXPECT_TRUE(needs(cast_like, {"cast", DType::f16}, &types));
  model::Node top_k;
  top_k.op_type = "TopK";
  EXPECT_TRUE(needs(top_k, {"max", DType::i32}));
  model::Node log_sum_exp;
  log_sum_exp.op_type = "ReduceLogSumExp";
  EXPECT_TRUE(needs(log_sum_exp, {"eq"}));

  constexpr int32_t kF32 = TensorProto::FLOAT, kI64 = TensorProto::INT64;
  struct Case {
    std::string op;
    int64_t opset;
    std::vector<Value> inputs, outputs;
    std::function<void(onnx::NodeProto&)> attributes;
  };
  std::vector<Case> cases;
  for (const int32_t to : {TensorProto::BFLOAT16, TensorProto::FLOAT16, TensorProto::DOUBLE,
                           TensorProto::INT32, TensorProto::UINT8, TensorProto::BOOL})
    cases.push_back({"Cast", 13, {{"x", kF32, 2}}, {{"y", to, 2}}, [to](onnx::NodeProto& node) {
                       ModelBuilder::set_int(node, "to", to);
                     }});
  cases.push_back({"ReduceLogSumExp", 13, {{"x", kF32, 2}}, {{"y", kF32, 2}}, {}});
  cases.push_back({"TopK",
                   11,
                   {{"x", kF32, 2}, {"k", kI64, 1}},
                   {{"values", kF32, 2}, {"indices", kI64, 2}},
                   [](onnx::NodeProto& node) { ModelBuilder::set_int(node, "largest", 0); }});
  Stream cpu = device("cpu:0").create_stream();
  const Tensor x = from_vector<float>({3, -1, 2, 0.5f, 7, -4}, {2, 3}, cpu);
  const Tensor k = from_vector<int64_t>({2}, {1}, cpu);
  cpu.synchronize();
  for (const Device& here : devices()) {
    for (const Case& c : cases) {
      ModelBuilder builder(c.opset);
      const Model model = one_node(builder, c.op, c.inputs, c.outputs, c.attributes);
      const ExecutionPlan plan = plan_model(model, options(here.id(), {{"x", {2, 3}}}));
      const PlannedNode& node = plan.nodes.at(0);
      const std::string what =
          c.op + " to " + model::onnx_type_name(c.outputs[0].elem) + " on " + here.id();
      EXPECT_TRUE(node.device == here.id() || node.device == "cpu:0") << what;
      std::map<std::string, Tensor> inputs{{"x", x}};
      if (c.op == "TopK") inputs["k"] = k;
      const PlannedRun run = run_planned(model, plan, inputs);
      for (const PlannedNode& fallback : run.fallbacks)
        ADD_FAILURE() << what << ": planned on " << node.device << " (" << node.reason
                      << "), ran on cpu:0: " << fallback.reason;
    }
  }
}

}  // namespace
}  // namespace hal::test

int main(int argc, char** argv) {
  // A simulated device besides the host's, so that placement has a choice; set before hal
  // loads its plugins.
  setenv("HAL_SIM_CONFIG", "devices=1", /*overwrite=*/0);
  ::testing::InitGoogleTest(&argc, argv);
  return hal::test::run_all_tests();
}
