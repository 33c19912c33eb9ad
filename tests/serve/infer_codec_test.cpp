// The request codec alone (no server, no device): what decides which requests stack into one
// batch, how values JSON cannot write plainly go back, what is refused as it is read, and what
// reading a large body costs.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <string>

#include "serve/infer_codec.hpp"
#include "serve/request_error.hpp"

namespace hal::test {
namespace {

serve::ModelSignature two_inputs() {
  serve::ModelSignature signature;
  signature.name = "pair";
  signature.inputs = {{"a", DType::f32, {-1, -1}}, {"b", DType::f32, {-1, -1}}};
  signature.outputs = {{"y", DType::f32, {-1, -1}}};
  signature.batchable = true;
  signature.max_batch = 8;
  return signature;
}

// {"inputs": [first, second]}, each one row of `columns` zeros.
std::string body(const std::string& first, int first_columns, const std::string& second,
                 int second_columns) {
  const auto input = [](const std::string& name, int columns) {
    std::string data;
    for (int i = 0; i < columns; ++i) data += i ? ",0" : "0";
    return R"({"name":")" + name + R"(","datatype":"FP32","shape":[1,)" + std::to_string(columns) +
           R"(],"data":[)" + data + "]}";
  };
  return R"({"inputs":[)" + input(first, first_columns) + "," + input(second, second_columns) +
         "]}";
}

TEST(ServeCodec, RequestsStackOnlyWhereEveryInputHasTheSameRowShape) {
  const serve::ModelSignature signature = two_inputs();
  const auto key = [&](const std::string& text) {
    return serve::parse_infer_request(text, std::nullopt, signature).shape_key;
  };
  // a is [1, 3] and b [1, 2], listed in either order: one key.
  const std::string a3_b2 = key(body("a", 3, "b", 2));
  EXPECT_EQ(key(body("b", 2, "a", 3)), a3_b2);
  // The same list of shapes on the other inputs is another key: stacked together, a's rows
  // would be 3 and 2 floats long in one tensor.
  EXPECT_NE(key(body("b", 3, "a", 2)), a3_b2);
  EXPECT_NE(key(body("a", 2, "b", 3)), a3_b2);
}

serve::ModelSignature one_input(DType dtype) {
  serve::ModelSignature signature;
  signature.name = "one";
  signature.inputs = {{"x", dtype, {-1, 4}}};
  signature.outputs = {{"y", dtype, {-1, 4}}};
  signature.batchable = true;
  signature.max_batch = 8;
  return signature;
}

// The refusal's message; "" where the body is accepted.
std::string refusal(const std::string& body, const serve::ModelSignature& signature,
                    const std::optional<std::string>& header_length = std::nullopt) {
  try {
    serve::parse_infer_request(body, header_length, signature);
  } catch (const serve::RequestError& error) {
    EXPECT_EQ(error.status, 400);
    return error.what();
  }
  return "";
}

// x[batch, 4] and two optional inputs: w[3], a weight of fixed shape, and m[batch, 4], whose
// first dimension is the batch's.
serve::ModelSignature with_optional_inputs() {
  serve::ModelSignature signature;
  signature.name = "opt";
  signature.inputs = {{"x", DType::f32, {-1, 4}},
                      {"w", DType::f32, {3}, /*optional=*/true, /*batch_dim=*/false},
                      {"m", DType::f32, {-1, 4}, /*optional=*/true, /*batch_dim=*/true}};
  signature.outputs = {{"y", DType::f32, {-1, 4}}};
  signature.batchable = true;
  signature.max_batch = 2;
  return signature;
}

// A request may leave an optional input out; one that gives it runs alone (InferRequest::alone),
// its rows those of the required inputs. A weight's first dimension is its own (3 rows past the
// max batch of 2 are no batch); a batched optional input's rows must match the others'.
TEST(ServeCodec, OptionalInputsMayBeLeftOutAndAGivenOneRunsAlone) {
  const serve::ModelSignature signature = with_optional_inputs();
  const std::string x = R"({"name":"x","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]})";
  const std::string w = R"({"name":"w","datatype":"FP32","shape":[3],"data":[5,6,7]})";
  const auto parse = [&](const std::string& inputs) {
    return serve::parse_infer_request(R"({"inputs":[)" + inputs + "]}", std::nullopt, signature);
  };
  const serve::InferRequest plain = parse(x);
  EXPECT_FALSE(plain.alone);
  EXPECT_EQ(plain.inputs.size(), 1u);
  EXPECT_EQ(plain.rows, 1);
  const serve::InferRequest weighted = parse(w + "," + x);
  EXPECT_TRUE(weighted.alone);
  EXPECT_EQ(weighted.rows, 1);
  EXPECT_EQ(weighted.inputs.at("w").shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(weighted.shape_key, plain.shape_key);  // alone keeps it from the others
  const std::string m2 = R"({"name":"m","datatype":"FP32","shape":[2,4],"data":[0,0,0,0,0,0,0,0]})";
  EXPECT_EQ(refusal(R"({"inputs":[)" + x + "," + m2 + "]}", signature),
            "inputs[1] ('m'): a batch of 2 where the other inputs have 1");
  EXPECT_EQ(refusal(R"({"inputs":[)" + w + "]}", signature),
            "'inputs': input 'x' of model 'opt' is missing");
  EXPECT_EQ(refusal(R"({"inputs":[)" + x +
                        R"(,{"name":"w","datatype":"FP32","shape":[2],"data":[5,6]}]})",
                    signature),
            "inputs[1] ('w'): shape [2] does not match the model's [3] at dimension 0");

  const nlohmann::json metadata = serve::model_metadata(signature);
  EXPECT_FALSE(metadata["inputs"][0].contains("optional")) << metadata;
  EXPECT_EQ(metadata["inputs"][1]["optional"], true) << metadata;
  EXPECT_EQ(metadata["inputs"][2]["optional"], true) << metadata;
  EXPECT_EQ(metadata["inputs"][1]["shape"], nlohmann::json({3}));
}

std::string x_body(const std::string& datatype, const std::string& data) {
  return R"({"inputs":[{"name":"x","datatype":")" + datatype + R"(","shape":[1,4],"data":[)" +
         data + "]}]}";
}

template <class T>
serve::HostTensor host(DType dtype, const std::vector<T>& values) {
  serve::HostTensor tensor{dtype, {1, static_cast<int64_t>(values.size())}, {}};
  tensor.bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  return tensor;
}

// The response's body for output y, as JSON unless `binary`.
serve::InferResponse respond(const serve::HostTensor& y, bool binary = false,
                             std::optional<std::string> id = std::nullopt) {
  serve::InferRequest request;
  request.id = std::move(id);
  request.outputs = {"y"};
  request.binary_outputs = {binary};
  return serve::encode_infer_response(one_input(y.dtype), request, {{"y", y}});
}

// nlohmann writes NaN and infinities as null (and -Infinity then reads back as NaN): they go
// as Triton writes them, which Python's json reads.
TEST(ServeCodec, NonFiniteOutputsAreWrittenNaNAndInfinity) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  serve::InferResponse f32 = respond(host<float>(DType::f32, {kNaN, kInf, -kInf, 1.5f}));
  EXPECT_FALSE(f32.header_length);
  EXPECT_NE(f32.body.find(R"("data":[NaN,Infinity,-Infinity,1.5])"), std::string::npos) << f32.body;
  serve::InferResponse f64 = respond(
      host<double>(DType::f64, {-std::numeric_limits<double>::infinity(), 0.1, -0.0, 1e300}));
  EXPECT_NE(f64.body.find(R"("data":[-Infinity,0.1,-0.0,1e+300])"), std::string::npos) << f64.body;
}

// FP16 and BF16 values are doubles exactly: a client that asked for JSON gets JSON numbers.
TEST(ServeCodec, HalfOutputsAreJsonNumbersUnlessAskedForAsBinary) {
  const serve::HostTensor f16 = host<uint16_t>(DType::f16, {0x3800, 0xc000, 0x7bff, 0x3c01});
  serve::InferResponse json_only = respond(f16);
  EXPECT_FALSE(json_only.header_length);
  const auto body = nlohmann::json::parse(json_only.body);
  EXPECT_EQ(body["outputs"][0]["datatype"], "FP16");
  EXPECT_EQ(body["outputs"][0]["data"], nlohmann::json({0.5, -2.0, 65504.0, 1.0009765625}));
  const serve::HostTensor bf16 = host<uint16_t>(DType::bf16, {0x3fc0, 0xbe80});
  EXPECT_EQ(nlohmann::json::parse(respond(bf16).body)["outputs"][0]["data"],
            nlohmann::json({1.5, -0.25}));
  serve::InferResponse binary = respond(f16, /*binary=*/true);
  ASSERT_TRUE(binary.header_length);
  EXPECT_EQ(binary.body.substr(*binary.header_length), f16.bytes);
}

TEST(ServeCodec, AnEmptyIdIsEchoed) {
  const serve::ModelSignature signature = one_input(DType::f32);
  const auto id_of = [&](const std::string& id_field) {
    const serve::InferRequest request = serve::parse_infer_request(
        R"({)" + id_field + R"("inputs":[{"name":"x","datatype":"FP32","shape":[1,4],)" +
            R"("data":[1,2,3,4]}]})",
        std::nullopt, signature);
    const serve::HostTensor y = host<float>(DType::f32, {1, 2, 3, 4});
    return nlohmann::json::parse(respond(y, false, request.id).body);
  };
  const nlohmann::json empty = id_of(R"("id":"",)");
  ASSERT_TRUE(empty.contains("id")) << empty;
  EXPECT_EQ(empty["id"], "");
  EXPECT_EQ(id_of(R"("id":"r1",)")["id"], "r1");
  EXPECT_FALSE(id_of("").contains("id"));
}

// Triton's `timeout` (its schedule-policy extension: the request's timeout in microseconds) is
// read as timeout_us is, checked alike with the refusal naming the field, and remembered by the
// name the client used (the 504 says it). Given both, they must agree.
TEST(ServeCodec, TritonsTimeoutParameterIsReadAsTimeoutUs) {
  const serve::ModelSignature signature = one_input(DType::f32);
  const auto with_parameters = [](const std::string& parameters) {
    return R"({"parameters":{)" + parameters +
           R"(},"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]})";
  };
  const auto parsed = [&](const std::string& parameters) {
    return serve::parse_infer_request(with_parameters(parameters), std::nullopt, signature);
  };
  const serve::InferRequest triton = parsed(R"("timeout":50000)");
  EXPECT_EQ(triton.timeout_us, 50000);
  EXPECT_EQ(triton.timeout_name, "timeout");
  const serve::InferRequest own = parsed(R"("timeout_us":50000)");
  EXPECT_EQ(own.timeout_us, 50000);
  EXPECT_EQ(own.timeout_name, "timeout_us");
  EXPECT_EQ(parsed("").timeout_us, 0);  // neither: no limit
  EXPECT_EQ(parsed(R"("timeout":9223372036854775)").timeout_us, 9223372036854775);
  // Both, equal: taken, in either order.
  EXPECT_EQ(parsed(R"("timeout":700,"timeout_us":700)").timeout_us, 700);
  EXPECT_EQ(parsed(R"("timeout_us":700,"timeout":700)").timeout_us, 700);
  // The refusals timeout_us has, naming `timeout`.
  const std::string range = ", out of range (1 to 9223372036854775)";
  // Triton's 0 is no limit (timeout_us starts at 1).
  EXPECT_EQ(parsed(R"("timeout":0)").timeout_us, 0);
  const std::string triton_range = ", out of range (0 to 9223372036854775)";
  EXPECT_EQ(refusal(with_parameters(R"("timeout":-5)"), signature),
            "parameters.timeout is -5" + triton_range);
  EXPECT_EQ(refusal(with_parameters(R"("timeout":9223372036854776)"), signature),
            "parameters.timeout is 9223372036854776" + triton_range);
  EXPECT_EQ(refusal(with_parameters(R"("timeout":"soon")"), signature),
            "parameters.timeout is not an integer");
  EXPECT_EQ(refusal(with_parameters(R"("timeout":1.5)"), signature),
            "parameters.timeout is not an integer");
  // Both, differing: refused naming both, whichever comes first.
  const std::string differ =
      "parameters.timeout (1000) and parameters.timeout_us (2000) differ; give one of them";
  EXPECT_EQ(refusal(with_parameters(R"("timeout":1000,"timeout_us":2000)"), signature), differ);
  EXPECT_EQ(refusal(with_parameters(R"("timeout_us":2000,"timeout":1000)"), signature), differ);
  // A bad timeout_us is named first, whatever `timeout` says.
  EXPECT_EQ(refusal(with_parameters(R"("timeout":1000,"timeout_us":-5)"), signature),
            "parameters.timeout_us is -5" + range);
}

// A number the input's datatype would hold as infinity is refused naming the element, not
// stored as infinity; one that rounds to the largest finite value is taken.
TEST(ServeCodec, NumbersPastTheInputDatatypesRangeAreRefused) {
  const serve::ModelSignature f32 = one_input(DType::f32);
  EXPECT_EQ(refusal(x_body("FP32", "1,1e39,3,4"), f32),
            "inputs[0] ('x'): data[1] is 1e+39, which FP32 cannot hold (its largest is "
            "3.4028234663852886e+38)");
  EXPECT_EQ(refusal(x_body("FP32", "1,2,-1e39,4"), f32),
            "inputs[0] ('x'): data[2] is -1e+39, which FP32 cannot hold (its largest is "
            "3.4028234663852886e+38)");
  EXPECT_EQ(refusal(x_body("FP32", "3.4028235e38,-3.4028235e38,0,1e-50"), f32), "");
  EXPECT_EQ(refusal(x_body("FP32", "1,1e400,3,4"), f32),
            "the request body holds the number 1e400, beyond FP64's range");
  // FP16 and BF16 come as JSON numbers too, rounded to the nearest.
  const serve::ModelSignature f16 = one_input(DType::f16);
  const serve::InferRequest half =
      serve::parse_infer_request(x_body("FP16", "0.5,-2,65504,1.0009765625"), std::nullopt, f16);
  const std::vector<uint16_t> want = {0x3800, 0xc000, 0x7bff, 0x3c01};
  EXPECT_EQ(half.inputs.at("x").bytes,
            std::string(reinterpret_cast<const char*>(want.data()), want.size() * 2));
  EXPECT_EQ(refusal(x_body("FP16", "1,2,3,1e5"), f16),
            "inputs[0] ('x'): data[3] is 1e+05, which FP16 cannot hold (its largest is "
            "65504.0)");
  EXPECT_EQ(refusal(x_body("BF16", "1,2,3,4"), one_input(DType::bf16)), "");
}

// The 16-bit and unsigned datatypes: each value exact (UINT64 past INT64 too), one out of the
// datatype's range refused naming the element, and the outputs written back as integers.
TEST(ServeCodec, SixteenBitAndUnsignedIntegersTravelExactly) {
  const serve::ModelSignature u64 = one_input(DType::u64);
  const serve::InferRequest big = serve::parse_infer_request(
      x_body("UINT64", "18446744073709551615,9223372036854775808,0,7"), std::nullopt, u64);
  const std::vector<uint64_t> want = {UINT64_MAX, uint64_t{1} << 63, 0, 7};
  EXPECT_EQ(big.inputs.at("x").bytes,
            std::string(reinterpret_cast<const char*>(want.data()), want.size() * 8));
  EXPECT_EQ(refusal(x_body("UINT64", "1,-1,3,4"), u64), "inputs[0] ('x'): data[1] is out of range");
  const serve::ModelSignature i16 = one_input(DType::i16);
  EXPECT_EQ(refusal(x_body("INT16", "-32768,32767,0,1"), i16), "");
  EXPECT_EQ(refusal(x_body("INT16", "1,2,32768,4"), i16),
            "inputs[0] ('x'): data[2] is out of range");
  EXPECT_EQ(refusal(x_body("UINT16", "1,2,3,65536"), one_input(DType::u16)),
            "inputs[0] ('x'): data[3] is out of range");
  EXPECT_EQ(refusal(x_body("UINT32", "4294967295,0,1,2"), one_input(DType::u32)), "");
  const auto data = [](const serve::HostTensor& y) {
    return nlohmann::json::parse(respond(y).body)["outputs"][0];
  };
  const auto out = data(host<uint64_t>(DType::u64, want));
  EXPECT_EQ(out["datatype"], "UINT64");
  EXPECT_EQ(out["data"], nlohmann::json({UINT64_MAX, uint64_t{1} << 63, 0, 7}));
  EXPECT_EQ(data(host<int16_t>(DType::i16, {-32768, 5}))["data"], nlohmann::json({-32768, 5}));
  EXPECT_EQ(data(host<uint32_t>(DType::u32, {4294967295u, 1}))["datatype"], "UINT32");
}

// BOOL is one byte an element, 0 or 1: another byte is refused naming where it is.
TEST(ServeCodec, BoolBinaryBytesOtherThanZeroOrOneAreRefused) {
  serve::ModelSignature signature = one_input(DType::boolean);
  signature.inputs[0].shape = {-1, 3};
  const std::string header = R"({"inputs":[{"name":"x","datatype":"BOOL","shape":[1,3],)"
                             R"("parameters":{"binary_data_size":3}}]})";
  const std::string length = std::to_string(header.size());
  EXPECT_EQ(refusal(header + std::string("\1\2\0", 3), signature, length),
            "inputs[0] ('x'): byte 1 of its binary data is 2; a BOOL element is 0 or 1");
  const serve::InferRequest ok =
      serve::parse_infer_request(header + std::string("\1\0\1", 3), length, signature);
  EXPECT_EQ(ok.inputs.at("x").bytes, std::string("\1\0\1", 3));
}

// 'data' past what its shape holds is refused as it is read where the shape came first: before
// the body's end, which this one never reaches. Where it came after, what the model's input
// holds is kept and the checks, which read the shape, say what they said of the whole body.
TEST(ServeCodec, DataPastItsShapeIsRefusedAsItIsRead) {
  const serve::ModelSignature signature = one_input(DType::f32);
  std::string zeros = "0";
  for (int i = 0; i < 1000; ++i) zeros += ",0";
  const std::string too_many =
      "inputs[0] ('x'): 'data' has more than 4 elements; shape [1, 4] holds 4";
  EXPECT_EQ(refusal(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"data":[)" + zeros,
                    signature),
            too_many);
  // As nlohmann writes an object (its keys sorted): 'data' first.
  EXPECT_EQ(refusal(R"({"inputs":[{"data":[)" + zeros +
                        R"(],"datatype":"FP32","name":"x","shape":[1,4]}]})",
                    signature),
            too_many);
  EXPECT_EQ(refusal(R"({"inputs":[{"data":[)" + zeros +
                        R"(],"datatype":"FP32","name":"x","shape":[1,5]}]})",
                    signature),
            "inputs[0] ('x'): shape [1, 5] does not match the model's [-1, 4] at dimension 1");
  EXPECT_EQ(refusal(R"({"inputs":[{"data":[[[[)" + zeros +
                        R"(]]]],"datatype":"FP32","name":"x","shape":[1,4]}]})",
                    signature),
            "inputs[0] ('x'): 'data' is nested deeper than its shape");
  // Arrays past what any valid 'data' nests are refused, not dropped with what they hold.
  const std::string rows = R"([[1,2,3,4],[],[],[],[],[],[5,6]])";
  EXPECT_EQ(
      refusal(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"data":)" + rows + "}]}",
              signature),
      "inputs[0] ('x'): 'data' nests more arrays than its shape has rows");
  EXPECT_EQ(
      refusal(R"({"inputs":[{"data":)" + rows + R"(,"datatype":"FP32","name":"x","shape":[1,4]}]})",
              signature),
      too_many);
  // Data first, nested as its shape says and within the model's input, is kept whole.
  EXPECT_EQ(refusal(R"({"inputs":[{"data":[[1,2,3,4],[5,6,7,8]],"datatype":"FP32","name":"x",)"
                    R"("shape":[2,4]}]})",
                    signature),
            "");
  std::string shape = "1";
  for (int i = 0; i < 64; ++i) shape += ",1";
  EXPECT_EQ(refusal(R"({"inputs":[{"name":"x","shape":[)" + shape, signature),
            "inputs[0] ('x'): 'shape' has more than 64 dimensions");
}

// The process's peak resident memory (VmHWM), in bytes, after resetting it to the current
// size where `reset` (Linux's /proc/self/clear_refs); -1 where that cannot be done.
int64_t peak_rss(bool reset) {
  if (reset) {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5" << std::flush;
    if (!clear) return -1;
  }
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

// Reading a body costs about its own size, not a document of all of it (16 bytes a value and
// more): 2 M numbers for an input of 4 once took 50 MB before their count was checked.
TEST(ServeCodec, ALargeBodyCostsLittleMoreThanItsBytes) {
  const serve::ModelSignature signature = one_input(DType::f32);
  std::string numbers;
  for (int i = 0; i < 2'000'000; ++i) numbers += "0,";
  numbers += "0";
  const std::string too_much =
      R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"data":[)" + numbers + "]}]}";
  // 'data' before its shape (as nlohmann writes it): no more than the model's input holds is kept.
  const std::string data_first =
      R"({"inputs":[{"data":[)" + numbers + R"(],"datatype":"FP32","name":"x","shape":[1,4]}]})";
  // A field hal does not read is skipped, not kept.
  const std::string unread = R"({"extra":[)" + numbers +
                             R"(],"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],)"
                             R"("data":[1,2,3,4]}]})";
  if (peak_rss(/*reset=*/true) < 0) GTEST_SKIP() << "no /proc/self/clear_refs";
  const int64_t before = peak_rss(false);
  const std::string too_many =
      "inputs[0] ('x'): 'data' has more than 4 elements; shape [1, 4] holds 4";
  EXPECT_EQ(refusal(too_much, signature), too_many);
  EXPECT_EQ(refusal(data_first, signature), too_many);
  EXPECT_EQ(refusal(unread, signature), "");
  const int64_t grown = peak_rss(false) - before;
  EXPECT_LT(grown, static_cast<int64_t>(numbers.size()))
      << "reading " << numbers.size() << " bytes of numbers took " << grown << " bytes";
}

// Triton's extensions hal does not implement are refused by the parameter's name, not ignored
// (a request for class strings or shared memory would get another answer than it asked for);
// their clients' defaults (a sequence id of 0, classification 0) are the plain request.
TEST(ServeCodec, ParametersOfExtensionsHalLacksAreRefusedByName) {
  const serve::ModelSignature signature = one_input(DType::f32);
  const std::string x = R"({"name":"x","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]})";
  const auto request = [&](const std::string& fields) {
    return "{" + fields + R"("inputs":[)" + x + "]}";
  };
  EXPECT_EQ(refusal(request(R"("parameters":{"sequence_id":7},)"), signature),
            "parameters.sequence_id: hal serves no sequence (stateful) models");
  EXPECT_EQ(refusal(request(R"("parameters":{"sequence_id":"s","sequence_end":true},)"), signature),
            "parameters.sequence_end: hal serves no sequence (stateful) models");
  EXPECT_EQ(
      refusal(request(R"("parameters":{"sequence_id":0,"sequence_start":false},)"), signature), "");
  EXPECT_EQ(
      refusal(request(R"("outputs":[{"name":"y","parameters":{"classification":2}}],)"), signature),
      "outputs[0]: parameters.classification: hal has no classification extension; ask for the "
      "output itself");
  EXPECT_EQ(
      refusal(request(R"("outputs":[{"name":"y","parameters":{"classification":0}}],)"), signature),
      "");
  EXPECT_EQ(refusal(request(R"("outputs":[{"name":"y","parameters":{"shared_memory_region":"r",)"
                            R"("shared_memory_byte_size":16}}],)"),
                    signature),
            "outputs[0]: parameters.shared_memory_region: hal has no shared-memory extension; "
            "send the data in the request (JSON or binary_data_size)");
  EXPECT_EQ(refusal(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],)"
                    R"("parameters":{"shared_memory_region":"r","shared_memory_byte_size":16}}]})",
                    signature),
            "inputs[0] ('x'): parameters.shared_memory_region: hal has no shared-memory "
            "extension; send the data in the request (JSON or binary_data_size)");
}

// "outputs": [] lists none, which is every output (Triton's reading); absent is the same.
TEST(ServeCodec, AnEmptyListOfOutputsIsEveryOutput) {
  const serve::ModelSignature signature = two_inputs();
  const std::string inputs = R"("inputs":[{"name":"a","datatype":"FP32","shape":[1,1],"data":[1]},)"
                             R"({"name":"b","datatype":"FP32","shape":[1,1],"data":[2]}])";
  const serve::InferRequest listed =
      serve::parse_infer_request(R"({"outputs":[],)" + inputs + "}", std::nullopt, signature);
  EXPECT_EQ(listed.outputs, std::vector<std::string>{"y"});
  EXPECT_EQ(listed.binary_outputs, std::vector<bool>{false});
}

// A shape of no elements whose other dimensions multiply past the limit is refused by the
// reader: its count of elements went through inf x 0 (NaN, which passed the guard) and then an
// int64 product that overflowed.
TEST(ServeCodec, AShapeWhoseDimensionsMultiplyPastTheLimitIsRefusedEvenWithAZero) {
  serve::ModelSignature signature;
  signature.name = "wide";
  signature.inputs = {{"x", DType::f32, std::vector<int64_t>(36, -1)}};
  signature.outputs = {{"y", DType::f32, std::vector<int64_t>(36, -1)}};
  std::string shape = "[1";
  for (int i = 0; i < 34; ++i) shape += ",2147483647";
  shape += ",0]";
  const std::string message =
      refusal(R"({"inputs":[{"name":"x","datatype":"FP32","shape":)" + shape + R"(,"data":[]}]})",
              signature);
  EXPECT_NE(message.find("inputs[0] ('x'): shape [1, 2147483647, "), std::string::npos) << message;
  EXPECT_NE(message.find(" is too large: its dimensions other than 0 multiply past 1e9"),
            std::string::npos)
      << message;
}

// A header length of 0 names the header: the body is not empty.
TEST(ServeCodec, AHeaderLengthOfZeroIsNamed) {
  const serve::ModelSignature signature = one_input(DType::f32);
  EXPECT_EQ(refusal(R"({"inputs":[]})", signature, "0"),
            "the Inference-Header-Content-Length header is 0; it gives the size of the JSON "
            "object at the start of the body");
}

}  // namespace
}  // namespace hal::test
