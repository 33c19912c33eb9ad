// `hal loadgen --url http://127.0.0.1:8000 --model NAME [--input NAME=FILE.npy]
// (--concurrency 1,4,16,64 | --rate R) [--duration 10s] [--binary] [--json]`: drives a KServe
// v2 server and prints each level's throughput, p50/p90/p99 latency and errors (hal.loadgen/1).
#include <iostream>

#include "commands.hpp"
#include "hal/error.hpp"
#include "hal/loadgen.hpp"
#include "option_values.hpp"

namespace hal::tool {
namespace loadgen_cli {

struct Options {
  serve::LoadgenOptions loadgen;
  std::vector<std::string> inputs, concurrency;
  std::string rate, duration = "10s", max_requests = "10000000";
  bool json = false;
};

// "10s", "500ms", "2m" or seconds as a plain number.
double duration_seconds(const std::string& text) {
  double scale = 1;
  std::string number = text;
  if (text.ends_with("ms")) {
    scale = 1e-3;
    number = text.substr(0, text.size() - 2);
  } else if (text.ends_with("s")) {
    number = text.substr(0, text.size() - 1);
  } else if (text.ends_with("m")) {
    scale = 60;
    number = text.substr(0, text.size() - 1);
  }
  return real_option("--duration", number, 1e-3 / scale, 86400 / scale) * scale;
}

void prepare(Options& o) {
  for (const std::string& spec : o.inputs) {
    const size_t equals = spec.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == spec.size())
      throw Error(ErrorCode::InvalidArgument, "--input '" + spec + "': expected NAME=FILE.npy");
    if (!o.loadgen.input_files.emplace(spec.substr(0, equals), spec.substr(equals + 1)).second)
      throw Error(ErrorCode::InvalidArgument,
                  "--input: '" + spec.substr(0, equals) + "' given twice");
  }
  if (!o.rate.empty() && !o.concurrency.empty())
    throw Error(ErrorCode::InvalidArgument, "--rate and --concurrency: give one or the other");
  if (!o.rate.empty()) o.loadgen.rate = real_option("--rate", o.rate, 1e-3, 1e6);
  if (!o.concurrency.empty()) {
    o.loadgen.concurrency.clear();
    for (const std::string& level : names_option("--concurrency", o.concurrency))
      o.loadgen.concurrency.push_back(
          static_cast<int64_t>(count_option("--concurrency", level, 1, 4096)));
  }
  o.loadgen.duration_s = duration_seconds(o.duration);
  o.loadgen.max_requests =
      static_cast<int64_t>(count_option("--max-requests", o.max_requests, 1, 1'000'000'000));
}

void print(const std::vector<serve::LoadLevel>& levels) {
  std::printf("%-12s %8s %10s %8s %12s %10s %10s %10s\n", "mode", "level", "requests", "errors",
              "throughput/s", "p50_us", "p90_us", "p99_us");
  for (const serve::LoadLevel& l : levels) {
    std::printf("%-12s %8g %10llu %8llu %12.1f %10.0f %10.0f %10.0f\n", l.mode.c_str(), l.level,
                static_cast<unsigned long long>(l.requests),
                static_cast<unsigned long long>(l.errors), l.throughput, l.p50_us, l.p90_us,
                l.p99_us);
    if (!l.first_error.empty()) std::printf("  first error: %s\n", l.first_error.c_str());
  }
}

}  // namespace loadgen_cli

void add_loadgen_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "loadgen", "Drive a KServe v2 server: throughput and latency per load level");
  auto options = std::make_shared<loadgen_cli::Options>();
  command->add_option("--url", options->loadgen.url,
                      "http://HOST:PORT (default http://127.0.0.1:8000)");
  command->add_option("--model", options->loadgen.model, "The model to send requests to")
      ->required();
  command->add_option("--input", options->inputs,
                      "NAME=FILE.npy (default: zeros of the declared shape)");
  // Split by names_option rather than CLI11's delimiter, which drops empty items ("1,,4").
  command->add_option("--concurrency", options->concurrency,
                      "Requests kept in flight, per level (comma-separated)");
  command->add_option("--rate", options->rate,
                      "Requests per second on a fixed schedule (open loop)");
  command->add_option("--duration", options->duration, "Per level: 10s, 500ms, 2m (default 10s)");
  command->add_option("--max-requests", options->max_requests,
                      "Per level, at most (default 10000000)");
  command->add_flag("--binary", options->loadgen.binary, "Send and receive binary tensors");
  command->add_flag("--json", options->json, "Print JSON (schema hal.loadgen/1)");
  command->parse_complete_callback([options] { loadgen_cli::prepare(*options); });
  set_work(*command, [options] {
    const auto levels = serve::run_loadgen(options->loadgen);
    if (options->json)
      std::cout << serve::loadgen_json(options->loadgen, levels) << "\n";
    else
      loadgen_cli::print(levels);
  });
}

}  // namespace hal::tool
