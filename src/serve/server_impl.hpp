// The server's state, shared by its lifecycle (server.cpp) and its HTTP routes
// (http_routes.cpp).
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <thread>

#include "hal/serve.hpp"
#include "serve/metrics.hpp"
#include "serve/model_scheduler.hpp"

namespace hal::serve {

// The largest request body read (the binary-tensor extension carries tensors of this size).
constexpr size_t kPayloadLimit = size_t{1} << 30;
// The longest a handler waits for its answer, and a drain for the batches running at its
// deadline: the scheduler answers every request, so this is a guard against a bug or a hung
// device, not a timeout a client should meet.
constexpr auto kAnswerLimit = std::chrono::minutes(10);

struct Server::Impl {
  ServerOptions options;
  Metrics metrics;
  std::map<std::string, std::unique_ptr<ModelScheduler>> models;
  httplib::Server http;
  std::thread listener;
  int port = -1;
  std::atomic<int> listen_socket{-1};
  std::atomic<bool> accepting{true};
  // Set when the server stops waiting for answers (a drain's deadline, or its destruction):
  // an HTTP thread still waiting for its model answers 503 at once and counts itself here.
  std::atomic<bool> cut_off{false};
  std::atomic<int64_t> cut_off_requests{0};

  // Every model ready and the server accepting.
  bool ready() const;
  std::string metrics_text() const;
};

// GET /v2/..., POST /v2/models/NAME/infer and GET /metrics on `impl.http`.
void add_routes(Server::Impl& impl);

}  // namespace hal::serve
