// The KServe v2 REST endpoints and GET /metrics, on cpp-httplib.
#include <strings.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "hal/version.hpp"
#include "serve/request_error.hpp"
#include "serve/server_impl.hpp"

namespace hal::serve {
namespace {

using json = nlohmann::json;

// How often a handler waiting for its answer looks whether the server has stopped waiting
// (Impl::cut_off): the scheduler's promise has no way to wake it for that.
constexpr auto kCutOffPoll = std::chrono::milliseconds(50);
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

// What an error status means where httplib answers it itself, before or instead of a route.
std::string status_message(int status, const httplib::Request& request) {
  const std::string what = request.method + " " + request.path;
  switch (status) {
    case 400:
      if (request.path.empty()) return "malformed HTTP request line";
      if (request.method == "CONNECT" || request.method == "TRACE")
        return "method " + request.method + " is not served";
      return "malformed HTTP request " + what + " (its request line, headers or body)";
    case 404:
      return "no route for " + what;
    case 413:
      return "the request body is larger than the server's limit of " +
             std::to_string(kPayloadLimit) + " bytes";
    case 414:
      return "the request line is longer than the server's limit of " +
             std::to_string(CPPHTTPLIB_REQUEST_URI_MAX_LENGTH) + " bytes";
    case 415:
      return "Content-Encoding '" + request.get_header_value("Content-Encoding") +
             "' is not supported";
    case 416:
      return "the Range header is not valid";
    default:
      return "HTTP status " + std::to_string(status) + " for " + what;
  }
}

// Reads the request's body into `body`, or to discard it where `body` is null; 0, or the
// status of the refusal: 400 (unreadable), 413 (past kPayloadLimit), 415 (a multipart form,
// read and discarded, or a Content-Encoding httplib cannot decode). Read here rather than by
// httplib, which refuses a form-urlencoded body (curl -d's and urllib's default Content-Type)
// over 8192 bytes: a limit compiled into Debian's library, which no definition here changes.
int read_body(const httplib::Request& request, httplib::Response& response,
              const httplib::ContentReader& reader, std::string* body) {
  bool too_large = false;
  const auto keep = [&](const char* data, size_t size) {
    if (!body) return true;
    // A chunked or compressed body has no Content-Length that httplib could check first.
    too_large = size > kPayloadLimit - body->size();
    if (!too_large) body->append(data, size);
    return !too_large;
  };
  // httplib hands a multipart form to the two-callback reader only (the other would throw).
  const bool multipart = request.is_multipart_form_data();
  const bool read_all = multipart ? reader([](const httplib::MultipartFormData&) { return true; },
                                           [](const char*, size_t) { return true; })
                                  : reader(keep);
  if (too_large) return 413;
  if (!read_all) return response.status > 0 ? response.status : 400;
  return multipart && body ? 415 : 0;
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

// Counts an inference request refused before its body was parsed, where the path names a
// served model (an unknown name is no label of the metrics).
void count_refused(Server::Impl& impl, const std::string& model, int status) {
  if (impl.models.contains(model)) impl.metrics.count_request(model, status);
}

// The model's answer; RequestError 503 once the server stops waiting (Impl::cut_off).
Outcome await_answer(Server::Impl& impl, std::future<Outcome>& future, const std::string& name) {
  const auto limit = Clock::now() + kAnswerLimit;
  while (future.wait_for(kCutOffPoll) != std::future_status::ready) {
    if (impl.cut_off && future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      ++impl.cut_off_requests;
      throw RequestError(503,
                         "the server stopped before model '" + name + "' answered the request");
    }
    if (Clock::now() >= limit)
      throw RequestError(504, "model '" + name + "' gave no answer in time");
  }
  return future.get();
}

void infer(Server::Impl& impl, const httplib::Request& request, const std::string& body,
           httplib::Response& response) {
  const auto start = Clock::now();
  ModelScheduler* model = find_model(impl, request, response);
  if (!model) return;
  const std::string& name = model->signature().name;
  try {
    if (!impl.accepting) throw RequestError(503, "the server is shutting down");
    std::optional<std::string> header_length;
    if (request.has_header("Inference-Header-Content-Length"))
      header_length = request.get_header_value("Inference-Header-Content-Length");
    InferRequest parsed = parse_infer_request(body, header_length, model->signature());
    // Kept for encoding the answer: which outputs, binary or not, the id.
    InferRequest shape_of_answer;
    shape_of_answer.id = parsed.id;
    shape_of_answer.rows = parsed.rows;
    shape_of_answer.outputs = parsed.outputs;
    shape_of_answer.binary_outputs = parsed.binary_outputs;
    std::future<Outcome> future = model->submit(std::move(parsed));
    Outcome outcome = await_answer(impl, future, name);
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
  } catch (const std::exception& error) {  // answered here, not by the handler, to be counted
    reply_error(response, 500, error.what());
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
  // Not ready is 400, as KServe v2 asks ("a 4xx status code indicates false") and Triton does.
  http.Get("/v2/health/ready", [&impl](const httplib::Request&, httplib::Response& response) {
    const bool ready = impl.ready();
    reply_json(response, ready ? 200 : 400, {{"ready", ready}});
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
               reply_json(response, ready ? 200 : 400,
                          {{"name", model->signature().name},
                           {"ready", ready},
                           {"instances", std::move(instances)}});
             }
           });
  // Bodies are read by the routes (read_body), never by httplib: every method that carries
  // one has a route that reads it, the unknown paths' to discard it.
  http.Post(kModel + "/infer", [&impl](const httplib::Request& request, httplib::Response& response,
                                       const httplib::ContentReader& reader) {
    std::string body;
    const int refused = read_body(request, response, reader, &body);
    if (!refused) return infer(impl, request, body, response);
    if (refused == 415 && request.is_multipart_form_data())
      reply_error(response, 415,
                  "a multipart form is not an inference request: send the JSON "
                  "(or binary-tensor) body as it is");
    else
      reply_error(response, refused, status_message(refused, request));
    count_refused(impl, request.matches[1], refused);
  });
  const auto no_route = [](const httplib::Request& request, httplib::Response& response,
                           const httplib::ContentReader& reader) {
    const int refused = read_body(request, response, reader, nullptr);
    const int status = refused == 413 ? 413 : 404;
    reply_error(response, status, status_message(status, request));
  };
  http.Post(".*", no_route).Put(".*", no_route).Patch(".*", no_route).Delete(".*", no_route);
  http.Get("/metrics", [&impl](const httplib::Request&, httplib::Response& response) {
    response.set_content(impl.metrics_text(), "text/plain; version=0.0.4");
  });
  // A request that says nothing of its body's length has none (RFC 9112 6.3), but httplib would
  // read one until the client closes or its read timeout (5 s) ends: answered at once instead.
  http.set_pre_routing_handler(
      [&impl](const httplib::Request& request, httplib::Response& response) {
        const std::string& method = request.method;
        // The methods httplib reads a body for (its expect_content).
        const bool carries_body = method == "POST" || method == "PUT" || method == "PATCH" ||
                                  method == "PRI" || method == "DELETE";
        const bool chunked =
            ::strcasecmp(request.get_header_value("Transfer-Encoding").c_str(), "chunked") == 0;
        if (!carries_body || request.has_header("Content-Length") || chunked)
          return httplib::Server::HandlerResponse::Unhandled;
        static const std::regex infer_path(kModel + "/infer");
        std::smatch path;
        if (method == "POST" && std::regex_match(request.path, path, infer_path)) {
          reply_error(response, 411,
                      "POST " + request.path +
                          ": the request has no Content-Length (nor Transfer-Encoding: chunked)");
          count_refused(impl, path[1], 411);
        } else
          reply_error(response, 404, status_message(404, request));
        return httplib::Server::HandlerResponse::Handled;
      });
  // What httplib refuses itself (a malformed request, a path no route serves) still gets a
  // KServe error body saying why.
  http.set_error_handler([](const httplib::Request& request, httplib::Response& response) {
    if (response.body.empty())
      response.set_content(error_body(status_message(response.status, request)),
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
