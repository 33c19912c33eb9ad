#include "hal/loadgen.hpp"
#include "core/host_cpu.hpp"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "hal/error.hpp"
#include "hal/npy.hpp"
#include "hal/registry.hpp"
#include "hal/version.hpp"
#include "serve/host_tensor.hpp"
#include "serve/kserve_datatype.hpp"

namespace hal::serve {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct Target {
  std::string host;
  int port = 0;
};

Target parse_url(const std::string& url) {
  static const std::regex pattern(R"(http://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:]+\]):([0-9]{1,5})/?)");
  std::smatch match;
  if (!std::regex_match(url, match, pattern) || std::stoi(match[2]) > 65535)
    throw Error(ErrorCode::InvalidArgument, "--url '" + url + "': expected http://HOST:PORT");
  std::string host = match[1];
  if (host.front() == '[') host = host.substr(1, host.size() - 2);  // the URL's brackets only
  return {host, std::stoi(match[2])};
}

std::unique_ptr<httplib::Client> client(const Target& target, double timeout_s) {
  auto c = std::make_unique<httplib::Client>(target.host, target.port);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  const auto timeout = std::chrono::microseconds(static_cast<int64_t>(timeout_s * 1e6));
  c->set_connection_timeout(std::chrono::seconds(5));
  c->set_read_timeout(timeout);
  c->set_write_timeout(timeout);
  return c;
}

bool all_finite_f32(const std::string& bytes) {
  for (size_t at = 0; at + sizeof(float) <= bytes.size(); at += sizeof(float)) {
    float value = 0;
    std::memcpy(&value, bytes.data() + at, sizeof value);
    if (!std::isfinite(value)) return false;
  }
  return true;
}

// The request: each input from its .npy file, or zeros of its declared shape (-1 taken as 1);
// an optional input only where a file gives it (zeros would replace its default, a weight).
struct Body {
  std::string text;
  httplib::Headers headers;
  std::string content_type = "application/json";
};

Body make_body(const LoadgenOptions& options, const json& metadata) {
  Stream stream = hal::detail::host_cpu().create_stream();
  json request{{"inputs", json::array()}};
  std::string binary;
  std::set<std::string> used;
  for (const json& input : metadata.at("inputs")) {
    const std::string name = input.at("name");
    const bool optional = input.contains("optional") && input.at("optional") == true;
    if (optional && !options.input_files.contains(name)) continue;
    const auto dtype = parse_kserve_datatype(input.at("datatype").get<std::string>());
    if (!dtype)
      throw Error(ErrorCode::InvalidArgument, "input '" + name + "': datatype " +
                                                  input.at("datatype").dump() +
                                                  " is not one hal loadgen sends");
    HostTensor tensor{*dtype, {}, {}};
    if (const auto file = options.input_files.find(name); file != options.input_files.end()) {
      const Tensor t = read_npy(file->second, stream);
      if (t.dtype() != *dtype)
        throw Error(ErrorCode::InvalidArgument, "--input " + name + "=" + file->second + ": " +
                                                    std::string(to_string(t.dtype())) +
                                                    " where the model takes " +
                                                    input.at("datatype").get<std::string>());
      tensor.shape = t.shape();
      tensor.bytes.resize(t.nbytes());
      t.copy_to_host(tensor.bytes.data(), stream);
      stream.synchronize();
      used.insert(name);
    } else {
      for (int64_t d : input.at("shape")) tensor.shape.push_back(d < 0 ? 1 : d);
      tensor.bytes.assign(static_cast<size_t>(element_count(tensor.shape)) * size_of(*dtype), '\0');
    }
    json entry{{"name", name}, {"shape", tensor.shape}, {"datatype", input.at("datatype")}};
    // JSON has no NaN or infinity (a JSON writer makes them null): such floats go as binary.
    const bool json_cannot_carry = *dtype == DType::f32 && !all_finite_f32(tensor.bytes);
    if (options.binary || json_cannot_carry ||
        (*dtype != DType::f32 && *dtype != DType::i64 && *dtype != DType::i32)) {
      entry["parameters"] = {{"binary_data_size", tensor.bytes.size()}};
      binary += tensor.bytes;
    } else if (*dtype == DType::f32) {
      std::vector<float> values(tensor.bytes.size() / 4);
      std::memcpy(values.data(), tensor.bytes.data(), tensor.bytes.size());
      entry["data"] = values;
    } else if (*dtype == DType::i64) {
      std::vector<int64_t> values(tensor.bytes.size() / 8);
      std::memcpy(values.data(), tensor.bytes.data(), tensor.bytes.size());
      entry["data"] = values;
    } else {
      std::vector<int32_t> values(tensor.bytes.size() / 4);
      std::memcpy(values.data(), tensor.bytes.data(), tensor.bytes.size());
      entry["data"] = values;
    }
    request["inputs"].push_back(std::move(entry));
  }
  for (const auto& [name, file] : options.input_files)
    if (!used.contains(name))
      throw Error(ErrorCode::InvalidArgument, "--input " + name + "=" + file + ": model '" +
                                                  options.model + "' has no input '" + name + "'");
  if (options.binary) request["parameters"] = {{"binary_data_output", true}};
  Body body;
  body.text = request.dump();
  if (!binary.empty() || options.binary) {
    body.headers.emplace("Inference-Header-Content-Length", std::to_string(body.text.size()));
    body.text += binary;
    body.content_type = "application/octet-stream";
  }
  return body;
}

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto index = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)];
}

// What the senders of one level share.
struct Tally {
  std::mutex mutex;
  std::vector<double> latencies_us;
  LoadLevel level;
  void add(int status, double latency_us, const std::string& error) {
    std::lock_guard lock(mutex);
    ++level.statuses[status];
    if (status == 200) {
      ++level.requests;
      latencies_us.push_back(latency_us);
    } else {
      ++level.errors;
      if (level.first_error.empty()) level.first_error = error;
    }
  }
};

// Sends once; the status (0 where no answer came) and what went wrong.
std::pair<int, std::string> send(httplib::Client& c, const std::string& path, const Body& body) {
  auto result = c.Post(path, body.headers, body.text, body.content_type);
  if (!result) return {0, "no answer: " + httplib::to_string(result.error())};
  if (result->status != 200) return {result->status, result->body};
  return {200, ""};
}

LoadLevel finish(Tally& tally, const std::string& mode, double level, double seconds) {
  std::sort(tally.latencies_us.begin(), tally.latencies_us.end());
  LoadLevel out = std::move(tally.level);
  out.mode = mode;
  out.level = level;
  out.seconds = seconds;
  out.throughput = seconds > 0 ? static_cast<double>(out.requests) / seconds : 0;
  out.p50_us = percentile(tally.latencies_us, 0.50);
  out.p90_us = percentile(tally.latencies_us, 0.90);
  out.p99_us = percentile(tally.latencies_us, 0.99);
  double sum = 0;
  for (double v : tally.latencies_us) sum += v;
  out.mean_us =
      tally.latencies_us.empty() ? 0 : sum / static_cast<double>(tally.latencies_us.size());
  return out;
}

LoadLevel closed_loop(const LoadgenOptions& options, const Target& target, const std::string& path,
                      const Body& body, int64_t concurrency) {
  Tally tally;
  const auto warm_end = Clock::now() + seconds(options.warmup_s);
  const auto end = warm_end + seconds(options.duration_s);
  std::atomic<int64_t> sent{0};
  std::vector<std::thread> threads;
  for (int64_t t = 0; t < concurrency; ++t)
    threads.emplace_back([&] {
      auto c = client(target, options.request_timeout_s);
      while (true) {
        const auto start = Clock::now();
        if (start >= end) return;
        const bool measured = start >= warm_end;
        if (measured && sent.fetch_add(1) >= options.max_requests) return;
        const auto [status, error] = send(*c, path, body);
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
        if (measured) tally.add(status, us, error);
      }
    });
  for (auto& thread : threads) thread.join();
  const double seconds =
      std::chrono::duration<double>(std::min(Clock::now(), end) - warm_end).count();
  return finish(tally, "concurrency", static_cast<double>(concurrency), seconds);
}

// Request i is due at start + i / rate; its latency counts from when it was due, so that a
// server that falls behind is not flattered by requests sent late (coordinated omission).
LoadLevel open_loop(const LoadgenOptions& options, const Target& target, const std::string& path,
                    const Body& body) {
  Tally tally;
  const auto start = Clock::now();
  const auto warm_end = start + seconds(options.warmup_s);
  const auto end = warm_end + seconds(options.duration_s);
  const auto total = static_cast<int64_t>(
      std::min<double>(static_cast<double>(options.max_requests),
                       (options.warmup_s + options.duration_s) * options.rate));
  std::atomic<int64_t> next{0};
  const auto senders =
      std::clamp<int64_t>(static_cast<int64_t>(options.rate * 0.05) + 8, 8, options.max_in_flight);
  std::vector<std::thread> threads;
  for (int64_t t = 0; t < senders; ++t)
    threads.emplace_back([&] {
      auto c = client(target, options.request_timeout_s);
      while (true) {
        const int64_t i = next.fetch_add(1);
        if (i >= total) return;
        const auto due =
            start + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(static_cast<double>(i) / options.rate));
        if (due >= end) return;
        std::this_thread::sleep_until(due);
        const auto [status, error] = send(*c, path, body);
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - due).count();
        if (due >= warm_end) tally.add(status, us, error);
      }
    });
  for (auto& thread : threads) thread.join();
  const double seconds =
      std::chrono::duration<double>(std::min(Clock::now(), end) - warm_end).count();
  return finish(tally, "rate", options.rate, std::max(seconds, 1e-9));
}

}  // namespace

std::vector<LoadLevel> run_loadgen(const LoadgenOptions& options) {
  const Target target = parse_url(options.url);
  if (options.model.empty()) throw Error(ErrorCode::InvalidArgument, "--model: no model named");
  if (options.duration_s <= 0 || options.duration_s > 86400)
    throw Error(ErrorCode::InvalidArgument, "--duration must be more than 0 s and at most a day");
  if (options.rate < 0 || options.rate > 1e6)
    throw Error(ErrorCode::InvalidArgument, "--rate must be 0 to 1000000 requests/s");
  for (int64_t c : options.concurrency)
    if (c < 1 || c > 4096)
      throw Error(ErrorCode::InvalidArgument,
                  "--concurrency " + std::to_string(c) + " is out of range (1 to 4096)");
  auto c = client(target, options.request_timeout_s);
  const std::string path = "/v2/models/" + options.model;
  auto metadata = c->Get(path);
  if (!metadata)
    throw Error(ErrorCode::NotFound, "hal loadgen: no answer from " + options.url + ": " +
                                         httplib::to_string(metadata.error()));
  if (metadata->status != 200)
    throw Error(ErrorCode::InvalidArgument, "hal loadgen: " + options.url + path + " answered " +
                                                std::to_string(metadata->status) + ": " +
                                                metadata->body);
  const Body body = make_body(options, json::parse(metadata->body));
  std::vector<LoadLevel> levels;
  if (options.rate > 0)
    levels.push_back(open_loop(options, target, path + "/infer", body));
  else
    for (int64_t concurrency : options.concurrency)
      levels.push_back(closed_loop(options, target, path + "/infer", body, concurrency));
  return levels;
}

std::string loadgen_json(const LoadgenOptions& options, const std::vector<LoadLevel>& levels) {
  json list = json::array();
  for (const LoadLevel& l : levels) {
    json statuses = json::object();
    for (const auto& [status, count] : l.statuses) statuses[std::to_string(status)] = count;
    list.push_back(
        {{"mode", l.mode},
         {"level", l.level},
         {"requests", l.requests},
         {"errors", l.errors},
         {"statuses", statuses},
         {"seconds", l.seconds},
         {"throughput", l.throughput},
         {"latency_us",
          {{"p50", l.p50_us}, {"p90", l.p90_us}, {"p99", l.p99_us}, {"mean", l.mean_us}}},
         {"first_error", l.first_error}});
  }
  json document{{"schema", "hal.loadgen/1"},
                {"hal_version", std::string(version())},
                {"url", options.url},
                {"model", options.model},
                {"binary", options.binary},
                {"duration_s", options.duration_s},
                {"levels", list}};
  return document.dump(2);
}

}  // namespace hal::serve
