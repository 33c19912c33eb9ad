// Malformed inference requests over loopback: each answered with its status and a KServe error
// body naming what was wrong, and none of them reaching the model.
#include <gtest/gtest.h>

#include "serve_fixture.hpp"

namespace hal::test {
namespace {

using json = nlohmann::json;

enum class Header { none, exact, text };

struct Case {
  std::string label;
  std::string body;    // the JSON part
  std::string binary;  // bytes after it
  Header header = Header::none;
  std::string header_text;  // for Header::text
  int status = 400;
  std::string error;
  std::string path = "/v2/models/mlp/infer";
};

const std::string kX = R"("name":"x","datatype":"FP32","shape":[1,4])";
const std::string kData = R"("data":[1,2,3,4])";
std::string one(const std::string& input) { return R"({"inputs":[{)" + input + "}]}"; }
std::string with(const std::string& extra) {
  return R"({"inputs":[{)" + kX + "," + kData + "}]," + extra + "}";
}
const std::string kBytes16(16, '\0');
// "item,item,...", `count` of them.
std::string list_of(const std::string& item, int count) {
  std::string text = item;
  for (int i = 1; i < count; ++i) text += "," + item;
  return text;
}

std::vector<Case> cases() {
  const std::string in = "inputs[0] ('x'): ";
  return {
      {"not JSON", "{not json", "", Header::none, "", 400, "the request body is not valid JSON"},
      {"empty body", "", "", Header::none, "", 400,
       "the request body is empty; expected a JSON object"},
      {"an array", "[1,2]", "", Header::none, "", 400, "the request body is not a JSON object"},
      {"no inputs", "{}", "", Header::none, "", 400, "'inputs' is missing"},
      {"inputs an object", R"({"inputs":{}})", "", Header::none, "", 400,
       "'inputs' is not an array"},
      {"inputs empty", R"({"inputs":[]})", "", Header::none, "", 400,
       "'inputs': input 'x' of model 'mlp' is missing"},
      {"input a number", R"({"inputs":[3]})", "", Header::none, "", 400,
       "inputs[0] is not an object"},
      {"no name", one(R"("datatype":"FP32","shape":[1,4],)" + kData), "", Header::none, "", 400,
       "inputs[0]: 'name' is missing"},
      {"name a number", one(R"("name":7,"datatype":"FP32","shape":[1,4],)" + kData), "",
       Header::none, "", 400, "inputs[0]: 'name' is not a string"},
      {"unknown input", one(R"("name":"z","datatype":"FP32","shape":[1,4],)" + kData), "",
       Header::none, "", 400, "inputs[0]: model 'mlp' has no input 'z'"},
      {"input twice", R"({"inputs":[{)" + kX + "," + kData + "},{" + kX + "," + kData + "}]}", "",
       Header::none, "", 400, "inputs[1]: input 'x' is given twice"},
      {"no datatype", one(R"("name":"x","shape":[1,4],)" + kData), "", Header::none, "", 400,
       in + "'datatype' is missing"},
      {"datatype a number", one(R"("name":"x","datatype":32,"shape":[1,4],)" + kData), "",
       Header::none, "", 400, in + "'datatype' is not a string"},
      {"unknown datatype", one(R"("name":"x","datatype":"FP99","shape":[1,4],)" + kData), "",
       Header::none, "", 400, in + "datatype 'FP99' is not one hal serves"},
      {"BYTES", one(R"("name":"x","datatype":"BYTES","shape":[1,4],)" + kData), "", Header::none,
       "", 400, in + "datatype 'BYTES' is not one hal serves"},
      {"wrong datatype", one(R"("name":"x","datatype":"INT32","shape":[1,4],)" + kData), "",
       Header::none, "", 400, in + "datatype INT32 does not match the model's FP32"},
      {"no shape", one(R"("name":"x","datatype":"FP32",)" + kData), "", Header::none, "", 400,
       in + "'shape' is missing"},
      {"shape a string", one(R"("name":"x","datatype":"FP32","shape":"1x4",)" + kData), "",
       Header::none, "", 400, in + "'shape' is not an array"},
      {"negative dimension", one(R"("name":"x","datatype":"FP32","shape":[-1,4],)" + kData), "",
       Header::none, "", 400, in + "shape[0] is -1, out of range (0 to 2147483647)"},
      {"fractional dimension", one(R"("name":"x","datatype":"FP32","shape":[1.5,4],)" + kData), "",
       Header::none, "", 400, in + "shape[0] is not an integer"},
      {"wrong rank", one(R"("name":"x","datatype":"FP32","shape":[4],)" + kData), "", Header::none,
       "", 400, in + "shape [4] has rank 1; the model's is [-1, 4]"},
      {"wrong dimension", one(R"("name":"x","datatype":"FP32","shape":[1,5],"data":[1,2,3,4,5])"),
       "", Header::none, "", 400,
       in + "shape [1, 5] does not match the model's [-1, 4] at dimension 1"},
      {"empty batch", one(R"("name":"x","datatype":"FP32","shape":[0,4],"data":[])"), "",
       Header::none, "", 400, in + "the batch dimension (shape[0]) is 0"},
      {"batch too large", one(R"("name":"x","datatype":"FP32","shape":[9,4],)" + kData), "",
       Header::none, "", 400, in + "a batch of 9 exceeds the model's max batch of 8"},
      {"no data", one(kX), "", Header::none, "", 400, in + "'data' is missing"},
      {"data a string", one(kX + R"(,"data":"abc")"), "", Header::none, "", 400,
       in + "'data' is not an array"},
      {"too little data", one(kX + R"(,"data":[1,2,3])"), "", Header::none, "", 400,
       in + "'data' has 3 elements; shape [1, 4] holds 4"},
      {"too much data", one(kX + R"(,"data":[1,2,3,4,5,6])"), "", Header::none, "", 400,
       in + "'data' has more than 4 elements; shape [1, 4] holds 4"},
      {"ragged data", one(kX + R"(,"data":[[1,2],[3]])"), "", Header::none, "", 400,
       in + "'data' has 3 elements; shape [1, 4] holds 4"},
      {"data nested past the shape", one(kX + R"(,"data":[[[1,2,3,4]]])"), "", Header::none, "",
       400, in + "'data' is nested deeper than its shape"},
      // Walked level by level, a million would take the handler thread's stack.
      {"data nested a million deep",
       one(kX + R"(,"data":)" + std::string(1'000'000, '[') + std::string(1'000'000, ']')), "",
       Header::none, "", 400, in + "'data' is nested deeper than its shape"},
      {"a string element", one(kX + R"(,"data":["a",2,3,4])"), "", Header::none, "", 400,
       in + "data[0] is not a number"},
      {"a boolean element", one(kX + R"(,"data":[1,true,3,4])"), "", Header::none, "", 400,
       in + "data[1] is not a number"},
      {"a null element", one(kX + R"(,"data":[1,2,null,4])"), "", Header::none, "", 400,
       in + "data[2] is not a number"},
      // Stored as FP32, it would be infinity: the model would see another number than was sent.
      {"past FP32's range", one(kX + R"(,"data":[1,2,1e39,4])"), "", Header::none, "", 400,
       in + "data[2] is 1e+39, which FP32 cannot hold (its largest is 3.4028234663852886e+38)"},
      {"past FP64's range", one(kX + R"(,"data":[1,2,1e400,4])"), "", Header::none, "", 400,
       "the request body holds the number 1e400, beyond FP64's range"},
      // Read before its shape, 'data' is kept only as far as the model's input holds (32 at
      // its max batch); the answer is the same.
      {"data before its shape",
       one(R"("name":"x","datatype":"FP32","data":[)" + list_of("0", 40) + R"(],"shape":[1,4])"),
       "", Header::none, "", 400, in + "'data' has more than 4 elements; shape [1, 4] holds 4"},
      {"shape of 65 dimensions",
       one(R"("name":"x","datatype":"FP32","shape":[)" + list_of("1", 65) + "]"), "", Header::none,
       "", 400, in + "'shape' has more than 64 dimensions"},
      {"input parameters a list", one(kX + "," + kData + R"(,"parameters":[])"), "", Header::none,
       "", 400, in + "'parameters' is not an object"},
      {"parameters a string", with(R"("parameters":"fast")"), "", Header::none, "", 400,
       "'parameters' is not an object"},
      {"negative timeout", with(R"("parameters":{"timeout_us":-5})"), "", Header::none, "", 400,
       "parameters.timeout_us is -5, out of range (1 to 9223372036854775)"},
      // Non-negative integers take another path through the JSON reader: the low end holds too.
      {"zero timeout", with(R"("parameters":{"timeout_us":0})"), "", Header::none, "", 400,
       "parameters.timeout_us is 0, out of range (1 to 9223372036854775)"},
      {"timeout a string", with(R"("parameters":{"timeout_us":"soon"})"), "", Header::none, "", 400,
       "parameters.timeout_us is not an integer"},
      // Triton's name for the same limit is checked alike, naming it.
      {"negative Triton timeout", with(R"("parameters":{"timeout":-5})"), "", Header::none, "", 400,
       "parameters.timeout is -5, out of range (0 to 9223372036854775)"},
      {"Triton timeout a string", with(R"("parameters":{"timeout":"soon"})"), "", Header::none, "",
       400, "parameters.timeout is not an integer"},
      {"timeout and timeout_us differ", with(R"("parameters":{"timeout":1000,"timeout_us":2000})"),
       "", Header::none, "", 400,
       "parameters.timeout (1000) and parameters.timeout_us (2000) differ; give one of them"},
      {"priority out of range", with(R"("parameters":{"priority":3})"), "", Header::none, "", 400,
       "parameters.priority is 3, out of range (0 to 2)"},
      {"negative priority", with(R"("parameters":{"priority":-1})"), "", Header::none, "", 400,
       "parameters.priority is -1, out of range (0 to 2)"},
      {"binary_data_output a number", with(R"("parameters":{"binary_data_output":1})"), "",
       Header::none, "", 400, "parameters.binary_data_output is not true or false"},
      {"id a number", with(R"("id":5)"), "", Header::none, "", 400, "'id' is not a string"},
      {"outputs an object", with(R"("outputs":{})"), "", Header::none, "", 400,
       "'outputs' is not an array"},
      {"unknown output", with(R"("outputs":[{"name":"z"}])"), "", Header::none, "", 400,
       "outputs[0]: model 'mlp' has no output 'z'"},
      {"output without a name", with(R"("outputs":[{}])"), "", Header::none, "", 400,
       "outputs[0]: 'name' is missing"},
      {"output twice", with(R"("outputs":[{"name":"y"},{"name":"y"}])"), "", Header::none, "", 400,
       "outputs[1]: output 'y' is asked for twice"},
      {"binary_data a string",
       with(R"("outputs":[{"name":"y","parameters":{"binary_data":"yes"}}])"), "", Header::none, "",
       400, "outputs[0]: parameters.binary_data is not true or false"},
      {"header length not a number", one(kX + "," + kData), "", Header::text, "abc", 400,
       "Inference-Header-Content-Length 'abc' is not a whole number"},
      // Bytes that are not UTF-8 come back as U+FFFD in the error's JSON.
      {"header length not UTF-8", one(kX + "," + kData), "", Header::text, "\xff", 400,
       "Inference-Header-Content-Length '\xef\xbf\xbd' is not a whole number"},
      {"header length past the body", one(kX + "," + kData), "", Header::text, "999", 400,
       "Inference-Header-Content-Length 999 is larger than the body (" +
           std::to_string(one(kX + "," + kData).size()) + " bytes)"},
      {"binary without the header", one(kX + R"(,"parameters":{"binary_data_size":16})"), "",
       Header::none, "", 400,
       in + "parameters.binary_data_size needs the Inference-Header-Content-Length header"},
      {"wrong binary size", one(kX + R"(,"parameters":{"binary_data_size":8})"),
       std::string(8, '\0'), Header::exact, "", 400,
       in + "parameters.binary_data_size is 8 bytes; shape [1, 4] of FP32 needs 16"},
      {"binary cut short", one(kX + R"(,"parameters":{"binary_data_size":16})"),
       std::string(8, '\0'), Header::exact, "", 400,
       in + "the body ends before its 16 bytes of binary data"},
      {"bytes after the binary", one(kX + R"(,"parameters":{"binary_data_size":16})"),
       kBytes16 + "tail", Header::exact, "", 400,
       "the body has 4 bytes after the binary data its inputs declare"},
      {"data and binary", one(kX + "," + kData + R"(,"parameters":{"binary_data_size":16})"),
       kBytes16, Header::exact, "", 400, in + "has both 'data' and parameters.binary_data_size"},
      {"binary size negative", one(kX + R"(,"parameters":{"binary_data_size":-16})"), kBytes16,
       Header::exact, "", 400,
       in + "parameters.binary_data_size is -16, out of range (0 to 9223372036854775807)"},
      {"unknown model", one(kX + "," + kData), "", Header::none, "", 404, "unknown model 'nope'",
       "/v2/models/nope/infer"},
      {"unknown model not UTF-8", one(kX + "," + kData), "", Header::none, "", 404,
       "unknown model '\xef\xbf\xbd'", "/v2/models/%FF/infer"},
      {"unknown version", one(kX + "," + kData), "", Header::none, "", 404,
       "model 'mlp' has no version '7' (it has 1)", "/v2/models/mlp/versions/7/infer"},
  };
}

TEST(ServeMalformed, EachRequestIsRefusedNamingWhatWasWrong) {
  TempDir dir;
  ServedModel served(options_for("mlp", dir.write("mlp.onnx", mlp_bytes(4, 8, 3))));
  const std::vector<Case> table = cases();
  ASSERT_GE(table.size(), 30u);
  for (const Case& c : table) {
    httplib::Headers headers;
    if (c.header == Header::exact)
      headers.emplace("Inference-Header-Content-Length", std::to_string(c.body.size()));
    if (c.header == Header::text) headers.emplace("Inference-Header-Content-Length", c.header_text);
    auto answer = served.client->Post(c.path, headers, c.body + c.binary, "application/json");
    ASSERT_TRUE(answer) << c.label;
    EXPECT_EQ(answer->status, c.status) << c.label;
    const json body = json::parse(answer->body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << c.label << ": " << answer->body;
    EXPECT_EQ(body.value("error", ""), c.error) << c.label;
  }
  // None reached the model, and the server still answers a good request.
  const std::string text = served.server.metrics_text();
  EXPECT_EQ(text.find("hal_batch_size_count{model=\"mlp\"}"), std::string::npos);
  auto good =
      served.client->Post("/v2/models/mlp/infer", one(kX + "," + kData), "application/json");
  EXPECT_EQ(good->status, 200);
}

// The largest timeout_us the protocol takes (INT64_MAX / 1000) lies past what the clock holds
// as a deadline: it is no limit, not one already past (which answered 504 at once). Triton's
// `timeout` takes the same values.
TEST(ServeMalformed, TheLargestTimeoutIsServed) {
  TempDir dir;
  ServedModel served(options_for("mlp", dir.write("mlp.onnx", mlp_bytes(4, 8, 3))));
  for (const std::string name : {"timeout_us", "timeout"})
    for (const std::string timeout : {"9223372036854775", "9000000000000000", "1000000"}) {
      auto answer = served.client->Post("/v2/models/mlp/infer",
                                        with(R"("parameters":{")" + name + R"(":)" + timeout + "}"),
                                        "application/json");
      ASSERT_TRUE(answer) << name << " " << timeout;
      EXPECT_EQ(answer->status, 200) << name << " " << timeout << ": " << answer->body;
    }
}

// Priority 0 is the model's default level, as Triton reads it (it crashed the server: the level
// below 1 was read as the queue's 2^64 - 1st).
TEST(ServeMalformed, PriorityZeroIsTheDefaultLevel) {
  TempDir dir;
  ServedModel served(options_for("mlp", dir.write("mlp.onnx", mlp_bytes(4, 8, 3))));
  for (int round = 0; round < 3; ++round) {
    auto answer = served.client->Post("/v2/models/mlp/infer",
                                      with(R"("parameters":{"priority":0})"), "application/json");
    ASSERT_TRUE(answer) << "round " << round;
    EXPECT_EQ(answer->status, 200) << answer->body;
  }
}

}  // namespace
}  // namespace hal::test
