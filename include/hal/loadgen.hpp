// A load generator for KServe v2 servers (like Triton's perf_analyzer): keeps N requests in
// flight (closed loop) or sends R requests per second on a fixed schedule (open loop), and
// reports each level's throughput, latency percentiles and errors (hal.loadgen/1).
//
// Every run is bounded: by `duration_s`, by `max_requests` per level, and each request by the
// client's timeouts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hal::serve {

struct LoadgenOptions {
  std::string url = "http://127.0.0.1:8000";  // http://HOST:PORT
  std::string model;
  std::map<std::string, std::string> input_files;  // input name -> .npy file; others are zeros
  std::vector<int64_t> concurrency = {1};          // closed-loop levels
  double rate = 0;                                 // > 0: one open-loop level, requests/s
  double duration_s = 10;                          // per level
  double warmup_s = 0.2;                           // per level, not measured
  int64_t max_requests = 10'000'000;               // per level
  bool binary = false;                             // inputs and outputs as binary tensors
  int64_t max_in_flight = 512;                     // open loop: senders at most
  double request_timeout_s = 60;
};

struct LoadLevel {
  std::string mode;  // "concurrency" or "rate"
  double level = 0;
  uint64_t requests = 0;             // answered 200
  uint64_t errors = 0;               // any other answer, or none
  std::map<int, uint64_t> statuses;  // HTTP status -> count (0: no answer)
  double seconds = 0;
  double throughput = 0;  // requests answered 200 per second
  double p50_us = 0, p90_us = 0, p99_us = 0, mean_us = 0;
  std::string first_error;
};

// Reads the model's metadata from the server, builds one request body and runs each level.
// hal::Error (InvalidArgument) for a URL that is not http://HOST:PORT, a model the server does
// not have, an input file that does not match; NotFound where the server does not answer.
std::vector<LoadLevel> run_loadgen(const LoadgenOptions& options);

// The levels as JSON (schema hal.loadgen/1).
std::string loadgen_json(const LoadgenOptions& options, const std::vector<LoadLevel>& levels);

}  // namespace hal::serve
