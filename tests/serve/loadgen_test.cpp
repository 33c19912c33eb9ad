// hal loadgen's library against a served model: closed and open loop, errors counted, its
// JSON report, and what it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "hal/error.hpp"
#include "hal/loadgen.hpp"
#include "hal/npy.hpp"
#include "serve_fixture.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using json = nlohmann::json;

TEST(ServeLoadgen, ClosedAndOpenLoopLevelsReportEveryRequest) {
  TempDir dir;
  ServedModel served(options_for("mlp", dir.write("mlp.onnx", mlp_bytes(4, 8, 3))));
  serve::LoadgenOptions options;
  options.url = "http://127.0.0.1:" + std::to_string(served.server.port());
  options.model = "mlp";
  options.concurrency = {1, 4};
  options.duration_s = 0.3;
  options.warmup_s = 0.05;
  options.max_requests = 200;
  const auto levels = serve::run_loadgen(options);
  ASSERT_EQ(levels.size(), 2u);
  for (const serve::LoadLevel& level : levels) {
    EXPECT_EQ(level.mode, "concurrency");
    EXPECT_GT(level.requests, 0u);
    EXPECT_LE(level.requests, 200u);
    EXPECT_EQ(level.errors, 0u) << level.first_error;
    EXPECT_GT(level.throughput, 0);
    EXPECT_LE(level.p50_us, level.p90_us);
    EXPECT_LE(level.p90_us, level.p99_us);
  }
  EXPECT_EQ(levels[1].level, 4);

  options.rate = 200;
  options.binary = true;
  const auto open = serve::run_loadgen(options);
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].mode, "rate");
  EXPECT_EQ(open[0].errors, 0u) << open[0].first_error;
  // 200/s for 0.3 s after the warm-up: 60 requests due, each sent on schedule.
  EXPECT_EQ(open[0].requests, 60u);
  const json report = json::parse(serve::loadgen_json(options, open));
  EXPECT_EQ(report["schema"], "hal.loadgen/1");
  EXPECT_EQ(report["levels"][0]["requests"], 60);
  EXPECT_EQ(report["levels"][0]["statuses"]["200"], 60);
  for (const char* p : {"p50", "p90", "p99"})
    EXPECT_TRUE(report["levels"][0]["latency_us"].contains(p)) << p;
  const std::string text = served.server.metrics_text();
  EXPECT_GE(metric(text, "hal_requests_total{model=\"mlp\",code=\"200\"}"),
            static_cast<double>(levels[0].requests + levels[1].requests + 60));
}

TEST(ServeLoadgen, ErrorsAreCountedByStatus) {
  TempDir dir;
  serve::ServerOptions server_options =
      options_for("mlp", dir.write("mlp.onnx", mlp_bytes(4, 8, 3)));
  server_options.models[0].batching.max_queue_delay_us = 0;
  ServedModel served(server_options);
  // An input file of the wrong width: every request is refused with 400.
  Stream stream = device("cpu:0").create_stream();
  const auto npy = dir.path() / "x.npy";
  write_npy(npy, from_vector(std::vector<float>(5, 1.0f), {1, 5}, stream), stream);
  serve::LoadgenOptions options;
  options.url = "http://127.0.0.1:" + std::to_string(served.server.port());
  options.model = "mlp";
  options.input_files = {{"x", npy.string()}};
  options.duration_s = 0.1;
  options.warmup_s = 0;
  options.max_requests = 5;
  const auto levels = serve::run_loadgen(options);
  ASSERT_EQ(levels.size(), 1u);
  EXPECT_EQ(levels[0].requests, 0u);
  EXPECT_EQ(levels[0].errors, 5u);
  EXPECT_EQ(levels[0].statuses.at(400), 5u);
  EXPECT_NE(levels[0].first_error.find("shape [1, 5] does not match the model's [-1, 4]"),
            std::string::npos)
      << levels[0].first_error;
}

// An optional input (metadata "optional": true) is sent only where --input gives it: zeros would
// replace the model's default, and a request giving it runs alone, so that batching is seen
// only when it is left out.
TEST(ServeLoadgen, AnOptionalInputIsSentOnlyWhereAFileGivesIt) {
  TempDir dir;
  serve::ServerOptions server_options =
      options_for("sub", dir.write("optional.onnx", optional_weight_bytes()));
  server_options.models[0].batching.max_queue_delay_us = 20'000;  // long enough for company
  ServedModel served(server_options);
  serve::LoadgenOptions options;
  options.url = "http://127.0.0.1:" + std::to_string(served.server.port());
  options.model = "sub";
  options.concurrency = {4};
  options.duration_s = 0.2;
  options.warmup_s = 0;
  options.max_requests = 40;
  const auto left_out = serve::run_loadgen(options);
  ASSERT_EQ(left_out.size(), 1u);
  EXPECT_GT(left_out[0].requests, 0u);
  EXPECT_EQ(left_out[0].errors, 0u) << left_out[0].first_error;
  const std::string text = served.server.metrics_text();
  EXPECT_GT(metric(text, "hal_batch_size_sum{model=\"sub\"}"),
            metric(text, "hal_batch_size_count{model=\"sub\"}"))
      << "no two requests were batched: w was sent\n"
      << text;

  // Given by a file, it is sent: of the wrong shape, every request is refused naming it.
  Stream stream = device("cpu:0").create_stream();
  const auto npy = dir.path() / "w.npy";
  write_npy(npy, from_vector(std::vector<float>{1, 2, 3}, {3}, stream), stream);
  options.input_files = {{"w", npy.string()}};
  options.concurrency = {1};
  options.max_requests = 3;
  const auto given = serve::run_loadgen(options);
  ASSERT_EQ(given.size(), 1u);
  EXPECT_EQ(given[0].errors, 3u);
  EXPECT_EQ(given[0].statuses.at(400), 3u);
  EXPECT_NE(given[0].first_error.find(
                "inputs[1] ('w'): shape [3] does not match the model's [2] at dimension 0"),
            std::string::npos)
      << given[0].first_error;
}

// A short closed-loop run of `requests` requests against model "mlp" at `url`, each answered.
void expect_every_request_answered(serve::LoadgenOptions options, const std::string& url,
                                   int64_t requests) {
  options.url = url;
  options.model = "mlp";
  options.duration_s = 0.1;
  options.warmup_s = 0;
  options.max_requests = requests;
  const auto levels = serve::run_loadgen(options);
  ASSERT_EQ(levels.size(), 1u);
  EXPECT_EQ(levels[0].errors, 0u) << levels[0].first_error;
  EXPECT_EQ(levels[0].requests, static_cast<size_t>(requests));
}

// JSON has no NaN or infinity (a JSON writer makes them null, which the server refuses): an f32
// input holding them goes as binary data even without --binary, and is answered.
TEST(ServeLoadgen, NonFiniteInputsAreSentAsBinary) {
  TempDir dir;
  ServedModel served(options_for("mlp", dir.write("mlp.onnx", mlp_bytes(4, 8, 3))));
  Stream stream = device("cpu:0").create_stream();
  const auto npy = dir.path() / "x.npy";
  const float nan = std::numeric_limits<float>::quiet_NaN();
  write_npy(npy, from_vector(std::vector<float>{nan, 1, -INFINITY, 2}, {1, 4}, stream), stream);
  serve::LoadgenOptions options;
  options.input_files = {{"x", npy.string()}};
  expect_every_request_answered(options, "http://127.0.0.1:" + std::to_string(served.server.port()),
                                5);
}

// A URL's IPv6 address is in brackets, which are not part of the address to connect to.
TEST(ServeLoadgen, AnIpv6TargetIsReached) {
  TempDir dir;
  serve::ServerOptions server_options =
      options_for("mlp", dir.write("mlp.onnx", mlp_bytes(4, 8, 3)));
  server_options.host = "::1";
  serve::Server server(server_options);
  try {
    server.start();
  } catch (const Error& e) {
    GTEST_SKIP() << "this machine cannot serve on [::1]: " << e.what();
  }
  expect_every_request_answered({}, "http://[::1]:" + std::to_string(server.port()), 3);
}

TEST(ServeLoadgen, BadTargetsAreRefused) {
  TempDir dir;
  ServedModel served(options_for("mlp", dir.write("mlp.onnx", mlp_bytes(4, 8, 3))));
  serve::LoadgenOptions options;
  options.model = "mlp";
  options.url = "ftp://127.0.0.1:1";
  expect_error([&] { serve::run_loadgen(options); }, ErrorCode::InvalidArgument,
               {"--url 'ftp://127.0.0.1:1': expected http://HOST:PORT"});
  options.url = "http://127.0.0.1:" + std::to_string(served.server.port());
  options.model = "other";
  expect_error([&] { serve::run_loadgen(options); }, ErrorCode::InvalidArgument,
               {"answered 404", "unknown model 'other'"});
  options.model = "mlp";
  options.input_files = {{"q", "q.npy"}};
  expect_error([&] { serve::run_loadgen(options); }, ErrorCode::InvalidArgument,
               {"--input q=q.npy: model 'mlp' has no input 'q'"});
  options.input_files.clear();
  options.concurrency = {0};
  expect_error([&] { serve::run_loadgen(options); }, ErrorCode::InvalidArgument,
               {"--concurrency 0 is out of range (1 to 4096)"});
}

}  // namespace
}  // namespace hal::test
