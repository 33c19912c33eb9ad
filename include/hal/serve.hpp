// Serving models over HTTP with the KServe v2 / Triton inference protocol (docs/serving.md).
//
//   hal::serve::ServerOptions options;
//   options.models.push_back({.name = "mlp", .path = "mlp.onnx", .devices = {"cpu:0"}});
//   hal::serve::Server server(options);   // loads the models, one instance per device
//   server.start();                       // listens on 127.0.0.1:options.port (0: any free port)
//   ... server.port() ...
//   server.drain(std::chrono::seconds(30));   // stops accepting, answers what is in flight
//
// Each model has a queue in front of its instances (one copy of the model per device). A
// dynamic batcher stacks compatible requests (the same shape but for a symbolic first
// dimension) up to `max_batch` rows, or until the oldest has waited `max_queue_delay_us`, and a
// balancer sends each batch to an instance: the one with the earliest predicted completion, or
// round-robin, or the one with the fewest outstanding requests. Errors (hal::Error): a model
// file that does not load, a device that is not there, options out of range (InvalidArgument
// naming the option), a port that cannot be bound.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hal::serve {

// How a batch's instance is chosen.
enum class Balancer {
  predicted,          // earliest predicted completion: work queued ahead + the batch's time
  round_robin,        // each instance in turn
  least_outstanding,  // the fewest requests queued or running
};

// "predicted", "round-robin", "least-outstanding".
std::string to_string(Balancer balancer);
std::optional<Balancer> parse_balancer(const std::string& text);

struct BatchingOptions {
  int64_t max_batch = 8;             // rows per batch; 1 turns batching off
  int64_t max_queue_delay_us = 500;  // how long the oldest request may wait for others
  // Batch sizes dispatched at once when reached (each <= max_batch); empty: max_batch only.
  std::vector<int64_t> preferred_batch_sizes;
  int64_t max_queue = 1024;  // requests waiting; beyond it 503 with Retry-After
  // Priority levels 1 (first served) to priority_levels; a request without "priority" gets
  // the lowest (priority_levels).
  int64_t priority_levels = 2;
  int64_t max_batches_per_instance = 2;  // queued or running on one instance at once
};

struct ModelConfig {
  std::string name;
  std::filesystem::path path;
  std::vector<std::string> devices = {"cpu:0"};  // one instance on each
  BatchingOptions batching;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port (Server::port() says which)
  std::vector<ModelConfig> models;
  Balancer balancer = Balancer::predicted;
  int http_threads = 96;  // connections served at once (each keep-alive client holds one)
};

// Checks options (InvalidArgument naming the option and the value) without loading anything.
void validate(const ServerOptions& options);

class Server {
 public:
  // Loads every model on each of its devices and starts their schedulers; listens only once
  // start() is called.
  explicit Server(const ServerOptions& options);
  ~Server();  // stops at once: what is still queued is answered 503
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port and serves on a thread of its own; returns once it accepts connections.
  void start();
  int port() const;
  // Stops accepting requests (new ones answer 503, /v2/health/ready 400), waits up to `timeout`
  // for every request queued or running to be answered, answers those still waiting then 503,
  // and stops listening. Returns whether every one was answered by its model.
  bool drain(std::chrono::milliseconds timeout);
  // The metrics as GET /metrics prints them (Prometheus text format).
  std::string metrics_text() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace hal::serve
