// The KServe v2 REST endpoints and GET /metrics, on cpp-httplib.
#include <nlohmann/json.hpp>

#include "hal/version.hpp"
#include "serve/request_error.hpp"
#include "serve/server_impl.hpp"

namespace hal::serve {
namespace {

using json = nlohmann::json;

// The longest a handler waits for its answer: the scheduler answers every request, so this is
// a guard against a bug, not a timeout a client should meet.
constexpr auto kAnswerLimit = std::chrono::minutes(10);
// /v2/models/NAME, optionally /versions/V, then the rest of the route.
const std::string kModel = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";

void reply_json(httplib::Response& response, int status, const json& body) {
  response.status = status;
  response.set_content(response_text(body), "application/json");
}

void reply_error(httplib::Response& response, int status, const std::string& message) {
  response.status = status;
  if (status == 503) response.set_header("Retry-After", "1");
  response.set_content(error_body(message), "application/json");
}

// The model the path names, or nullptr with a 404 answered.
ModelScheduler* find_model(Server::Impl& impl, const httplib::Request& request,
                           httplib::Response& response) {
  const std::string name = request.matches[1];
  const auto it = impl.models.find(name);
  if (it == impl.models.end()) {
    reply_error(response, 404, "unknown model '" + name + "'");
    return nullptr;
  }
  const std::string version = request.matches.size() > 2 ? std::string(request.matches[2]) : "";
  if (!version.empty() && version != "1") {
    reply_error(response, 404, "model '" + name + "' has no version '" + version + "' (it has 1)");
    return nullptr;
  }
  return it->second.get();
}

void infer(Server::Impl& impl, const httplib::Request& request, httplib::Response& response) {
  const auto start = Clock::now();
  ModelScheduler* model = find_model(impl, request, response);
  if (!model) return;
  const std::string& name = model->signature().name;
  try {
    if (!impl.accepting) throw RequestError(503, "the server is shutting down");
    std::optional<std::string> header_length;
    if (request.has_header("Inference-Header-Content-Length"))
      header_length = request.get_header_value("Inference-Header-Content-Length");
    InferRequest parsed = parse_infer_request(request.body, header_length, model->signature());
    // Kept for encoding the answer: which outputs, binary or not, the id.
    InferRequest shape_of_answer{parsed.id, {}, parsed.rows,    "",
                                 1,         0,  parsed.outputs, parsed.binary_outputs};
    std::future<Outcome> future = model->submit(std::move(parsed));
    if (future.wait_for(kAnswerLimit) != std::future_status::ready)
      throw RequestError(504, "model '" + name + "' gave no answer in time");
    Outcome outcome = future.get();
    if (outcome.status != 200) throw RequestError(outcome.status, outcome.message);
    InferResponse encoded =
        encode_infer_response(model->signature(), shape_of_answer, outcome.outputs);
    response.status = 200;
    if (encoded.header_length) {
      response.set_header("Inference-Header-Content-Length",
                          std::to_string(*encoded.header_length));
      response.set_content(std::move(encoded.body), "application/octet-stream");
    } else {
      response.set_content(std::move(encoded.body), "application/json");
    }
  } catch (const RequestError& error) {
    reply_error(response, error.status, error.what());
  }
  impl.metrics.count_request(name, response.status);
  impl.metrics.observe_request(name, std::chrono::duration<double>(Clock::now() - start).count());
}

}  // namespace

void add_routes(Server::Impl& impl) {
  httplib::Server& http = impl.http;
  http.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& response) {
    reply_json(response, 200, {{"live", true}});
  });
  http.Get("/v2/health/ready", [&impl](const httplib::Request&, httplib::Response& response) {
    const bool ready = impl.ready();
    reply_json(response, ready ? 200 : 503, {{"ready", ready}});
  });
  http.Get("/v2", [](const httplib::Request&, httplib::Response& response) {
    reply_json(response, 200,
               {{"name", "hal"},
                {"version", std::string(version())},
                {"extensions", {"binary_tensor_data"}}});
  });
  http.Get(kModel, [&impl](const httplib::Request& request, httplib::Response& response) {
    if (ModelScheduler* model = find_model(impl, request, response))
      reply_json(response, 200, model_metadata(model->signature()));
  });
  http.Get(kModel + "/ready",
           [&impl](const httplib::Request& request, httplib::Response& response) {
             if (ModelScheduler* model = find_model(impl, request, response)) {
               const bool ready = impl.accepting && model->ready();
               // Beyond KServe's {"name", "ready"}: which instances are in rotation.
               json instances = json::array();
               for (const InstanceStatus& instance : model->instances())
                 instances.push_back({{"device", instance.device}, {"healthy", instance.healthy}});
               reply_json(response, ready ? 200 : 503,
                          {{"name", model->signature().name},
                           {"ready", ready},
                           {"instances", std::move(instances)}});
             }
           });
  http.Post(kModel + "/infer",
            [&impl](const httplib::Request& request, httplib::Response& response) {
              infer(impl, request, response);
            });
  http.Get("/metrics", [&impl](const httplib::Request&, httplib::Response& response) {
    response.set_content(impl.metrics_text(), "text/plain; version=0.0.4");
  });
  // Whatever no route answers (an unknown path, a wrong method) still gets a KServe error body.
  http.set_error_handler([](const httplib::Request& request, httplib::Response& response) {
    if (response.body.empty())
      response.set_content(error_body("no route for " + request.method + " " + request.path),
                           "application/json");
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& response, std::exception_ptr error) {
        std::string message = "internal error";
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          message = e.what();
        } catch (...) {
        }
        reply_error(response, 500, message);
      });
}

}  // namespace hal::serve
