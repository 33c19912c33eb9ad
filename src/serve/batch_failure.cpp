#include "serve/batch_failure.hpp"

#include <new>
#include <string>

namespace hal::serve {

Error batch_failure(std::exception_ptr thrown, size_t requests) {
  try {
    std::rethrow_exception(thrown);
  } catch (const Error& error) {
    return error;
  } catch (const std::bad_alloc&) {
    return Error(ErrorCode::OutOfMemory, "the host's memory ran out running a batch of " +
                                             std::to_string(requests) + " request(s)");
  } catch (const std::exception& error) {
    return Error(ErrorCode::Internal, error.what());
  } catch (...) {
    return Error(ErrorCode::Internal, "a batch's run threw something that is not an exception");
  }
}

bool request_fault(const Error& error) {
  return error.code() == ErrorCode::InvalidArgument || error.code() == ErrorCode::OutOfRange ||
         error.code() == ErrorCode::Unsupported || error.code() == ErrorCode::OutOfMemory;
}

}  // namespace hal::serve
