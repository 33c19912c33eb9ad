// The template backend: the smallest backend that hal drives completely, written to be copied
// when adding a new one (as IREE's "null" driver is). Its one device keeps memory the host
// cannot address (so hal stages copies, as it does for a real accelerator) and runs each
// stream's commands in order on a worker thread of its own. It compiles no kernels and runs no
// ops itself:
// hal reports those as Unsupported, or runs ops through its CPU fallback.
//
// Each method says what a real backend does instead. See docs/architecture.md, "How to add a
// backend".
#pragma once

#include <memory>

#include "hal/backend.hpp"

namespace hal::null_backend {

// A backend named "null" with one device, "null:0", of `memory_bytes` bytes. Register it with
// hal::register_backend; hal does not register it itself.
std::shared_ptr<Backend> make_backend(uint64_t memory_bytes = uint64_t{256} << 20);

}  // namespace hal::null_backend
