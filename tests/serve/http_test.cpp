// The KServe v2 endpoints over loopback with cpp-httplib's client: every endpoint, JSON and
// binary tensors checked against the model run in process, batching seen in the metrics,
// overload, timeouts, models that do not batch, instances on several devices, bad options.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "hal/error.hpp"
#include "serve_fixture.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using json = nlohmann::json;

class ServeHttp : public ::testing::Test {
 protected:
  TempDir dir;
  std::filesystem::path mlp = dir.write("mlp.onnx", mlp_bytes(4, 8, 3));
};

void expect_error(const std::function<void()>& fn, ErrorCode code, const std::string& part) {
  hal::test::expect_error(fn, code, std::vector<std::string>{part});
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << "element " << i;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One answer read off a connection of the test's own.
struct RawAnswer {
  int status = 0;  // 0: none came within 3 s
  std::string error;
  double seconds = 0;  // from the request's last byte to the answer's
};

// Writes `request` as it is on a new connection to 127.0.0.1:`port` and reads one answer for up
// to 3 s. The connection is left open: a server waiting for more of the request answers nothing
// in that time. (httplib writes nothing to a client that has shut its writing side.)
RawAnswer raw_request(int port, const std::string& request) {
  RawAnswer answer;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    if (fd >= 0) ::close(fd);
    return answer;
  }
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  const auto start = std::chrono::steady_clock::now();
  std::string text;
  size_t header_end = std::string::npos, length = 0;
  while (seconds_since(start) < 3) {
    if (header_end == std::string::npos &&
        (header_end = text.find("\r\n\r\n")) != std::string::npos) {
      const size_t field = text.find("\r\nContent-Length: ");
      if (field < header_end) length = std::stoul(text.substr(field + 18));
    }
    if (header_end != std::string::npos && text.size() >= header_end + 4 + length) {
      answer.status = std::stoi(text.substr(9, 3));  // "HTTP/1.1 404 Not Found"
      const json parsed = json::parse(text.substr(header_end + 4, length), nullptr, false);
      if (parsed.is_object()) answer.error = parsed.value("error", std::string());
      answer.seconds = seconds_since(start);
      break;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char chunk[4096];
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) break;
    text.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return answer;
}

TEST_F(ServeHttp, HealthMetadataAndReadyEndpoints) {
  ServedModel served(options_for("mlp", mlp));
  auto& c = *served.client;
  auto live = c.Get("/v2/health/live");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->status, 200);
  EXPECT_EQ(json::parse(live->body)["live"], true);
  auto ready = c.Get("/v2/health/ready");
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(json::parse(ready->body)["ready"], true);
  auto server = json::parse(c.Get("/v2")->body);
  EXPECT_EQ(server["name"], "hal");
  EXPECT_EQ(server["extensions"], json({"binary_tensor_data"}));

  for (const std::string path : {"/v2/models/mlp", "/v2/models/mlp/versions/1"}) {
    auto metadata = c.Get(path);
    ASSERT_EQ(metadata->status, 200) << path;
    const json m = json::parse(metadata->body);
    EXPECT_EQ(m["name"], "mlp");
    EXPECT_EQ(m["inputs"], json::parse(R"([{"name":"x","datatype":"FP32","shape":[-1,4]}])"));
    EXPECT_EQ(m["outputs"], json::parse(R"([{"name":"y","datatype":"FP32","shape":[-1,3]}])"));
    EXPECT_EQ(m["parameters"]["max_batch_size"], 8);
  }
  auto model_ready = c.Get("/v2/models/mlp/ready");
  EXPECT_EQ(model_ready->status, 200);
  EXPECT_EQ(json::parse(model_ready->body)["ready"], true);

  auto unknown = c.Get("/v2/models/nope/ready");
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(json::parse(unknown->body)["error"], "unknown model 'nope'");
  auto version = c.Get("/v2/models/mlp/versions/2");
  EXPECT_EQ(version->status, 404);
  EXPECT_EQ(json::parse(version->body)["error"], "model 'mlp' has no version '2' (it has 1)");
  auto no_route = c.Get("/v3/anything");
  EXPECT_EQ(no_route->status, 404);
  EXPECT_EQ(json::parse(no_route->body)["error"], "no route for GET /v3/anything");
  // A path that decodes to bytes that are not UTF-8 gets its error too (a strict JSON dump of
  // it threw in the error handler, which ended the server).
  auto not_utf8 = c.Get("/%FF");
  ASSERT_TRUE(not_utf8);
  EXPECT_EQ(not_utf8->status, 404);
  EXPECT_EQ(json::parse(not_utf8->body)["error"], "no route for GET /\xef\xbf\xbd");
  EXPECT_EQ(c.Get("/v2/models/%FF")->status, 404);

  auto metrics = c.Get("/metrics");
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  for (const char* family : {"hal_requests_total", "hal_request_duration_seconds",
                             "hal_queue_duration_seconds", "hal_batch_size", "hal_queue_depth",
                             "hal_device_busy_ratio", "hal_device_memory_used_bytes"})
    EXPECT_NE(metrics->body.find(std::string("# TYPE ") + family + " "), std::string::npos)
        << family;
  EXPECT_EQ(metric(metrics->body, "hal_queue_depth{model=\"mlp\"}"), 0);
  EXPECT_GE(metric(metrics->body, "hal_device_busy_ratio{device=\"cpu:0\"}"), 0);
}

TEST_F(ServeHttp, JsonTensorsMatchTheModelRunInProcess) {
  ServedModel served(options_for("mlp", mlp));
  const std::vector<float> x = rows_of(3, 4);
  json body = infer_body(x, 3, 4);
  body["id"] = "request-7";
  auto answer = served.client->Post("/v2/models/mlp/infer", body.dump(), "application/json");
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->status, 200) << answer->body;
  const json out = json::parse(answer->body);
  EXPECT_EQ(out["model_name"], "mlp");
  EXPECT_EQ(out["id"], "request-7");
  ASSERT_EQ(out["outputs"].size(), 1u);
  EXPECT_EQ(out["outputs"][0]["name"], "y");
  EXPECT_EQ(out["outputs"][0]["datatype"], "FP32");
  EXPECT_EQ(out["outputs"][0]["shape"], json({3, 3}));
  expect_close(out["outputs"][0]["data"].get<std::vector<float>>(), reference(mlp, x, 3));

  // Nested data (row by row) is the same tensor.
  json nested = body;
  nested["inputs"][0]["data"] = json::array();
  for (int r = 0; r < 3; ++r)
    nested["inputs"][0]["data"].push_back(
        std::vector<float>(x.begin() + r * 4, x.begin() + r * 4 + 4));
  auto again = served.client->Post("/v2/models/mlp/infer", nested.dump(), "application/json");
  ASSERT_EQ(again->status, 200) << again->body;
  expect_close(json::parse(again->body)["outputs"][0]["data"].get<std::vector<float>>(),
               reference(mlp, x, 3));
}

TEST_F(ServeHttp, BinaryTensorsMatchTheModelRunInProcess) {
  ServedModel served(options_for("mlp", mlp));
  const std::vector<float> x = rows_of(2, 4, 0.5f);
  const json header = {{"inputs",
                        {{{"name", "x"},
                          {"shape", {2, 4}},
                          {"datatype", "FP32"},
                          {"parameters", {{"binary_data_size", 32}}}}}},
                       {"outputs", {{{"name", "y"}, {"parameters", {{"binary_data", true}}}}}}};
  const std::string text = header.dump();
  std::string body = text;
  body.append(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
  httplib::Headers headers{{"Inference-Header-Content-Length", std::to_string(text.size())}};
  auto answer =
      served.client->Post("/v2/models/mlp/infer", headers, body, "application/octet-stream");
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->status, 200) << answer->body;
  const size_t length = std::stoul(answer->get_header_value("Inference-Header-Content-Length"));
  const json out = json::parse(answer->body.substr(0, length));
  EXPECT_EQ(out["outputs"][0]["parameters"]["binary_data_size"], 24);
  EXPECT_FALSE(out["outputs"][0].contains("data"));
  ASSERT_EQ(answer->body.size(), length + 24);
  std::vector<float> y(6);
  std::memcpy(y.data(), answer->body.data() + length, 24);
  expect_close(y, reference(mlp, x, 2));

  // Binary in, JSON out (binary_data_output false by default).
  const json json_out = {{"inputs", header["inputs"]}};
  const std::string text2 = json_out.dump();
  std::string body2 = text2;
  body2.append(reinterpret_cast<const char*>(x.data()), 32);
  auto answer2 = served.client->Post(
      "/v2/models/mlp/infer", {{"Inference-Header-Content-Length", std::to_string(text2.size())}},
      body2, "application/octet-stream");
  ASSERT_EQ(answer2->status, 200) << answer2->body;
  EXPECT_FALSE(answer2->has_header("Inference-Header-Content-Length"));
  expect_close(json::parse(answer2->body)["outputs"][0]["data"].get<std::vector<float>>(),
               reference(mlp, x, 2));
}

// Requests from many threads, each with rows of its own: the server stacks them (the metrics
// count fewer batches than requests) and hands every request its own rows back.
TEST_F(ServeHttp, BatchesRequestsFromManyThreads) {
  serve::ServerOptions options = options_for("mlp", mlp);
  options.models[0].batching.max_batch = 16;
  options.models[0].batching.max_queue_delay_us = 20'000;  // long enough for company to come
  ServedModel served(options);
  constexpr int kThreads = 12, kEach = 6;
  std::atomic<int> wrong{0}, answered{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", served.server.port());
      c.set_read_timeout(std::chrono::seconds(60));
      for (int i = 0; i < kEach; ++i) {
        const int64_t rows = 1 + (t + i) % 2;
        const std::vector<float> x = rows_of(rows, 4, static_cast<float>(t * kEach + i));
        auto answer =
            c.Post("/v2/models/mlp/infer", infer_body(x, rows, 4).dump(), "application/json");
        if (!answer || answer->status != 200) {
          ++wrong;
          continue;
        }
        ++answered;
        const auto y = json::parse(answer->body)["outputs"][0]["data"].get<std::vector<float>>();
        const auto want = reference(mlp, x, rows);
        for (size_t k = 0; k < want.size(); ++k)
          if (y.size() != want.size() || std::abs(y[k] - want[k]) > 1e-5f) {
            ++wrong;
            break;
          }
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(answered.load(), kThreads * kEach);
  const std::string text = served.client->Get("/metrics")->body;
  const double batches = metric(text, "hal_batch_size_count{model=\"mlp\"}");
  const double rows = metric(text, "hal_batch_size_sum{model=\"mlp\"}");
  EXPECT_EQ(metric(text, "hal_requests_total{model=\"mlp\",code=\"200\"}"), kThreads * kEach);
  EXPECT_GT(batches, 0);
  EXPECT_LT(batches, kThreads * kEach) << "no two requests were ever batched";
  EXPECT_GT(rows / batches, 1.0);
  EXPECT_EQ(metric(text, "hal_request_duration_seconds_count{model=\"mlp\"}"), kThreads * kEach);
}

// With a preferred size of 2 and a long delay, every second request completes a batch that goes
// at once: four requests run as two batches of 2 (without it, one batch of 4 after the delay).
TEST_F(ServeHttp, APreferredBatchSizeGoesAtOnce) {
  serve::ServerOptions options = options_for("mlp", mlp);
  options.models[0].batching.max_batch = 8;
  options.models[0].batching.preferred_batch_sizes = {2};
  options.models[0].batching.max_queue_delay_us = 5'000'000;
  ServedModel served(options);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", served.server.port());
      c.set_read_timeout(std::chrono::seconds(60));
      const std::vector<float> x = rows_of(1, 4, static_cast<float>(i));
      auto answer = c.Post("/v2/models/mlp/infer", infer_body(x, 1, 4).dump(), "application/json");
      if (answer && answer->status == 200 &&
          json::parse(answer->body)["outputs"][0]["data"].get<std::vector<float>>().size() == 3)
        ++ok;
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), 4);
  const std::string text = served.server.metrics_text();
  EXPECT_EQ(metric(text, "hal_batch_size_count{model=\"mlp\"}"), 2) << text;
  EXPECT_EQ(metric(text, "hal_batch_size_sum{model=\"mlp\"}"), 4);
  EXPECT_EQ(metric(text, "hal_batch_size_bucket{model=\"mlp\",le=\"1\"}"), 0);
}

// A full queue answers 503 at once with Retry-After; the requests it holds are still answered.
TEST_F(ServeHttp, AFullQueueAnswers503WithRetryAfter) {
  serve::ServerOptions options = options_for("mlp", mlp);
  options.models[0].batching.max_batch = 64;  // never full: the delay alone sends the batch
  options.models[0].batching.max_queue_delay_us = 1'000'000;
  options.models[0].batching.max_queue = 3;
  ServedModel served(options);
  std::vector<std::thread> waiting;
  std::atomic<int> ok{0};
  for (int i = 0; i < 3; ++i)
    waiting.emplace_back([&] {
      httplib::Client c("127.0.0.1", served.server.port());
      c.set_read_timeout(std::chrono::seconds(60));
      auto answer = c.Post("/v2/models/mlp/infer", infer_body(rows_of(1, 4), 1, 4).dump(),
                           "application/json");
      if (answer && answer->status == 200) ++ok;
    });
  // Until the three wait in the queue (bounded: 10 s).
  for (int i = 0; i < 1000; ++i) {
    if (metric(served.server.metrics_text(), "hal_queue_depth{model=\"mlp\"}") == 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(metric(served.server.metrics_text(), "hal_queue_depth{model=\"mlp\"}"), 3);
  auto refused = served.client->Post("/v2/models/mlp/infer", infer_body(rows_of(1, 4), 1, 4).dump(),
                                     "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(refused->body)["error"],
            "model 'mlp': the queue is full (3 requests); retry later");
  for (auto& thread : waiting) thread.join();
  EXPECT_EQ(ok.load(), 3);
  const std::string text = served.server.metrics_text();
  EXPECT_EQ(metric(text, "hal_requests_total{model=\"mlp\",code=\"503\"}"), 1);
  EXPECT_EQ(metric(text, "hal_batch_size_sum{model=\"mlp\"}"), 3);
}

// hal's timeout_us or Triton's timeout: the 504 names the one the request gave.
TEST_F(ServeHttp, ARequestPastItsTimeoutAnswers504) {
  serve::ServerOptions options = options_for("mlp", mlp);
  options.models[0].batching.max_batch = 64;
  options.models[0].batching.max_queue_delay_us = 2'000'000;
  ServedModel served(options);
  for (const std::string name : {"timeout_us", "timeout"}) {
    json body = infer_body(rows_of(1, 4), 1, 4);
    body["parameters"] = {{name, 1000}};
    auto answer = served.client->Post("/v2/models/mlp/infer", body.dump(), "application/json");
    ASSERT_TRUE(answer) << name;
    EXPECT_EQ(answer->status, 504) << name;
    EXPECT_EQ(json::parse(answer->body)["error"],
              "model 'mlp': the request waited longer than its " + name + " (1000) in the queue");
  }
}

TEST_F(ServeHttp, AModelWithAFixedBatchServesItsShapeAlone) {
  const auto fixed = dir.write("fixed.onnx", mlp_bytes(4, 8, 3, "2"));
  ServedModel served(options_for("fixed", fixed));
  EXPECT_EQ(
      json::parse(served.client->Get("/v2/models/fixed")->body)["parameters"]["max_batch_size"], 0);
  const std::vector<float> x = rows_of(2, 4);
  auto answer =
      served.client->Post("/v2/models/fixed/infer", infer_body(x, 2, 4).dump(), "application/json");
  ASSERT_EQ(answer->status, 200) << answer->body;
  expect_close(json::parse(answer->body)["outputs"][0]["data"].get<std::vector<float>>(),
               reference(fixed, x, 2));
  auto wrong = served.client->Post("/v2/models/fixed/infer", infer_body(rows_of(3, 4), 3, 4).dump(),
                                   "application/json");
  EXPECT_EQ(wrong->status, 400);
  EXPECT_EQ(json::parse(wrong->body)["error"],
            "inputs[0] ('x'): shape [3, 4] does not match the model's [2, 4] at dimension 0");
}

// An optional input (an initializer's default) is listed in the metadata, marked optional; a
// request may leave it out (the default is used) or give it (checked as any input is). It was
// missing from the metadata, and a request giving it was refused as an unknown input.
TEST_F(ServeHttp, AnOptionalInputIsListedAndMayBeGivenOrLeftOut) {
  const auto path = dir.write("optional.onnx", optional_weight_bytes());
  ServedModel served(options_for("sub", path));
  auto& c = *served.client;
  const json metadata = json::parse(c.Get("/v2/models/sub")->body);
  EXPECT_EQ(metadata["inputs"], json::parse(R"([{"name":"x","datatype":"FP32","shape":[-1,2]},
                            {"name":"w","datatype":"FP32","shape":[2],"optional":true}])"));
  EXPECT_EQ(metadata["parameters"]["max_batch_size"], 8);
  const auto infer = [&](json inputs) {
    return c.Post("/v2/models/sub/infer", json{{"inputs", std::move(inputs)}}.dump(),
                  "application/json");
  };
  const json x = {
      {"name", "x"}, {"shape", {2, 2}}, {"datatype", "FP32"}, {"data", {10, 20, 30, 40}}};
  auto left_out = infer({x});
  ASSERT_EQ(left_out->status, 200) << left_out->body;
  EXPECT_EQ(json::parse(left_out->body)["outputs"][0]["data"], json({9.0, 18.0, 29.0, 38.0}));
  auto given =
      infer({{{"name", "w"}, {"shape", {2}}, {"datatype", "FP32"}, {"data", {100, 200}}}, x});
  ASSERT_EQ(given->status, 200) << given->body;
  EXPECT_EQ(json::parse(given->body)["outputs"][0]["data"], json({-90.0, -180.0, -70.0, -160.0}));
  auto again = infer({x});  // the default again
  EXPECT_EQ(json::parse(again->body)["outputs"][0]["data"], json({9.0, 18.0, 29.0, 38.0}));

  auto wrong_shape =
      infer({x, {{"name", "w"}, {"shape", {3}}, {"datatype", "FP32"}, {"data", {1, 2, 3}}}});
  EXPECT_EQ(wrong_shape->status, 400);
  EXPECT_EQ(json::parse(wrong_shape->body)["error"],
            "inputs[1] ('w'): shape [3] does not match the model's [2] at dimension 0");
  auto wrong_type =
      infer({x, {{"name", "w"}, {"shape", {2}}, {"datatype", "INT32"}, {"data", {1, 2}}}});
  EXPECT_EQ(wrong_type->status, 400);
  EXPECT_EQ(json::parse(wrong_type->body)["error"],
            "inputs[1] ('w'): datatype INT32 does not match the model's FP32");
  auto only_w = infer({{{"name", "w"}, {"shape", {2}}, {"datatype", "FP32"}, {"data", {1, 2}}}});
  EXPECT_EQ(only_w->status, 400);
  EXPECT_EQ(json::parse(only_w->body)["error"], "'inputs': input 'x' of model 'sub' is missing");
}

// Requests that wait long enough to share a batch, some giving the optional input w and some
// not: a request giving w runs in a batch of its own (its w would hold for the batch), the
// others batch as before, and each gets its own answer.
TEST_F(ServeHttp, RequestsGivingAnOptionalInputAreNeverBatchedWithOthers) {
  const auto path = dir.write("optional.onnx", optional_weight_bytes());
  serve::ServerOptions options = options_for("sub", path);
  options.models[0].batching.max_queue_delay_us = 300'000;  // long enough for company to come
  ServedModel served(options);
  // Request i (n = i + 1): x = [n, 10 n]; w, where `gives_w`, [100 n, 200 n].
  const std::vector<bool> gives_w = {false, true, true, false};
  std::vector<json> answers(gives_w.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < gives_w.size(); ++i)
    threads.emplace_back([&, i] {
      const float n = static_cast<float>(i + 1);
      json inputs = {
          {{"name", "x"}, {"shape", {1, 2}}, {"datatype", "FP32"}, {"data", {n, 10 * n}}}};
      if (gives_w[i])
        inputs.push_back(
            {{"name", "w"}, {"shape", {2}}, {"datatype", "FP32"}, {"data", {100 * n, 200 * n}}});
      httplib::Client client("127.0.0.1", served.server.port());
      client.set_read_timeout(std::chrono::seconds(60));
      auto answer =
          client.Post("/v2/models/sub/infer", json{{"inputs", inputs}}.dump(), "application/json");
      answers[i] = answer ? json::parse(answer->body, nullptr, false) : json("no answer");
    });
  for (auto& thread : threads) thread.join();
  for (size_t i = 0; i < gives_w.size(); ++i) {
    const float n = static_cast<float>(i + 1);
    const json want =
        gives_w[i] ? json({n - 100 * n, 10 * n - 200 * n}) : json({n - 1, 10 * n - 2});
    ASSERT_TRUE(answers[i].contains("outputs")) << i << ": " << answers[i];
    EXPECT_EQ(answers[i]["outputs"][0]["data"], want) << "request " << i;
  }
  const std::string text = served.server.metrics_text();
  EXPECT_EQ(metric(text, "hal_requests_total{model=\"sub\",code=\"200\"}"), 4) << text;
  EXPECT_EQ(metric(text, "hal_batch_size_sum{model=\"sub\"}"), 4);
  EXPECT_GE(metric(text, "hal_batch_size_count{model=\"sub\"}"), 3);
}

// One instance on each device: every answer is the model's, whichever device ran it.
TEST_F(ServeHttp, InstancesOnSeveralDevicesAllAnswer) {
  std::vector<std::string> ids = {"cpu:0"};
  for (const Device& d : backend_devices("sim")) ids.push_back(d.id());
  if (ids.size() < 3) GTEST_SKIP() << "needs two sim devices (HAL_SIM_CONFIG=devices=2)";
  serve::ServerOptions options = options_for("mlp", mlp, ids);
  options.balancer = serve::Balancer::round_robin;
  options.models[0].batching.max_queue_delay_us = 0;
  ServedModel served(options);
  for (int i = 0; i < 12; ++i) {
    const std::vector<float> x = rows_of(2, 4, static_cast<float>(i));
    auto answer =
        served.client->Post("/v2/models/mlp/infer", infer_body(x, 2, 4).dump(), "application/json");
    ASSERT_EQ(answer->status, 200) << answer->body;
    expect_close(json::parse(answer->body)["outputs"][0]["data"].get<std::vector<float>>(),
                 reference(mlp, x, 2));
  }
  const std::string text = served.server.metrics_text();
  for (const std::string& id : ids)
    EXPECT_GT(metric(text, "hal_instance_rows_total{model=\"mlp\",device=\"" + id + "\"}"), 0)
        << id;
}

// curl -d and Python's urllib send Content-Type application/x-www-form-urlencoded, for which
// httplib itself would refuse a body over 8192 bytes (413); a chunked body is read as well.
TEST_F(ServeHttp, ALargeFormUrlencodedOrChunkedBodyIsServed) {
  ServedModel served(options_for("mlp", mlp));
  const std::vector<float> x = rows_of(2, 4);
  const std::string body = infer_body(x, 2, 4).dump() + std::string(9000, ' ');
  auto form =
      served.client->Post("/v2/models/mlp/infer", body, "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  ASSERT_EQ(form->status, 200) << form->body;
  expect_close(json::parse(form->body)["outputs"][0]["data"].get<std::vector<float>>(),
               reference(mlp, x, 2));
  auto chunked = served.client->Post(
      "/v2/models/mlp/infer",
      [&](size_t, httplib::DataSink& sink) {
        sink.write(body.data(), body.size());
        sink.done();
        return true;
      },
      "application/json");
  ASSERT_TRUE(chunked);
  ASSERT_EQ(chunked->status, 200) << chunked->body;
  // A multipart form is read and refused.
  auto multipart = served.client->Post(
      "/v2/models/mlp/infer", httplib::MultipartFormDataItems{{"x", body, "x.json", "text/plain"}});
  ASSERT_TRUE(multipart);
  EXPECT_EQ(multipart->status, 415);
  EXPECT_EQ(json::parse(multipart->body)["error"],
            "a multipart form is not an inference request: send the JSON (or binary-tensor) "
            "body as it is");
  // Counted as every inference request is, though refused before its body was read as one.
  EXPECT_EQ(metric(served.server.metrics_text(), "hal_requests_total{model=\"mlp\",code=\"415\"}"),
            1);
}

// What httplib refuses before any route says what it is, not "no route".
TEST_F(ServeHttp, RefusedRequestsSayWhy) {
  ServedModel served(options_for("mlp", mlp));
  const int port = served.server.port();
  RawAnswer answer = raw_request(port, "GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n");
  EXPECT_EQ(answer.status, 414);
  EXPECT_EQ(answer.error, "the request line is longer than the server's limit of 8192 bytes");
  answer = raw_request(port, "NOPE / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(answer.error, "malformed HTTP request line");
  // A path no route serves, whatever its body.
  auto put = served.client->Put("/v2/nothing", std::string(9000, 'x'),
                                "application/x-www-form-urlencoded");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 404);
  EXPECT_EQ(json::parse(put->body)["error"], "no route for PUT /v2/nothing");
  auto get = served.client->Get("/v2/models/mlp/infer");
  EXPECT_EQ(get->status, 404);
  EXPECT_EQ(json::parse(get->body)["error"], "no route for GET /v2/models/mlp/infer");
}

// A request that gives no length has no body (RFC 9112): answered at once, not after httplib's
// 5 s read timeout.
TEST_F(ServeHttp, ARequestWithoutContentLengthIsAnsweredAtOnce) {
  ServedModel served(options_for("mlp", mlp));
  const int port = served.server.port();
  RawAnswer answer = raw_request(port, "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(answer.status, 411);
  EXPECT_EQ(answer.error,
            "POST /v2/models/mlp/infer: the request has no Content-Length (nor "
            "Transfer-Encoding: chunked)");
  EXPECT_LT(answer.seconds, 1.0);
  EXPECT_EQ(metric(served.server.metrics_text(), "hal_requests_total{model=\"mlp\",code=\"411\"}"),
            1);
  answer = raw_request(port, "PUT /v2/nothing HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(answer.status, 404);
  EXPECT_EQ(answer.error, "no route for PUT /v2/nothing");
  EXPECT_LT(answer.seconds, 1.0);
  answer = raw_request(port, "DELETE /v2/models/mlp HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(answer.status, 404);
  EXPECT_EQ(answer.error, "no route for DELETE /v2/models/mlp");
  EXPECT_LT(answer.seconds, 1.0);
}

TEST_F(ServeHttp, BadOptionsAreRefusedNamingTheOption) {
  serve::ServerOptions options = options_for("mlp", mlp);
  options.models[0].batching.max_batch = 0;
  expect_error([&] { serve::Server server(options); }, ErrorCode::InvalidArgument,
               "model 'mlp': max_batch 0 is out of range (1 to 65536)");
  options = options_for("mlp", mlp);
  options.models[0].batching.preferred_batch_sizes = {4, 16};
  expect_error([&] { serve::Server server(options); }, ErrorCode::InvalidArgument,
               "model 'mlp': preferred batch size 16 is out of range (1 to max_batch 8)");
  options = options_for("mlp", mlp);
  options.models.push_back(options.models[0]);
  expect_error([&] { serve::Server server(options); }, ErrorCode::InvalidArgument,
               "model 'mlp' is given twice");
  options = options_for("mlp", mlp, {"cpu:0", "cpu:0"});
  expect_error([&] { serve::Server server(options); }, ErrorCode::InvalidArgument,
               "model 'mlp': a device is listed twice");
  options = options_for("mlp", mlp, {"nodevice:3"});
  expect_error([&] { serve::Server server(options); }, ErrorCode::NotFound, "nodevice:3");
  options = options_for("mlp", dir.path() / "missing.onnx");
  expect_error([&] { serve::Server server(options); }, ErrorCode::InvalidArgument, "missing.onnx");
  options = options_for("mlp", mlp);
  options.port = 70000;
  expect_error([&] { serve::Server server(options); }, ErrorCode::InvalidArgument,
               "--port 70000 is out of range (0 to 65535)");
}

TEST_F(ServeHttp, APortInUseIsRefused) {
  ServedModel first(options_for("mlp", mlp));
  serve::ServerOptions options = options_for("mlp", mlp);
  options.port = first.server.port();
  serve::Server second(options);
  expect_error([&] { second.start(); }, ErrorCode::InvalidArgument,
               "hal serve: cannot listen on 127.0.0.1:" + std::to_string(first.server.port()));
}

}  // namespace
}  // namespace hal::test

namespace hal::test {
namespace {

// The paced fleet's slow model (about 0.27 s a row) served on sim:0 alone, batched as asked.
serve::ServerOptions wide_on_sim0(TempDir& dir, int64_t max_batch, int64_t max_queue_delay_us) {
  serve::ServerOptions options =
      options_for("wide", dir.write("wide.onnx", mlp_bytes(256, 1024, 8)), {"sim:0"});
  options.models[0].batching.max_batch = max_batch;
  options.models[0].batching.max_queue_delay_us = max_queue_delay_us;
  return options;
}

struct Answer {
  int status = 0;  // 0: none came
  std::string body;
};

// Posts `body` to model 'wide' on a connection of its own, from a new thread.
std::thread post_to_wide(int port, const std::string& body, Answer& answer) {
  return std::thread([port, &body, &answer] {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(std::chrono::seconds(60));
    if (auto reply = c.Post("/v2/models/wide/infer", body, "application/json"))
      answer = {reply->status, reply->body};
  });
}

// Waits until `count` requests of model 'wide' have come: queued, running or answered 200
// (bounded: 10 s).
bool wide_requests_reach(const serve::Server& server, double count) {
  for (int i = 0; i < 500; ++i) {
    const std::string text = server.metrics_text();
    const double in =
        metric(text, "hal_requests_in_flight{model=\"wide\"}") +
        std::max(0.0, metric(text, "hal_requests_total{model=\"wide\",code=\"200\"}"));
    if (in >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// On the paced fleet (ctest's serve_fleet, where sim:0 does 2 MFLOP/s, hence the suite):
// destroying the server answers what still waits 503 at once instead of running the whole
// queue first.
TEST(ServeFleet, DestroyingTheServerAnswersWhatStillWaits503) {
  if (backend_devices("sim").size() != 4)
    GTEST_SKIP() << "needs the paced fleet of 4 sim devices (ctest -L serve)";
  TempDir dir;
  auto served = std::make_unique<ServedModel>(wide_on_sim0(dir, 1, 0));
  const std::string body = infer_body(rows_of(1, 256), 1, 256).dump();
  const auto alone = std::chrono::steady_clock::now();
  auto first = served->client->Post("/v2/models/wide/infer", body, "application/json");
  const double one_s = seconds_since(alone);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  ASSERT_GT(one_s, 0.1) << "sim:0 is not paced";
  constexpr int kClients = 12;
  std::vector<Answer> answers(kClients);
  std::vector<std::thread> clients;
  for (Answer& answer : answers)
    clients.push_back(post_to_wide(served->server.port(), body, answer));
  wide_requests_reach(served->server, kClients + 1);  // every one in, or 10 s
  const auto destroyed = std::chrono::steady_clock::now();
  served.reset();
  const double destroy_s = seconds_since(destroyed);
  for (auto& client : clients) client.join();
  // The batch running then, not the queue (about kClients * one_s).
  EXPECT_LT(destroy_s, 3 * one_s + 0.5);
  int ok = 0, cut = 0;
  for (const Answer& answer : answers) {
    if (answer.status == 200) ++ok;
    if (answer.status != 503) continue;
    ++cut;
    EXPECT_EQ(json::parse(answer.body)["error"],
              "the server stopped before model 'wide' answered the request");
  }
  EXPECT_EQ(ok + cut, kClients);
  EXPECT_GE(cut, kClients / 2);
}

// At the drain's deadline a batch already running finishes and answers 200, every one of its
// requests (before, those whose HTTP thread was not the one running the batch were answered
// 503 as it ran); what has not begun is answered 503, and drain() says some were cut off.
TEST(ServeFleet, ABatchRunningAtTheDrainDeadlineAnswersAllItsRequests) {
  if (backend_devices("sim").size() != 4)
    GTEST_SKIP() << "needs the paced fleet of 4 sim devices (ctest -L serve)";
  TempDir dir;
  ServedModel served(wide_on_sim0(dir, 2, 5'000'000));  // a batch goes when it is full
  const std::string body = infer_body(rows_of(1, 256), 1, 256).dump();
  const int port = served.server.port();
  std::vector<Answer> answers(3);
  std::vector<std::thread> clients;
  clients.push_back(post_to_wide(port, body, answers[0]));  // waits for company
  ASSERT_TRUE(wide_requests_reach(served.server, 1));
  clients.push_back(post_to_wide(port, body, answers[1]));  // fills the batch of 2: 0.54 s
  ASSERT_TRUE(wide_requests_reach(served.server, 2));
  clients.push_back(post_to_wide(port, body, answers[2]));  // waits behind it
  ASSERT_TRUE(wide_requests_reach(served.server, 3));
  const bool all_answered = served.server.drain(std::chrono::milliseconds(100));
  for (auto& client : clients) client.join();
  EXPECT_EQ(answers[0].status, 200) << answers[0].body;
  EXPECT_EQ(answers[1].status, 200) << answers[1].body;
  EXPECT_EQ(answers[2].status, 503) << answers[2].body;
  EXPECT_EQ(json::parse(answers[2].body, nullptr, false).value("error", ""),
            "the server stopped before model 'wide' answered the request");
  EXPECT_FALSE(all_answered);
}

// A request's timeout holds wherever it waits: in the queue, or in a batch placed on an instance
// behind the one running there (before, it was served there however long it waited).
TEST(ServeFleet, ATimeoutHoldsInABatchWaitingBehindARunningOne) {
  if (backend_devices("sim").size() != 4)
    GTEST_SKIP() << "needs the paced fleet of 4 sim devices (ctest -L serve)";
  TempDir dir;
  ServedModel served(wide_on_sim0(dir, 4, 0));
  const std::string body = infer_body(rows_of(4, 256), 4, 256).dump();  // a full batch, 1.1 s
  Answer first;
  std::thread running = post_to_wide(served.server.port(), body, first);
  wide_requests_reach(served.server, 1);  // it runs, or 10 s
  json late = infer_body(rows_of(1, 256), 1, 256);
  late["parameters"] = {{"timeout_us", 50'000}};
  const auto sent = std::chrono::steady_clock::now();
  auto answer = served.client->Post("/v2/models/wide/infer", late.dump(), "application/json");
  const double waited_s = seconds_since(sent);
  running.join();
  EXPECT_EQ(first.status, 200) << first.body;
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 504) << answer->body;
  EXPECT_EQ(json::parse(answer->body, nullptr, false).value("error", ""),
            "model 'wide': the request waited longer than its timeout_us (50000) in the queue");
  EXPECT_LT(waited_s, 0.8) << "answered when the batch ahead ended, not at its deadline";
}

// y = x + x on INT32: integers in JSON, refused when fractional or out of INT32's range.
TEST(ServeDatatypes, IntegerTensorsRoundTrip) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::INT32, {"batch", "3"});
  b.output("y", onnx::TensorProto::INT32, {"batch", "3"});
  b.node("Add", {"x", "x"}, {"y"});
  ServedModel served(options_for("twice", dir.write("twice.onnx", b.bytes())));
  auto c = [&](const json& data) {
    const json body = {
        {"inputs", {{{"name", "x"}, {"shape", {2, 3}}, {"datatype", "INT32"}, {"data", data}}}}};
    return served.client->Post("/v2/models/twice/infer", body.dump(), "application/json");
  };
  auto answer = c({1, -2, 3, 2147483647 / 2, 0, -1073741824});
  ASSERT_EQ(answer->status, 200) << answer->body;
  const json out = json::parse(answer->body)["outputs"][0];
  EXPECT_EQ(out["datatype"], "INT32");
  EXPECT_EQ(out["data"], json({2, -4, 6, 2147483646, 0, -2147483648LL}));
  auto fractional = c({1, 2.5, 3, 4, 5, 6});
  EXPECT_EQ(fractional->status, 400);
  EXPECT_EQ(json::parse(fractional->body)["error"], "inputs[0] ('x'): data[1] is not an integer");
  auto too_big = c({1, 2, 3, 4, 5, 3000000000LL});
  EXPECT_EQ(too_big->status, 400);
  EXPECT_EQ(json::parse(too_big->body)["error"], "inputs[0] ('x'): data[5] is out of range");
  auto negative = c({1, 2, 3, 4, 5, -3000000000LL});
  EXPECT_EQ(negative->status, 400);
  EXPECT_EQ(json::parse(negative->body)["error"], "inputs[0] ('x'): data[5] is out of range");
  const json metadata = json::parse(served.client->Get("/v2/models/twice")->body);
  EXPECT_EQ(metadata["inputs"][0]["datatype"], "INT32");
}

}  // namespace
}  // namespace hal::test
