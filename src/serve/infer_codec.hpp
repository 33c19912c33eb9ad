// The bodies of KServe v2 inference requests and responses: JSON tensors, and the binary-tensor
// extension (a JSON header of Inference-Header-Content-Length bytes, then each binary tensor's
// bytes in order). Every refusal is a RequestError (400) naming the field that is wrong.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/host_tensor.hpp"
#include "serve/model_signature.hpp"

namespace hal::serve {

struct InferRequest {
  std::optional<std::string> id;  // echoed in the response where the request has one, even ""
  HostTensors inputs;
  int64_t rows = 1;  // the first dimension's size where the model batches, else 1
  // The required inputs' datatypes and shapes but the first dimension: requests with equal keys
  // stack.
  std::string shape_key;
  // It gives an optional input: it runs in a batch of its own, as its value (a weight, say)
  // would hold for every request of a batch. One that leaves it out gets the model's default.
  bool alone = false;
  int64_t priority = 1;    // 1 is served first
  int64_t timeout_us = 0;  // 0: no limit
  // The parameter that gave timeout_us, as the client named it ("timeout_us", or Triton's
  // "timeout"), so that the 504 names what the client sent.
  std::string_view timeout_name = "timeout_us";
  // The outputs to return, in order (all of the model's where the request names none), and
  // whether each goes back as binary data.
  std::vector<std::string> outputs;
  std::vector<bool> binary_outputs;
};

// `header_length` is the Inference-Header-Content-Length header's text, if the request has one.
// The JSON is read against the signature as it is parsed: an input's 'data' past what its shape
// holds, or nested deeper, is refused there, and fields hal does not read are not kept, so that
// a large body costs little more than its own bytes.
InferRequest parse_infer_request(std::string_view body,
                                 const std::optional<std::string>& header_length,
                                 const ModelSignature& signature);

struct InferResponse {
  std::string body;
  std::optional<size_t> header_length;  // set where binary outputs follow the JSON
};

// `outputs` holds at least the request's outputs. Outputs not asked for as binary data are JSON
// numbers (FP16 and BF16 too, exactly); NaN and infinities are written NaN, Infinity and
// -Infinity, as Triton writes them (RapidJSON's kWriteNanAndInfFlag; Python's json reads them).
InferResponse encode_infer_response(const ModelSignature& signature, const InferRequest& request,
                                    const HostTensors& outputs);

// GET /v2/models/NAME: {"name", "versions", "platform", "inputs", "outputs", "parameters"}; an
// optional input has "optional": true besides its name, datatype and shape.
nlohmann::json model_metadata(const ModelSignature& signature);

// A response's JSON text. Bytes that are not UTF-8 (a percent-decoded path, a header's value)
// become U+FFFD: nlohmann's strict dump would throw, and an error handler's throw ends the
// server (cpp-httplib calls it outside its own try).
std::string response_text(const nlohmann::json& body);

// The KServe error body: {"error": message}.
std::string error_body(const std::string& message);

}  // namespace hal::serve
