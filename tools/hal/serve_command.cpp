// `hal serve --model NAME=PATH.onnx [--model ...] [--devices auto|ID,ID,...] [--host H]
// [--port P] [--max-batch N] [--max-queue-delay-us U] [--max-queue N] [--preferred-batch-sizes
// 4,8] [--priority-levels L] [--balancer predicted|round-robin|least-outstanding]
// [--config FILE]`: serves models with the KServe v2 protocol (docs/serving.md) until SIGTERM
// or SIGINT, then drains: stops accepting, answers what is in flight, exits 0. A second signal
// during the drain is ignored.
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "hal/error.hpp"
#include "hal/registry.hpp"
#include "hal/serve.hpp"
#include "option_values.hpp"

namespace hal::tool {
namespace serve_cli {

using json = nlohmann::json;

struct Options {
  std::vector<std::string> models;  // NAME=PATH
  std::vector<std::string> devices = {"cpu:0"};
  std::string host = "127.0.0.1";
  std::string port = "8000", max_batch = "8", max_queue_delay_us = "500", max_queue = "1024";
  std::string priority_levels = "2", http_threads = "96", drain_timeout_s = "30";
  std::vector<std::string> preferred;
  std::string balancer = "predicted";
  std::string config;
  serve::ServerOptions server;
  double drain_s = 30;
};

// auto: every GPU and accelerator hal sees, or cpu:0 where there is none.
std::vector<std::string> resolve_devices(const std::vector<std::string>& ids) {
  if (ids.size() != 1 || ids.front() != "auto") return ids;
  std::vector<std::string> out;
  for (const Device& d : hal::devices())
    if (d.info().kind != DeviceKind::cpu) out.push_back(d.id());
  if (out.empty()) out.push_back("cpu:0");
  return out;
}

serve::BatchingOptions batching_from(const Options& o) {
  serve::BatchingOptions b;
  b.max_batch = static_cast<int64_t>(count_option("--max-batch", o.max_batch, 1, 65536));
  b.max_queue_delay_us = static_cast<int64_t>(
      count_option("--max-queue-delay-us", o.max_queue_delay_us, 0, 10'000'000));
  b.max_queue = static_cast<int64_t>(count_option("--max-queue", o.max_queue, 1, 1'000'000));
  b.priority_levels =
      static_cast<int64_t>(count_option("--priority-levels", o.priority_levels, 1, 16));
  for (const std::string& size : names_option("--preferred-batch-sizes", o.preferred))
    b.preferred_batch_sizes.push_back(static_cast<int64_t>(
        count_option("--preferred-batch-sizes", size, 1, static_cast<uint64_t>(b.max_batch))));
  return b;
}

// --config FILE: {"host", "port", "balancer", "http_threads", "models": [{"name", "path",
// "devices": [...], "max_batch", "max_queue_delay_us", "max_queue", "preferred_batch_sizes",
// "priority_levels"}]}; options on the command line take precedence over its server fields, and
// give a model what it leaves out (`devices`: --devices, resolved).
void read_config(const std::string& file, Options& o, const CLI::App& command,
                 const std::vector<std::string>& devices) {
  std::ifstream in(file);
  if (!in) throw Error(ErrorCode::InvalidArgument, "--config " + file + ": cannot read the file");
  const json config = json::parse(in, nullptr, false);
  if (config.is_discarded() || !config.is_object())
    throw Error(ErrorCode::InvalidArgument, "--config " + file + ": not a JSON object");
  try {
    if (config.contains("host") && command.count("--host") == 0)
      o.server.host = config["host"].get<std::string>();
    // Read as the wide integers JSON holds and checked: get<int>() would wrap 2^32 to 0, and a
    // model's value() would take 16.9 as 16. Past INT64_MAX reads as INT64_MAX, out of range.
    auto whole = [&](const json& value, const std::string& field) {
      if (!value.is_number_integer())
        throw Error(ErrorCode::InvalidArgument,
                    "--config " + file + ": " + field + " " + value.dump() + " is not an integer");
      const bool huge = value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX);
      return huge ? INT64_MAX : value.get<int64_t>();
    };
    auto bounded = [&](const char* field, int64_t low, int64_t high) {
      const json& value = config[field];
      const int64_t number = whole(value, field);
      if (number < low || number > high)
        throw Error(ErrorCode::InvalidArgument,
                    "--config " + file + ": " + field + " " + value.dump() + " is out of range (" +
                        std::to_string(low) + " to " + std::to_string(high) + ")");
      return static_cast<int>(number);
    };
    if (config.contains("port") && command.count("--port") == 0)
      o.server.port = bounded("port", 0, 65535);
    if (config.contains("http_threads") && command.count("--http-threads") == 0)
      o.server.http_threads = bounded("http_threads", 1, 4096);
    if (config.contains("balancer") && command.count("--balancer") == 0) {
      const auto b = serve::parse_balancer(config["balancer"].get<std::string>());
      if (!b)
        throw Error(ErrorCode::InvalidArgument,
                    "--config " + file + ": balancer " + config["balancer"].dump() +
                        " is not predicted, round-robin or least-outstanding");
      o.server.balancer = *b;
    }
    for (const json& m : config.value("models", json::array())) {
      serve::ModelConfig model;
      model.name = m.at("name").get<std::string>();
      model.path = m.at("path").get<std::string>();
      model.devices = m.contains("devices")
                          ? resolve_devices(m["devices"].get<std::vector<std::string>>())
                          : devices;
      model.batching = batching_from(o);
      // Their ranges are serve::validate's, which names the model.
      const std::string where = "models['" + model.name + "'].";
      for (auto [field, target] : {std::pair{"max_batch", &model.batching.max_batch},
                                   {"max_queue_delay_us", &model.batching.max_queue_delay_us},
                                   {"max_queue", &model.batching.max_queue},
                                   {"priority_levels", &model.batching.priority_levels}})
        if (m.contains(field)) *target = whole(m[field], where + field);
      if (m.contains("preferred_batch_sizes")) {
        const json& sizes = m["preferred_batch_sizes"];
        if (!sizes.is_array())
          throw Error(ErrorCode::InvalidArgument, "--config " + file + ": " + where +
                                                      "preferred_batch_sizes " + sizes.dump() +
                                                      " is not a list");
        model.batching.preferred_batch_sizes.clear();
        for (const json& size : sizes)
          model.batching.preferred_batch_sizes.push_back(
              whole(size, where + "preferred_batch_sizes[]"));
      }
      o.server.models.push_back(std::move(model));
    }
  } catch (const json::exception& error) {
    throw Error(ErrorCode::InvalidArgument, "--config " + file + ": " + error.what());
  }
}

void prepare(Options& o) {
  o.server.host = o.host;
  o.server.port = static_cast<int>(count_option("--port", o.port, 0, 65535));
  o.server.http_threads = static_cast<int>(count_option("--http-threads", o.http_threads, 1, 4096));
  o.drain_s = real_option("--drain-timeout-s", o.drain_timeout_s, 0, 3600);
  const auto balancer = serve::parse_balancer(o.balancer);
  if (!balancer)
    throw Error(
        ErrorCode::InvalidArgument,
        "--balancer '" + o.balancer + "': expected predicted, round-robin or least-outstanding");
  o.server.balancer = *balancer;
  const serve::BatchingOptions batching = batching_from(o);
  for (const std::string& spec : o.models) {
    const size_t equals = spec.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == spec.size())
      throw Error(ErrorCode::InvalidArgument, "--model '" + spec + "': expected NAME=PATH.onnx");
    o.server.models.push_back({spec.substr(0, equals), spec.substr(equals + 1), {}, batching});
  }
}

// SIGTERM and SIGINT: the first starts the drain, the later ones are ignored (and said so).
// Caught by a handler, not left to sigwait alone: threads that libraries start before main
// (OpenBLAS's pool) have both unblocked, and the kernel hands a signal to any such thread, where
// the default action would end the process in the middle of the drain.
namespace {
namespace stop_signal {

sem_t posted;  // posted by the first
std::atomic<int> first{0}, count{0};
static_assert(std::atomic<int>::is_always_lock_free, "used in a signal handler");

void on_signal(int number) {
  const int saved_errno = errno;
  if (count.fetch_add(1) == 0) {
    first = number;
    sem_post(&posted);
  } else {
    static constexpr char note[] =
        "hal serve: already draining; the signal is ignored (SIGKILL stops at once)\n";
    [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, note, sizeof note - 1);
  }
  errno = saved_errno;
}

sigset_t both() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

// Catches both from now on, and blocks them in this thread until wait_first(): the threads the
// server starts inherit the mask, so that no signal interrupts their system calls (an HTTP
// thread's select() would drop its connection).
void catch_and_block() {
  sem_init(&posted, 0, 0);
  struct sigaction action {};
  action.sa_handler = on_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  const sigset_t set = both();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// Unblocks both in this thread (which then takes them, the drain included) and waits for the
// first; its number.
int wait_first() {
  const sigset_t set = both();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  while (sem_wait(&posted) != 0 && errno == EINTR) {
  }
  return first;
}

}  // namespace stop_signal
}  // namespace

void serve_until_signalled(Options& o, const CLI::App& command) {
  stop_signal::catch_and_block();
  const std::vector<std::string> devices = resolve_devices(names_option("--devices", o.devices));
  for (serve::ModelConfig& model : o.server.models) model.devices = devices;
  if (!o.config.empty()) read_config(o.config, o, command, devices);
  serve::validate(o.server);
  serve::Server server(o.server);
  server.start();
  // An IPv6 address goes in brackets in a URL.
  const bool ipv6 = o.server.host.find(':') != std::string::npos;
  std::cout << "hal serve: listening on http://" << (ipv6 ? "[" : "") << o.server.host
            << (ipv6 ? "]" : "") << ":" << server.port() << " (";
  for (size_t i = 0; i < o.server.models.size(); ++i)
    std::cout << (i ? "; " : "") << o.server.models[i].name << " on "
              << o.server.models[i].devices.size() << " device(s)";
  std::cout << "; balancer " << serve::to_string(o.server.balancer) << ")" << std::endl;
  const int signal = stop_signal::wait_first();
  std::cout << "hal serve: " << (signal == SIGTERM ? "SIGTERM" : "SIGINT") << ": draining"
            << std::endl;
  const bool drained =
      server.drain(std::chrono::milliseconds(static_cast<int64_t>(o.drain_s * 1000)));
  std::cout << "hal serve: "
            << (drained ? "every request answered; stopped"
                        : "requests still waiting at the drain deadline (--drain-timeout-s " +
                              o.drain_timeout_s + ") were answered 503; stopped")
            << std::endl;
  if (!drained) throw ExitStatus{1};
}

}  // namespace serve_cli

void add_serve_command(CLI::App& app) {
  auto* command =
      app.add_subcommand("serve", "Serve ONNX models over HTTP (KServe v2 / Triton protocol)");
  auto options = std::make_shared<serve_cli::Options>();
  command->add_option("--model", options->models, "NAME=PATH.onnx, once per model");
  command
      ->add_option("--devices", options->devices,
                   "auto, or device IDs (comma-separated): one instance of each model on each")
      ->delimiter(',');
  command->add_option("--host", options->host, "Address to bind (default 127.0.0.1)");
  command->add_option("--port", options->port, "Port (default 8000; 0: any free port)");
  command->add_option("--max-batch", options->max_batch,
                      "Rows per batch (default 8; 1: no batching)");
  command->add_option("--max-queue-delay-us", options->max_queue_delay_us,
                      "How long the oldest request waits for others (default 500)");
  command->add_option("--max-queue", options->max_queue,
                      "Requests waiting per model before 503 (default 1024)");
  command
      ->add_option("--preferred-batch-sizes", options->preferred,
                   "Batch sizes dispatched at once (comma-separated)")
      ->delimiter(',');
  command->add_option("--priority-levels", options->priority_levels,
                      "Priority levels, 1 first (default 2)");
  command->add_option("--balancer", options->balancer,
                      "predicted (default), round-robin or least-outstanding");
  command->add_option("--http-threads", options->http_threads,
                      "Connections served at once (default 96)");
  command->add_option("--drain-timeout-s", options->drain_timeout_s,
                      "On SIGTERM, how long to wait for requests in flight before answering "
                      "those still waiting 503 (default 30)");
  command->add_option("--config", options->config,
                      "A JSON file of models and server settings (docs/serving.md)");
  command->parse_complete_callback([options] { serve_cli::prepare(*options); });
  set_work(*command, [options, command] { serve_cli::serve_until_signalled(*options, *command); });
}

}  // namespace hal::tool
