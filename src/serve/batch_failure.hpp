// How a failed batch is read: whose fault it was decides whether its instance stays in rotation.
#pragma once

#include <exception>

#include "hal/error.hpp"

namespace hal::serve {

// The error a batch's run threw, as a hal::Error: an Error as it is; the host running out of
// memory (std::bad_alloc: the batch's inputs and outputs, sized by what the requests hold) as
// OutOfMemory; anything else as Internal, with its message.
Error batch_failure(std::exception_ptr thrown, size_t requests);

// Errors that come from what a request holds rather than from the device: the request fails,
// the instance stays in rotation. Out of memory is one: a request's own dimensions (up to the
// protocol's limits) can ask for more than the device or the host has.
bool request_fault(const Error& error);

}  // namespace hal::serve
