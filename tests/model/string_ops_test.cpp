// String tensors in models: StringNormalizer, Cast and CastLike to and from STRING (against the
// text NumPy writes, which ONNX's test data holds), TfIdfVectorizer against counts worked out by
// hand, string initializers and Constants, planning on the host, and the errors for strings
// where numbers go and numbers where strings go.
#include <locale.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "hal/execution_plan.hpp"
#include "hal/model.hpp"
#include "model_builder.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using onnx::TensorProto;

Model load(const ModelBuilder& builder) { return load_onnx_bytes(builder.bytes(), "strings.onnx"); }

StringTensor strings(Shape shape, std::vector<std::string> data) {
  return {std::move(shape), std::move(data)};
}

const StringTensor& as_strings(const std::map<std::string, RunValue>& out,
                               const std::string& name) {
  return std::get<StringTensor>(out.at(name));
}

// x (strings, rank 1 or 2) -> StringNormalizer -> y.
struct Normalizer {
  std::string action;           // empty: the default, NONE
  int64_t case_sensitive = -1;  // -1: the default, 0
  std::vector<std::string> stopwords;
  size_t rank = 1;
};

Model normalizer_model(const Normalizer& n) {
  ModelBuilder builder(10);
  const std::vector<std::string> in =
      n.rank == 1 ? std::vector<std::string>{"C"} : std::vector<std::string>{"R", "C"};
  const std::vector<std::string> out =
      n.rank == 1 ? std::vector<std::string>{"K"} : std::vector<std::string>{"S", "K"};
  builder.input("x", TensorProto::STRING, in).output("y", TensorProto::STRING, out);
  auto& node = builder.node("StringNormalizer", {"x"}, {"y"}, "norm");
  if (!n.action.empty()) ModelBuilder::set_string(node, "case_change_action", n.action);
  if (n.case_sensitive >= 0) ModelBuilder::set_int(node, "is_case_sensitive", n.case_sensitive);
  if (!n.stopwords.empty()) ModelBuilder::set_strings(node, "stopwords", n.stopwords);
  return load(builder);
}

StringTensor normalize(const Normalizer& n, const StringTensor& x) {
  Stream stream = device("cpu:0").create_stream();
  return as_strings(normalizer_model(n).run_values({{"x", x}}, stream), "y");
}

TEST(StringNormalizer, DropsStopWordsIgnoringCaseThenLowerCases) {
  const StringTensor y =
      normalize({"LOWER", 0, {"mONDAY"}},
                strings({5}, {"Monday", "TUESDAY", "monday", "wednesday", "MONDAY"}));
  EXPECT_EQ(y, strings({2}, {"tuesday", "wednesday"}));
}

TEST(StringNormalizer, CaseSensitiveStopWordsMatchWholeElementsExactly) {
  const StringTensor y =
      normalize({"", 1, {"monday"}}, strings({3}, {"Monday", "monday", "monday tuesday"}));
  EXPECT_EQ(y, strings({2}, {"Monday", "monday tuesday"}));
}

TEST(StringNormalizer, TakesOneRowAndKeepsItsRank) {
  const StringTensor y =
      normalize({"UPPER", 0, {"STOP"}, 2}, strings({1, 4}, {"a", "B", "stop", "c"}));
  EXPECT_EQ(y, strings({1, 3}, {"A", "B", "C"}));
}

TEST(StringNormalizer, DroppingEverythingLeavesOneEmptyString) {
  EXPECT_EQ(normalize({"UPPER", 0, {"monday"}}, strings({2}, {"monday", "MONDAY"})),
            strings({1}, {""}));
  EXPECT_EQ(normalize({"", 1, {"x"}, 2}, strings({1, 3}, {"x", "x", "x"})), strings({1, 1}, {""}));
  EXPECT_EQ(normalize({}, strings({0}, {})), strings({1}, {""}));
}

TEST(StringNormalizer, ChangesTheCaseOfLettersBeyondAscii) {
  if (locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr)))
    freelocale(utf8);
  else
    GTEST_SKIP() << "this C library has no C.UTF-8 locale";
  EXPECT_EQ(normalize({"UPPER", -1, {}}, strings({2}, {"éclair ñ", "Ωmega"})),
            strings({2}, {"ÉCLAIR Ñ", "ΩMEGA"}));
  EXPECT_EQ(normalize({"LOWER", 0, {"ÉTÉ"}}, strings({3}, {"ÉCLAIR", "été", "\xff\xfe"})),
            strings({2}, {"éclair", "\xff\xfe"}));  // not UTF-8: left as it is
}

TEST(StringNormalizer, RefusesOtherShapesNumbersAndActions) {
  Stream stream = device("cpu:0").create_stream();
  expect_error(
      [&] {
        normalize({"", -1, {}, 2}, strings({2, 2}, {"a", "b", "c", "d"}));
      },
      ErrorCode::InvalidArgument,
      {"node 'norm' (StringNormalizer, opset 10)", "[C] or [1, C]", "string[2, 2]"});
  expect_error(
      [&] {
        normalize({"TITLE", -1, {}}, strings({1}, {"a"}));
      },
      ErrorCode::InvalidArgument, {"node 'norm'", "case_change_action 'TITLE'"});
  ModelBuilder builder(10);
  builder.input("x", TensorProto::FLOAT, {"2"}).output("y", TensorProto::STRING, {"K"});
  builder.node("StringNormalizer", {"x"}, {"y"}, "norm");
  const Model numbers = load(builder);
  expect_error(
      [&] {
        numbers.run_values({{"x", from_vector<float>({1, 2}, {2}, stream)}}, stream);
      },
      ErrorCode::InvalidArgument,
      {"node 'norm' (StringNormalizer, opset 10)", "input 0 ('x') is f32[2]",
       "takes a string tensor"});
}

// x -> Cast(to) -> y, x and y of the ONNX element types given.
Model cast_model(int32_t from, int32_t to) {
  ModelBuilder builder(13);
  builder.input("x", from, {"N"}).output("y", to, {"N"});
  ModelBuilder::set_int(builder.node("Cast", {"x"}, {"y"}, "cast"), "to", to);
  return load(builder);
}

// On the stream that made x.
StringTensor to_text(const Tensor& x, int32_t from, Stream& stream) {
  return as_strings(cast_model(from, TensorProto::STRING).run_values({{"x", x}}, stream), "y");
}

// On `stream`, which the caller reads the result on.
Tensor from_text(const StringTensor& x, int32_t to, Stream& stream) {
  return std::get<Tensor>(
      cast_model(TensorProto::STRING, to).run_values({{"x", x}}, stream).at("y"));
}

TEST(CastStrings, FloatsAreWrittenAsNumPyWritesThem) {
  Stream stream = device("cpu:0").create_stream();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> f32{0.9767611f, 1e-5f, 100000,        1.5e16f,      -0.0f, NAN,     inf,
                               -inf,       0.1f,  3.4028235e38f, 123456789.0f, 1e-4f, 2.5e-45f};
  EXPECT_EQ(
      to_text(from_vector(f32, {13}, stream), TensorProto::FLOAT, stream).data,
      (std::vector<std::string>{"0.9767611", "1e-05", "100000.0", "1.5e+16", "-0.0", "nan", "inf",
                                "-inf", "0.1", "3.4028235e+38", "123456790.0", "1e-04", "3e-45"}));
  const std::vector<double> f64{0.1, 1e-4, 123456789.0, 2.5e-45, 1e16, 9999999999999998.0, -1.25};
  EXPECT_EQ(to_text(from_vector(f64, {7}, stream), TensorProto::DOUBLE, stream).data,
            (std::vector<std::string>{"0.1", "0.0001", "123456789.0", "2.5e-45", "1e+16",
                                      "9999999999999998.0", "-1.25"}));
  const Tensor f16 =
      cast(from_vector<float>({0.1f, 1e-5f, 65504, 0.333f, 6e-8f, 1000}, {6}, stream), DType::f16,
           stream);
  EXPECT_EQ(to_text(f16, TensorProto::FLOAT16, stream).data,
            (std::vector<std::string>{"0.1", "1e-05", "65500.0", "0.333", "6e-08", "1000.0"}));
}

TEST(CastStrings, IntegersAndBoolsAreWrittenInFull) {
  Stream stream = device("cpu:0").create_stream();
  EXPECT_EQ(
      to_text(from_vector<int64_t>({-5, int64_t{1} << 62}, {2}, stream), TensorProto::INT64, stream)
          .data,
      (std::vector<std::string>{"-5", "4611686018427387904"}));
  EXPECT_EQ(
      to_text(from_vector<uint64_t>({~uint64_t{0}}, {1}, stream), TensorProto::UINT64, stream).data,
      (std::vector<std::string>{"18446744073709551615"}));
  EXPECT_EQ(to_text(from_vector<int8_t>({-128, 7}, {2}, stream), TensorProto::INT8, stream).data,
            (std::vector<std::string>{"-128", "7"}));  // numbers, not characters
  const uint8_t truth[] = {1, 0};
  EXPECT_EQ(to_text(from_host(truth, {2}, DType::boolean, stream), TensorProto::BOOL, stream).data,
            (std::vector<std::string>{"True", "False"}));
}

TEST(CastStrings, TextIsReadAsNumbersOfEachDtype) {
  Stream stream = device("cpu:0").create_stream();
  const auto f32 =
      from_text(
          strings({8}, {"0.47892547", " -2.5 ", "+1e3", "NaN", "INF", "+INF", "-INF", "-inf"}),
          TensorProto::FLOAT, stream)
          .to_vector<float>(stream);
  EXPECT_EQ(f32[0], 0.47892547f);
  EXPECT_EQ(f32[1], -2.5f);
  EXPECT_EQ(f32[2], 1000.0f);
  EXPECT_TRUE(std::isnan(f32[3]));
  EXPECT_EQ(f32[4], INFINITY);
  EXPECT_EQ(f32[5], INFINITY);
  EXPECT_EQ(f32[6], -INFINITY);
  EXPECT_EQ(f32[7], -INFINITY);
  EXPECT_EQ(from_text(strings({6}, {"42", " -7 ", "+3", "100.5", "9223372036854775807", "-1e3"}),
                      TensorProto::INT64, stream)
                .to_vector<int64_t>(stream),
            (std::vector<int64_t>{42, -7, 3, 100, std::numeric_limits<int64_t>::max(), -1000}));
  EXPECT_EQ(from_text(strings({4}, {"true", "False", "0", "2.5"}), TensorProto::BOOL, stream)
                .to_vector<uint8_t>(stream),
            (std::vector<uint8_t>{1, 0, 0, 1}));
  const Tensor f16 = from_text(strings({2}, {"0.1", "65504"}), TensorProto::FLOAT16, stream);
  EXPECT_EQ(f16.dtype(), DType::f16);
  EXPECT_EQ(cast(f16, DType::f32, stream).to_vector<float>(stream),
            (std::vector<float>{0.0999755859375f, 65504.0f}));
}

TEST(CastStrings, FloatsGoThroughTextAndComeBackExactly) {
  Stream stream = device("cpu:0").create_stream();
  ModelBuilder builder(13);
  builder.input("x", TensorProto::FLOAT, {"N"}).output("z", TensorProto::FLOAT, {"N"});
  ModelBuilder::set_int(builder.node("Cast", {"x"}, {"s"}), "to", TensorProto::STRING);
  ModelBuilder::set_int(builder.node("Cast", {"s"}, {"z"}), "to", TensorProto::FLOAT);
  const Model model = load(builder);
  std::mt19937 random(7);
  std::vector<float> values;
  while (values.size() < 4000) {  // every exponent, subnormals included
    const uint32_t bits = static_cast<uint32_t>(random());
    float value;
    std::memcpy(&value, &bits, sizeof value);
    if (std::isfinite(value)) values.push_back(value);
  }
  const Tensor x = from_vector(values, {static_cast<int64_t>(values.size())}, stream);
  const auto back =
      std::get<Tensor>(model.run_values({{"x", x}}, stream).at("z")).to_vector<float>(stream);
  ASSERT_EQ(back.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(std::memcmp(&back[i], &values[i], sizeof(float)), 0)
        << values[i] << " came back as " << back[i];
}

TEST(CastStrings, CastLikeTakesTheTypeOfItsSecondInput) {
  Stream stream = device("cpu:0").create_stream();
  ModelBuilder builder(15);
  builder.input("x", TensorProto::FLOAT, {"2"})
      .input("text", TensorProto::STRING, {"2"})
      .input("like_text", TensorProto::STRING, {"1"})
      .input("like_number", TensorProto::DOUBLE, {"1"})
      .output("as_text", TensorProto::STRING, {"2"})
      .output("as_number", TensorProto::DOUBLE, {"2"});
  builder.node("CastLike", {"x", "like_text"}, {"as_text"});
  builder.node("CastLike", {"text", "like_number"}, {"as_number"});
  const auto out =
      load(builder).run_values({{"x", from_vector<float>({0.5f, -3}, {2}, stream)},
                                {"text", strings({2}, {"0.1", "2e-3"})},
                                {"like_text", strings({1}, {""})},
                                {"like_number", from_vector<double>({0}, {1}, stream)}},
                               stream);
  EXPECT_EQ(as_strings(out, "as_text"), strings({2}, {"0.5", "-3.0"}));
  EXPECT_EQ(std::get<Tensor>(out.at("as_number")).to_vector<double>(stream),
            (std::vector<double>{0.1, 2e-3}));
}

TEST(CastStrings, RefusesTextThatIsNoNumberOfTheDtype) {
  Stream stream = device("cpu:0").create_stream();
  expect_error(
      [&] {
        from_text(strings({2}, {"1.5", "hello"}), TensorProto::FLOAT, stream);
      },
      ErrorCode::InvalidArgument,
      {"node 'cast' (Cast, opset 13)", "element 1 ('hello') is not a number of f32"});
  expect_error([&] { from_text(strings({1}, {"300"}), TensorProto::INT8, stream); },
               ErrorCode::InvalidArgument,
               {"node 'cast'", "element 0 ('300') is out of range for i8"});
  expect_error([&] { from_text(strings({1}, {"inf"}), TensorProto::INT32, stream); },
               ErrorCode::InvalidArgument, {"node 'cast'", "not a whole number of i32"});
}

TEST(StringValues, NumericOpsRefuseStringsNamingTheNodeOpAndType) {
  Stream stream = device("cpu:0").create_stream();
  ModelBuilder builder(13);
  builder.input("x", TensorProto::STRING, {"2"}).output("y", TensorProto::STRING, {"2"});
  builder.node("Neg", {"x"}, {"y"}, "neg");
  const Model neg = load(builder);
  expect_error(
      [&] {
        neg.run_values({{"x", strings({2}, {"1", "2"})}}, stream);
      },
      ErrorCode::Unsupported,
      {"node 'neg' (Neg, opset 13)", "input 'x' is a string tensor", "numeric tensors only"});

  ModelBuilder add(13);
  add.input("x", TensorProto::FLOAT, {"2"}).output("y", TensorProto::FLOAT, {"2"});
  add.string_initializer("s", {2}, {"1", "2"});
  add.node("Add", {"x", "s"}, {"y"}, "add");
  const Model with_strings = load(add);
  expect_error(
      [&] {
        with_strings.run({{"x", from_vector<float>({1, 2}, {2}, stream)}}, stream);
      },
      ErrorCode::Unsupported, {"node 'add' (Add, opset 13)", "input 's' is a string tensor"});
}

TEST(StringValues, InputsAndOutputsAreCheckedAgainstTheDeclarations) {
  Stream stream = device("cpu:0").create_stream();
  ModelBuilder builder(13);
  builder.input("x", TensorProto::STRING, {"2"}).output("y", TensorProto::STRING, {"2"});
  builder.node("Identity", {"x"}, {"y"});
  const Model model = load(builder);
  ASSERT_EQ(model.inputs().size(), 1u);
  EXPECT_TRUE(model.inputs()[0].strings);
  EXPECT_EQ(element_type(model.inputs()[0]), "string");
  EXPECT_EQ(as_strings(model.run_values({{"x", strings({2}, {"a", "b"})}}, stream), "y"),
            strings({2}, {"a", "b"}));
  expect_error(
      [&] {
        model.run_values({{"x", from_vector<float>({1, 2}, {2}, stream)}}, stream);
      },
      ErrorCode::InvalidArgument, {"input 'x' is f32[2]", "the model declares a string tensor"});
  expect_error(
      [&] {
        model.run_values({{"x", strings({2}, {"a", "b", "c"})}}, stream);
      },
      ErrorCode::InvalidArgument, {"input 'x' holds 3 strings for shape [2]"});
  expect_error(
      [&] {
        model.run_values({{"x", strings({3}, {"a", "b", "c"})}}, stream);
      },
      ErrorCode::InvalidArgument, {"input 'x' has shape [3]", "declares [2]"});
  expect_error([&] { model.run_values({}, stream); }, ErrorCode::InvalidArgument,
               {"input 'x' (string [2]) is missing"});

  ModelBuilder numbers(13);
  numbers.input("x", TensorProto::FLOAT, {"2"}).output("y", TensorProto::STRING, {"2"});
  ModelBuilder::set_int(numbers.node("Cast", {"x"}, {"y"}), "to", TensorProto::STRING);
  expect_error(
      [&] {
        load(numbers).run({{"x", from_vector<float>({1, 2}, {2}, stream)}}, stream);
      },
      ErrorCode::Unsupported, {"output 'y' is a string tensor", "run_values"});
}

TEST(StringValues, InitializersAndConstantsHoldStrings) {
  Stream stream = device("cpu:0").create_stream();
  ModelBuilder builder(13);
  builder.output("f", TensorProto::FLOAT, {"2"})
      .output("u", TensorProto::STRING, {"2"})
      .output("v", TensorProto::STRING, {"3"});
  builder.string_initializer("s", {2}, {"1.5", "-2"});
  ModelBuilder::set_int(builder.node("Cast", {"s"}, {"f"}), "to", TensorProto::FLOAT);
  auto& constant = builder.node("Constant", {}, {"c"});
  auto* value = constant.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(TensorProto::STRING);
  value->mutable_t()->add_dims(2);
  value->mutable_t()->add_string_data("a");
  value->mutable_t()->add_string_data("B");
  ModelBuilder::set_string(builder.node("StringNormalizer", {"c"}, {"u"}), "case_change_action",
                           "UPPER");
  ModelBuilder::set_strings(builder.node("Constant", {}, {"w"}), "value_strings", {"x", "y", "z"});
  builder.node("Identity", {"w"}, {"v"});
  const Model model = load(builder);
  const auto out = model.run_values({}, stream);
  EXPECT_EQ(std::get<Tensor>(out.at("f")).to_vector<float>(stream), (std::vector<float>{1.5f, -2}));
  EXPECT_EQ(as_strings(out, "u"), strings({2}, {"A", "B"}));
  EXPECT_EQ(as_strings(out, "v"), strings({3}, {"x", "y", "z"}));
}

// If's branches read the enclosing graph's strings and give strings back.
TEST(StringValues, FlowThroughIfBranches) {
  Stream stream = device("cpu:0").create_stream();
  ModelBuilder builder(13);
  builder.input("x", TensorProto::STRING, {"N"})
      .input("upper", TensorProto::BOOL, {})
      .output("y", TensorProto::STRING, {"K"});
  auto branch = [](const std::string& name, const std::string& op) {
    onnx::GraphProto graph;
    graph.set_name(name);
    auto* node = graph.add_node();
    node->set_op_type(op);
    node->add_input("x");
    node->add_output(name + "_out");
    if (op == "StringNormalizer") ModelBuilder::set_string(*node, "case_change_action", "UPPER");
    auto* output = graph.add_output();
    output->set_name(name + "_out");
    output->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::STRING);
    return graph;
  };
  auto& node = builder.node("If", {"upper"}, {"y"});
  for (const auto& [attribute, graph] :
       {std::pair{"then_branch", branch("then", "StringNormalizer")},
        std::pair{"else_branch", branch("else", "Identity")}}) {
    auto* a = node.add_attribute();
    a->set_name(attribute);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = graph;
  }
  const Model model = load(builder);
  const StringTensor x = strings({2}, {"ab", "Cd"});
  for (const uint8_t upper : {uint8_t{1}, uint8_t{0}}) {
    const auto out = model.run_values(
        {{"x", x}, {"upper", from_host(&upper, {}, DType::boolean, stream)}}, stream);
    EXPECT_EQ(as_strings(out, "y"), upper ? strings({2}, {"AB", "CD"}) : x);
  }
}

// x (strings) -> Cast -> + y -> z: the string node runs on the host, the Add where it goes.
TEST(StringValues, StringNodesArePlannedOnTheHostAndRunOnEveryDevice) {
  ModelBuilder builder(13);
  builder.input("x", TensorProto::STRING, {"N"})
      .input("y", TensorProto::FLOAT, {"N"})
      .output("z", TensorProto::FLOAT, {"N"});
  ModelBuilder::set_int(builder.node("Cast", {"x"}, {"n"}, "parse"), "to", TensorProto::FLOAT);
  builder.node("Add", {"n", "y"}, {"z"}, "add");
  const Model model = load(builder);
  PlanOptions options;
  options.input_shapes = {{"x", {3}}};
  const ExecutionPlan plan = plan_model(model, options);
  ASSERT_EQ(plan.nodes.size(), 2u);
  EXPECT_EQ(plan.nodes[0].device, "cpu:0");
  EXPECT_NE(plan.nodes[0].reason.find("string tensors"), std::string::npos) << plan.nodes[0].reason;
  EXPECT_TRUE(plan.unknown_shapes.empty());
  const StringTensor x = strings({3}, {"1", "2.5", "-4"});
  const std::vector<float> expected{11, 22.5f, 26};
  Stream cpu = device("cpu:0").create_stream();
  const Tensor y = from_vector<float>({10, 20, 30}, {3}, cpu);
  cpu.synchronize();  // the planned run reads it on streams of its own
  const auto planned = run_planned_values(model, plan, {{"x", x}, {"y", y}});
  const Tensor& z = std::get<Tensor>(planned.outputs.at("z"));
  Stream z_stream = z.device().create_stream();
  EXPECT_EQ(z.to_vector<float>(z_stream), expected);
  for (const Device& target : devices()) {  // the string on the host, the rest on the device
    Stream stream = target.create_stream();
    try {
      const auto out = model.run_values(
          {{"x", x}, {"y", from_vector<float>({10, 20, 30}, {3}, stream)}}, stream);
      EXPECT_EQ(std::get<Tensor>(out.at("z")).to_vector<float>(stream), expected) << target.id();
    } catch (const Error& error) {  // a device without f32 add says so; nothing else may fail
      EXPECT_EQ(error.code(), ErrorCode::Unsupported) << target.id() << ": " << error.message();
      EXPECT_EQ(error.message().find("string"), std::string::npos) << error.message();
    }
  }
}

// X -> TfIdfVectorizer -> Y.
struct TfIdf {
  int32_t elem = TensorProto::INT64;
  std::vector<std::string> dims{"C"};
  std::string mode = "TF";
  int64_t min_n = 1, max_n = 2, max_skip = 0;
  std::vector<int64_t> int_pool;
  std::vector<std::string> string_pool;
  std::vector<int64_t> counts, indexes;
  std::vector<float> weights;
};

Model tfidf_model(const TfIdf& t) {
  ModelBuilder builder(9);
  std::vector<std::string> out = t.dims;
  if (!out.empty()) out.back() = "K";
  builder.input("X", t.elem, t.dims).output("Y", TensorProto::FLOAT, out);
  auto& node = builder.node("TfIdfVectorizer", {"X"}, {"Y"}, "tfidf");
  ModelBuilder::set_string(node, "mode", t.mode);
  ModelBuilder::set_int(node, "min_gram_length", t.min_n);
  ModelBuilder::set_int(node, "max_gram_length", t.max_n);
  ModelBuilder::set_int(node, "max_skip_count", t.max_skip);
  ModelBuilder::set_ints(node, "ngram_counts", t.counts);
  ModelBuilder::set_ints(node, "ngram_indexes", t.indexes);
  if (!t.int_pool.empty()) ModelBuilder::set_ints(node, "pool_int64s", t.int_pool);
  if (!t.string_pool.empty()) ModelBuilder::set_strings(node, "pool_strings", t.string_pool);
  if (!t.weights.empty()) ModelBuilder::set_floats(node, "weights", t.weights);
  return load(builder);
}

Tensor vectorize(const TfIdf& t, const RunValue& x, Stream& stream) {
  return std::get<Tensor>(tfidf_model(t).run_values({{"X", x}}, stream).at("Y"));
}

// Pool: 1-grams 1, 2, 3 and 2-grams (1, 2), (2, 3), at coordinates 0 to 4. In 1 3 2 1 2 the
// 1-grams count 2, 2, 1; (1, 2) is adjacent once (positions 3-4) and once more one item apart
// (positions 0-2); (2, 3) never occurs in order.
TEST(TfIdfVectorizer, CountsUnigramsAndBigramsWithSkips) {
  Stream stream = device("cpu:0").create_stream();
  TfIdf t;
  t.int_pool = {1, 2, 3, 1, 2, 2, 3};
  t.counts = {0, 3};
  t.indexes = {0, 1, 2, 3, 4};
  const Tensor x = from_vector<int64_t>({1, 3, 2, 1, 2}, {5}, stream);
  EXPECT_EQ(vectorize(t, x, stream).to_vector<float>(stream), (std::vector<float>{2, 2, 1, 1, 0}));
  t.max_skip = 1;
  const Tensor tf = vectorize(t, x, stream);
  EXPECT_EQ(tf.shape(), (Shape{5}));
  EXPECT_EQ(tf.to_vector<float>(stream), (std::vector<float>{2, 2, 1, 2, 0}));
  // Skips up to the row's length find (1, 2) three times; any larger skip finds the same, and
  // takes no longer (it used to try every skip up to max_skip_count: 2^40 ran for ever).
  for (int64_t skip : {int64_t{4}, int64_t{1} << 40}) {
    t.max_skip = skip;
    EXPECT_EQ(vectorize(t, x, stream).to_vector<float>(stream), (std::vector<float>{2, 2, 1, 3, 0}))
        << "max_skip_count " << skip;
  }
  t.max_skip = 1;
  t.min_n = 2;  // 2-grams only
  EXPECT_EQ(vectorize(t, x, stream).to_vector<float>(stream), (std::vector<float>{0, 0, 0, 2, 0}));
  t.min_n = 1;
  t.elem = TensorProto::INT32;  // the same from int32 items
  EXPECT_EQ(vectorize(t, from_vector<int32_t>({1, 3, 2, 1, 2}, {5}, stream), stream)
                .to_vector<float>(stream),
            (std::vector<float>{2, 2, 1, 2, 0}));
  t.elem = TensorProto::INT64;
  t.weights = {0.5f, 1, 2, 3, 4};
  t.mode = "IDF";  // the weight where the n-gram occurs at all
  EXPECT_EQ(vectorize(t, x, stream).to_vector<float>(stream),
            (std::vector<float>{0.5f, 1, 2, 3, 0}));
  t.mode = "TFIDF";  // count times weight
  EXPECT_EQ(vectorize(t, x, stream).to_vector<float>(stream), (std::vector<float>{1, 2, 2, 6, 0}));
}

TEST(TfIdfVectorizer, CountsStringsRowByRowIntoTheirCoordinates) {
  Stream stream = device("cpu:0").create_stream();
  TfIdf t;
  t.elem = TensorProto::STRING;
  t.dims = {"B", "C"};
  t.min_n = t.max_n = 1;
  t.string_pool = {"a", "b", "c"};
  t.counts = {0};
  t.indexes = {2, 0, 1};  // a -> 2, b -> 0, c -> 1
  const Tensor y = vectorize(t, strings({2, 3}, {"a", "b", "a", "b", "b", "c"}), stream);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<float>(stream), (std::vector<float>{1, 0, 2, 2, 1, 0}));
}

TEST(TfIdfVectorizer, RefusesInputsThatDoNotFitItsPool) {
  Stream stream = device("cpu:0").create_stream();
  TfIdf t;
  t.string_pool = {"a"};
  t.counts = {0};
  t.indexes = {0};
  const Tensor ints = from_vector<int64_t>({1}, {1}, stream);
  expect_error([&] { vectorize(t, ints, stream); }, ErrorCode::InvalidArgument,
               {"node 'tfidf' (TfIdfVectorizer, opset 9)", "reads integers", "pool_strings"});
  t.string_pool.clear();
  t.int_pool = {1};
  t.elem = TensorProto::STRING;
  expect_error([&] { vectorize(t, strings({1}, {"a"}), stream); }, ErrorCode::InvalidArgument,
               {"node 'tfidf'", "reads strings", "pool_int64s"});
  t.elem = TensorProto::FLOAT;
  expect_error([&] { vectorize(t, from_vector<float>({1}, {1}, stream), stream); },
               ErrorCode::InvalidArgument, {"node 'tfidf'", "f32[1]", "int32, int64 or strings"});
  t.elem = TensorProto::INT64;
  t.mode = "BM25";
  expect_error([&] { vectorize(t, ints, stream); }, ErrorCode::InvalidArgument,
               {"node 'tfidf'", "mode 'BM25'"});
}

}  // namespace
}  // namespace hal::test
