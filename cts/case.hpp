// What a conformance case is, and how it says what happened: returning passes, check() failing
// throws Failure, and a device that lacks what the case needs throws NotSupported.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "hal/hal.hpp"

namespace hal::cts {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct NotSupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Case {
  std::string name;
  std::function<void(const Device&)> body;
};
using Cases = std::vector<Case>;

inline void check(bool condition, const std::string& what) {
  if (!condition) throw Failure(what);
}

// Runs `fn`; Unsupported from hal becomes NotSupported with hal's message.
template <class Fn>
auto unless_unsupported(Fn&& fn) {
  try {
    return fn();
  } catch (const Error& error) {
    if (error.code() == ErrorCode::Unsupported) throw NotSupported(error.message());
    throw;
  }
}

// `bytes` bytes that differ from their neighbours and from another seed's, for copies to check.
inline std::vector<unsigned char> pattern(size_t bytes, unsigned seed) {
  std::vector<unsigned char> out(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>((i * 31 + seed) & 0xff);
  return out;
}

// Checks that `fn` throws hal::Error with `code` and a message holding each of `parts`.
void check_error(const std::function<void()>& fn, ErrorCode code,
                 const std::vector<std::string>& parts, const std::string& what);

// The groups of cases, one file each.
void add_device_cases(Cases& cases);
void add_memory_cases(Cases& cases);
void add_stream_cases(Cases& cases);
void add_copy_cases(Cases& cases);
void add_kernel_cases(Cases& cases);
void add_op_cases(Cases& cases);
void add_op_reference_cases(Cases& cases);
void add_op_reduce_cases(Cases& cases);
void add_op_conv_cases(Cases& cases);
void add_op_conv_transpose_cases(Cases& cases);
void add_op_layer_cases(Cases& cases);
void add_tensor_cases(Cases& cases);
void add_thread_cases(Cases& cases);

}  // namespace hal::cts
