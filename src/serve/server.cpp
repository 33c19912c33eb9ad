#include <sys/socket.h>

#include <algorithm>
#include <set>

#include "hal/error.hpp"
#include "serve/server_impl.hpp"

namespace hal::serve {
namespace {

void check(bool ok, const std::string& message) {
  if (!ok) throw Error(ErrorCode::InvalidArgument, message);
}

// New requests answer 503 and batches go without waiting for company.
void stop_accepting(Server::Impl& impl) {
  impl.accepting = false;
  for (auto& [name, model] : impl.models) model->stop_accepting();
}

// Requests still waiting for their model are answered 503 (Impl::cut_off) and the HTTP threads
// joined. An idle keep-alive connection holds its thread until httplib's keep-alive timeout
// (5 s) ends: httplib gives no handle on accepted connections to close them sooner.
void stop_listening(Server::Impl& impl) {
  impl.cut_off = true;
  if (!impl.listener.joinable()) return;
  impl.http.stop();
  impl.listener.join();
}

}  // namespace

void validate(const ServerOptions& options) {
  check(!options.models.empty(), "hal serve: no model given (--model NAME=PATH.onnx)");
  check(options.port >= 0 && options.port <= 65535,
        "--port " + std::to_string(options.port) + " is out of range (0 to 65535)");
  check(options.http_threads >= 1 && options.http_threads <= 4096,
        "--http-threads " + std::to_string(options.http_threads) + " is out of range (1 to 4096)");
  std::set<std::string> names;
  for (const ModelConfig& model : options.models) {
    const std::string where = "model '" + model.name + "'";
    check(!model.name.empty() && model.name.find('/') == std::string::npos,
          "model name '" + model.name + "' must be non-empty and without '/'");
    check(names.insert(model.name).second, where + " is given twice");
    check(!model.devices.empty(), where + ": no device");
    check(std::set<std::string>(model.devices.begin(), model.devices.end()).size() ==
              model.devices.size(),
          where + ": a device is listed twice");
    const BatchingOptions& b = model.batching;
    check(b.max_batch >= 1 && b.max_batch <= 65536,
          where + ": max_batch " + std::to_string(b.max_batch) + " is out of range (1 to 65536)");
    check(b.max_queue_delay_us >= 0 && b.max_queue_delay_us <= 10'000'000,
          where + ": max_queue_delay_us " + std::to_string(b.max_queue_delay_us) +
              " is out of range (0 to 10000000)");
    check(b.max_queue >= 1 && b.max_queue <= 1'000'000,
          where + ": max_queue " + std::to_string(b.max_queue) + " is out of range (1 to 1000000)");
    check(b.priority_levels >= 1 && b.priority_levels <= 16, where + ": priority_levels " +
                                                                 std::to_string(b.priority_levels) +
                                                                 " is out of range (1 to 16)");
    check(b.max_batches_per_instance >= 1 && b.max_batches_per_instance <= 64,
          where + ": max_batches_per_instance " + std::to_string(b.max_batches_per_instance) +
              " is out of range (1 to 64)");
    for (int64_t size : b.preferred_batch_sizes)
      check(size >= 1 && size <= b.max_batch,
            where + ": preferred batch size " + std::to_string(size) +
                " is out of range (1 to max_batch " + std::to_string(b.max_batch) + ")");
  }
}

bool Server::Impl::ready() const {
  return accepting &&
         std::all_of(models.begin(), models.end(), [](const auto& m) { return m.second->ready(); });
}

std::string Server::Impl::metrics_text() const {
  std::map<std::string, std::pair<std::string, std::vector<Sample>>> gauges;
  auto& depth = gauges["hal_queue_depth"];
  depth.first = "Requests waiting in each model's queue.";
  auto& busy = gauges["hal_device_busy_ratio"];
  busy.first = "Share of the time since start each device spent running batches.";
  auto& memory = gauges["hal_device_memory_used_bytes"];
  memory.first = "Device memory held by hal's allocator on each device.";
  auto& healthy = gauges["hal_instance_healthy"];
  healthy.first = "1 where a model instance is in rotation, 0 where its device failed.";
  auto& in_flight = gauges["hal_requests_in_flight"];
  in_flight.first = "Requests of each model queued or running.";
  // A device serving several models: the sum of its busy shares, capped at 1; memory once.
  std::map<std::string, std::pair<double, double>> devices;
  for (const auto& [name, model] : models) {
    const std::string label = "model=\"" + label_value(name) + "\"";
    depth.second.push_back({label, static_cast<double>(model->queue_depth())});
    in_flight.second.push_back({label, static_cast<double>(model->outstanding())});
    for (const InstanceStatus& instance : model->instances()) {
      auto& [b, m] = devices[instance.device];
      b = std::min(1.0, b + instance.busy_ratio);
      m = instance.memory_used_bytes;
      healthy.second.push_back({label + ",device=\"" + label_value(instance.device) + "\"",
                                instance.healthy ? 1.0 : 0.0});
    }
  }
  for (const auto& [device, figures] : devices) {
    const std::string label = "device=\"" + label_value(device) + "\"";
    busy.second.push_back({label, figures.first});
    memory.second.push_back({label, figures.second});
  }
  return metrics.render(gauges);
}

Server::Server(const ServerOptions& options) : impl_(std::make_unique<Impl>()) {
  validate(options);
  impl_->options = options;
  for (const ModelConfig& model : options.models)
    impl_->models.emplace(
        model.name, std::make_unique<ModelScheduler>(model, options.balancer, impl_->metrics));
  const int threads = options.http_threads;
  impl_->http.new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));
  };
  impl_->http.set_keep_alive_max_count(1'000'000);
  impl_->http.set_tcp_nodelay(true);  // a response is one write; Nagle would hold it
  // SO_REUSEADDR alone: httplib's default, SO_REUSEPORT, would let a second server bind a port
  // in use and share its connections instead of failing. The socket is kept to deepen its
  // backlog once bound.
  impl_->http.set_socket_options([impl = impl_.get()](int socket) {
    int yes = 1;
    ::setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    impl->listen_socket = socket;
  });
  impl_->http.set_payload_max_length(kPayloadLimit);
  add_routes(*impl_);
}

Server::~Server() {
  // What is still queued is answered 503 by the HTTP threads now, and again (to no one) by the
  // schedulers' destructors, which wait for the batches running.
  stop_accepting(*impl_);
  stop_listening(*impl_);
}

void Server::start() {
  if (impl_->listener.joinable())
    throw Error(ErrorCode::InvalidState, "hal serve: the server is already started");
  const ServerOptions& o = impl_->options;
  impl_->port = o.port == 0 ? impl_->http.bind_to_any_port(o.host)
                            : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (impl_->port < 0)
    throw Error(ErrorCode::InvalidArgument, "hal serve: cannot listen on " + o.host + ":" +
                                                std::to_string(o.port) +
                                                " (in use, or not an address of this host)");
  // httplib 0.11 listens with a backlog of 5: a burst of clients connecting at once would
  // overflow it and some would be dropped. listen() again only deepens the queue.
  if (impl_->listen_socket >= 0) ::listen(impl_->listen_socket, SOMAXCONN);
  impl_->listener = std::thread([this] { impl_->http.listen_after_bind(); });
  // listen_after_bind accepts once it runs: wait for it, bounded.
  for (int i = 0; i < 1000 && !impl_->http.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

int Server::port() const { return impl_->port; }

bool Server::drain(std::chrono::milliseconds timeout) {
  stop_accepting(*impl_);
  const auto deadline = Clock::now() + timeout;
  for (auto& [name, model] : impl_->models) model->wait_idle(deadline);
  // At the deadline what has not begun is answered 503; the batches running finish and answer
  // every request they hold (the thread running one inline is an HTTP thread, which stopping
  // joins anyway), bounded as any request's wait for its answer is.
  for (auto& [name, model] : impl_->models) impl_->cut_off_requests += model->cut_off_unstarted();
  const auto running_deadline = Clock::now() + kAnswerLimit;
  for (auto& [name, model] : impl_->models) model->wait_idle(running_deadline);
  stop_listening(*impl_);
  // False where a request was answered 503 (one whose batch ran past the deadline and answered
  // counts as answered).
  return impl_->cut_off_requests == 0;
}

std::string Server::metrics_text() const { return impl_->metrics_text(); }

}  // namespace hal::serve
