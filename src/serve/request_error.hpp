// A request the server refuses: the HTTP status and the message of the KServe error body.
#pragma once

#include <stdexcept>
#include <string>

namespace hal::serve {

struct RequestError : std::runtime_error {
  RequestError(int status_code, const std::string& message)
      : std::runtime_error(message), status(status_code) {}
  int status;
};

}  // namespace hal::serve
