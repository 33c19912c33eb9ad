// The server's state, shared by its lifecycle (server.cpp) and its HTTP routes
// (http_routes.cpp).
#pragma once

#include <httplib.h>

#include <atomic>
#include <map>
#include <memory>
#include <thread>

#include "hal/serve.hpp"
#include "serve/metrics.hpp"
#include "serve/model_scheduler.hpp"

namespace hal::serve {

struct Server::Impl {
  ServerOptions options;
  Metrics metrics;
  std::map<std::string, std::unique_ptr<ModelScheduler>> models;
  httplib::Server http;
  std::thread listener;
  int port = -1;
  std::atomic<int> listen_socket{-1};
  std::atomic<bool> accepting{true};

  // Every model ready and the server accepting.
  bool ready() const;
  std::string metrics_text() const;
};

// GET /v2/..., POST /v2/models/NAME/infer and GET /metrics on `impl.http`.
void add_routes(Server::Impl& impl);

}  // namespace hal::serve
