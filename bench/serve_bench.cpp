// `hal bench serve`: hal serve's batching, balancer and HTTP cost, each beside its baseline
// measured in the same run, with hal loadgen's client against an in-process server on
// 127.0.0.1 (figures in docs/PERFORMANCE.md).
//
//   batching_gain      throughput at concurrency 32 with the dynamic batcher vs --max-batch 1,
//                      on cpu:0 with the bench MLP's shape (784 -> 1024 -> 1024 -> 10)
//   balancer_gain      a paced fleet of 4 sim devices (speeds 1:1:2:4) at 80 % of its capacity:
//                      p99 with round-robin / p99 with predicted; and throughput at saturation
//   balancer_vs_least_outstanding   the same load, p99 least-outstanding / p99 predicted
//   http_overhead      p50 of a tiny model's request over HTTP vs running it in process
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "bench_report.hpp"
#include "hal/hal.hpp"
#include "hal/loadgen.hpp"
#include "hal/model.hpp"
#include "hal/serve.hpp"
#include "model_builder.hpp"

namespace hal::bench {
namespace {

// Speeds 1:1:2:4, slow enough that the modelled time dwarfs the host's own work per request
// (13 ms per row on the slow pair for the fleet's model).
constexpr const char* kFleet = "devices=4,pace=1,gflops=0.005:0.005:0.01:0.02,launch_us=20";

// x[batch, in] -> MatMul -> Add -> Relu -> ... -> y[batch, out] with a symbolic batch.
std::string mlp_bytes(const std::vector<int64_t>& widths) {
  test::ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {"batch", std::to_string(widths.front())});
  b.output("y", onnx::TensorProto::FLOAT, {"batch", std::to_string(widths.back())});
  std::string value = "x";
  for (size_t layer = 0; layer + 1 < widths.size(); ++layer) {
    const int64_t in = widths[layer], out = widths[layer + 1];
    std::vector<float> w(static_cast<size_t>(in * out)), bias(static_cast<size_t>(out));
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = static_cast<float>(static_cast<int64_t>(i * 7 % 13) - 6) / (8.0f * in);
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i % 5) / 10.0f;
    const std::string n = std::to_string(layer);
    b.initializer("W" + n, {in, out}, w).initializer("B" + n, {out}, bias);
    b.node("MatMul", {value, "W" + n}, {"m" + n});
    const bool last = layer + 2 == widths.size();
    b.node("Add", {"m" + n, "B" + n}, {last ? "y" : "a" + n});
    if (!last) b.node("Relu", {"a" + n}, {"r" + n});
    value = "r" + n;
  }
  return b.bytes();
}

struct Files {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("hal_bench_serve_" + std::to_string(::getpid()));
  Files() { std::filesystem::create_directories(dir); }
  ~Files() { std::filesystem::remove_all(dir); }
  std::filesystem::path write(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return dir / name;
  }
};

serve::ServerOptions server_for(const std::filesystem::path& model,
                                std::vector<std::string> devices, serve::Balancer balancer,
                                int64_t max_batch, int64_t delay_us) {
  serve::ServerOptions options;
  options.port = 0;
  options.balancer = balancer;
  options.http_threads = 160;
  serve::ModelConfig config;
  config.name = "m";
  config.path = model;
  config.devices = std::move(devices);
  config.batching.max_batch = max_batch;
  config.batching.max_queue_delay_us = delay_us;
  config.batching.max_queue = 100'000;  // latency, not refusals, is what the figures compare
  options.models.push_back(config);
  return options;
}

serve::LoadLevel drive(const serve::ServerOptions& options, double seconds, int64_t concurrency,
                       double rate) {
  serve::Server server(options);
  server.start();
  serve::LoadgenOptions load;
  load.url = "http://127.0.0.1:" + std::to_string(server.port());
  load.model = "m";
  load.binary = true;
  load.duration_s = seconds;
  load.warmup_s = std::min(1.0, seconds / 4);
  load.concurrency = {concurrency};
  load.rate = rate;
  serve::LoadLevel level = serve::run_loadgen(load).front();
  server.drain(std::chrono::seconds(120));
  if (level.errors > 0)
    throw Error(ErrorCode::Internal, "hal bench serve: " + std::to_string(level.errors) +
                                         " requests failed: " + level.first_error);
  return level;
}

void note(const std::string& what, const serve::LoadLevel& level) {
  std::cerr << "hal bench serve: " << what << ": " << level.throughput << " req/s, p50 "
            << level.p50_us << " us, p99 " << level.p99_us << " us (" << level.requests
            << " requests)\n";
}

std::vector<Figure> batching(const Files& files, double seconds) {
  const auto model = files.write("mlp.onnx", mlp_bytes({784, 1024, 1024, 10}));
  const auto batched =
      drive(server_for(model, {"cpu:0"}, serve::Balancer::predicted, 32, 2000), seconds, 32, 0);
  note("cpu:0 MLP, max_batch 32", batched);
  const auto single =
      drive(server_for(model, {"cpu:0"}, serve::Balancer::predicted, 1, 0), seconds, 32, 0);
  note("cpu:0 MLP, max_batch 1", single);
  return {{"batching_gain", batched.throughput, "req/s", "max_batch_1", single.throughput,
           batched.throughput / single.throughput, "higher", ">= 3"}};
}

std::vector<Figure> balancing(const Files& files, double seconds) {
  const auto model = files.write("fleet.onnx", mlp_bytes({64, 256, 64}));
  const std::vector<std::string> fleet = {"sim:0", "sim:1", "sim:2", "sim:3"};
  auto options = [&](serve::Balancer b) { return server_for(model, fleet, b, 8, 1000); };
  // Saturation: more requests in flight than the fleet holds.
  const auto predicted_max = drive(options(serve::Balancer::predicted), seconds, 96, 0);
  note("fleet saturated, predicted", predicted_max);
  const auto round_robin_max = drive(options(serve::Balancer::round_robin), seconds, 96, 0);
  note("fleet saturated, round-robin", round_robin_max);
  // 80 % of the capacity the best balancer reached.
  const double rate = 0.8 * predicted_max.throughput;
  const auto predicted = drive(options(serve::Balancer::predicted), seconds, 1, rate);
  note("fleet at 80 %, predicted", predicted);
  const auto round_robin = drive(options(serve::Balancer::round_robin), seconds, 1, rate);
  note("fleet at 80 %, round-robin", round_robin);
  const auto least = drive(options(serve::Balancer::least_outstanding), seconds, 1, rate);
  note("fleet at 80 %, least-outstanding", least);
  return {
      {"balancer_gain", predicted.p99_us, "us p99", "round_robin_p99", round_robin.p99_us,
       round_robin.p99_us / predicted.p99_us, "higher", ">= 2 (p99 round-robin / predicted)"},
      {"balancer_gain_throughput", predicted_max.throughput, "req/s", "round_robin_saturated",
       round_robin_max.throughput, predicted_max.throughput / round_robin_max.throughput, "higher",
       ">= 1.5"},
      {"balancer_vs_least_outstanding", predicted.p99_us, "us p99", "least_outstanding_p99",
       least.p99_us, least.p99_us / predicted.p99_us, "higher", ">= 1.25"},
      {"fleet_load_80", rate, "req/s", "fleet_capacity", predicted_max.throughput, 0.8, "", ""}};
}

std::vector<Figure> http_overhead(const Files& files, double seconds) {
  const auto path = files.write("tiny.onnx", mlp_bytes({4, 8, 3}));
  // In process: what an instance does per request (copy in, run, copy out, wait).
  const Model model = load_onnx(path);
  Stream stream = device("cpu:0").create_stream();
  const std::vector<float> x(4, 0.5f);
  std::vector<float> y(3);
  std::vector<double> us;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (int i = 0; i < 200000 && (i < 100 || std::chrono::steady_clock::now() < until); ++i) {
    const auto start = std::chrono::steady_clock::now();
    const auto out = model.run({{"x", from_host(x.data(), {1, 4}, DType::f32, stream)}}, stream);
    out.at("y").copy_to_host(y.data(), stream);
    stream.synchronize();
    if (i >= 100)
      us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count());
  }
  std::sort(us.begin(), us.end());
  const double in_process = us[us.size() / 2];
  const auto http =
      drive(server_for(path, {"cpu:0"}, serve::Balancer::predicted, 1, 0), seconds, 1, 0);
  note("tiny model over HTTP", http);
  std::cerr << "hal bench serve: tiny model in process: p50 " << in_process << " us\n";
  return {{"http_overhead", http.p50_us, "us p50", "in_process_p50", in_process,
           http.p50_us / in_process, "lower", "added <= 150 us"},
          {"http_overhead_added", http.p50_us - in_process, "us", "", 0, 0, "lower", "<= 150"}};
}

std::vector<Figure> measure(double seconds) {
  const Files files;
  std::vector<Figure> figures;
  for (auto part : {batching, balancing, http_overhead})
    for (Figure& f : part(files, seconds)) figures.push_back(std::move(f));
  return figures;
}

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  using namespace hal::bench;
  if (!use_sim_fleet("serve", kFleet, 4)) return 2;
  // `hal bench --quick` asks Google Benchmark for short runs; here, 1.5 s per level instead of 4.
  const double seconds = take_option(argc, argv, "--benchmark_min_time", "").empty() ? 4.0 : 1.5;
  return run_suite(argc, argv, "serve", "cpu:0 and sim:0..3 (paced)", {},
                   [seconds] { return measure(seconds); });
}
