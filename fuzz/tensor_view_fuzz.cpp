// libFuzzer target: tensor views from fuzzed shapes, strides, offsets and dtypes over a 64-byte
// buffer. Each view is either refused with hal::Error (InvalidArgument, or OutOfRange past the
// buffer) whose message names the shape, or addresses only elements inside the buffer, by a
// bound computed here in 128 bits, apart from hal's arithmetic. Views made from an accepted one
// (slice, expand, reshape, permute, squeeze, unsqueeze) must stay inside too: they may only be
// refused with InvalidArgument.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <optional>
#include <string>

#include "hal/hal.hpp"

namespace {

constexpr size_t kBufferBytes = 64;
constexpr size_t kMaxDims = 4;
constexpr int kMaxDerivedViews = 8;

hal::Buffer* buffer;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "tensor_view_fuzz: %s\n", what.c_str());
  std::abort();
}

// Half the values near the sizes of a small buffer, half anything int64 holds (libFuzzer's
// comparison tracing finds the edges of those).
int64_t fuzzed_value(FuzzedDataProvider& input) {
  if (input.ConsumeBool()) return input.ConsumeIntegralInRange<int64_t>(-2, 17);
  return input.ConsumeIntegral<int64_t>();
}

hal::Shape fuzzed_shape(FuzzedDataProvider& input, size_t dims) {
  hal::Shape shape(dims);
  for (int64_t& value : shape) value = fuzzed_value(input);
  return shape;
}

// hal's dtypes, and now and then a number that is none of them.
hal::DType fuzzed_dtype(FuzzedDataProvider& input) {
  const auto index = input.ConsumeIntegralInRange<size_t>(0, std::size(hal::kAllDTypes) + 1);
  if (index < std::size(hal::kAllDTypes)) return hal::kAllDTypes[index];
  return static_cast<hal::DType>(index + 100);
}

// An accepted view: every size, stride and the offset non-negative, its element count and
// bytes what hal reports, and its furthest element inside the buffer. Each step below stays
// under 2^127: a count or index already past the buffer ends the check before the next one.
void check_inside(const hal::Tensor& view) {
  const std::string what = view.describe() + " with strides " + hal::to_string(view.strides()) +
                           " and offset " + std::to_string(view.offset());
  if (view.offset() < 0) fail(what + ": a negative offset was accepted");
  for (size_t d = 0; d < view.shape().size(); ++d)
    if (view.shape()[d] < 0 || view.strides()[d] < 0) fail(what + ": a negative size or stride");
  unsigned __int128 count = 1;
  if (std::find(view.shape().begin(), view.shape().end(), 0) != view.shape().end()) count = 0;
  for (size_t d = 0; d < view.shape().size() && count > 0; ++d) {
    count *= static_cast<uint64_t>(view.shape()[d]);
    if (count > INT64_MAX) fail(what + ": more elements than int64 counts were accepted");
  }
  if (static_cast<int64_t>(count) != view.numel()) fail(what + ": numel() is wrong");
  const unsigned __int128 bytes = count * view.element_size();
  if (bytes > INT64_MAX) fail(what + ": more bytes than int64 counts were accepted");
  if (view.nbytes() != bytes) fail(what + ": nbytes() is wrong");
  if (count == 0) return;  // no element is addressed
  const size_t capacity = buffer->size() / view.element_size();
  unsigned __int128 last = static_cast<uint64_t>(view.offset());
  for (size_t d = 0; d < view.shape().size() && last < capacity; ++d)
    last += static_cast<unsigned __int128>(static_cast<uint64_t>(view.strides()[d])) *
            static_cast<uint64_t>(view.shape()[d] - 1);
  if (last >= capacity) fail(what + ": addresses an element past the buffer");
}

// The view `make` builds, or nothing when hal refuses it with one of `allowed` codes and a
// message containing `named`; anything else thrown ends the run.
std::optional<hal::Tensor> attempt(const std::function<hal::Tensor()>& make,
                                   std::initializer_list<hal::ErrorCode> allowed,
                                   const std::string& named) {
  try {
    return make();
  } catch (const hal::Error& error) {
    bool expected = false;
    for (hal::ErrorCode code : allowed) expected |= error.code() == code;
    if (!expected) fail(std::string("unexpected error code: ") + error.what());
    if (error.message().find(named) == std::string::npos)
      fail("the message does not name " + named + ": " + error.what());
    return std::nullopt;
  }
}

// A view derived from `view` by one fuzzed operation with fuzzed arguments.
std::function<hal::Tensor()> fuzzed_view_of(const hal::Tensor& view, FuzzedDataProvider& input) {
  const auto dim = [&] { return input.ConsumeIntegralInRange<int64_t>(-5, 5); };
  switch (input.ConsumeIntegralInRange(0, 5)) {
    case 0: {
      const int64_t d = dim(), start = fuzzed_value(input), end = fuzzed_value(input),
                    step = fuzzed_value(input);
      return [=] { return view.slice(d, start, end, step); };
    }
    case 1: {
      const hal::Shape shape = fuzzed_shape(input, input.ConsumeIntegralInRange<size_t>(0, 5));
      return [=] { return view.expand(shape); };
    }
    case 2: {
      const hal::Shape shape = fuzzed_shape(input, input.ConsumeIntegralInRange<size_t>(0, 5));
      return [=] { return view.reshape(shape); };
    }
    case 3: {
      const int64_t d0 = dim(), d1 = dim();
      return [=] { return view.transpose(d0, d1); };
    }
    case 4: {
      const int64_t d = dim();
      return [=] { return view.squeeze(d); };
    }
    default: {
      const int64_t d = dim();
      return [=] { return view.unsqueeze(d); };
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Made once: the registry probes every backend on first use.
  static hal::Buffer storage = hal::device("cpu:0").allocate(kBufferBytes);
  buffer = &storage;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  const size_t dims = input.ConsumeIntegralInRange<size_t>(0, kMaxDims);
  const hal::DType dtype = fuzzed_dtype(input);
  const bool contiguous = input.ConsumeBool();  // empty strides: row-major
  const hal::Shape shape = fuzzed_shape(input, dims);
  const hal::Shape strides = contiguous ? hal::Shape{} : fuzzed_shape(input, dims);
  const int64_t offset = fuzzed_value(input);

  std::optional<hal::Tensor> view =
      attempt([&] { return hal::Tensor(*buffer, dtype, shape, strides, offset); },
              {hal::ErrorCode::InvalidArgument, hal::ErrorCode::OutOfRange}, hal::to_string(shape));
  for (int n = 0; view && n < kMaxDerivedViews && input.remaining_bytes() > 0; ++n) {
    check_inside(*view);
    // The derived view's message names the view it came from.
    std::optional<hal::Tensor> derived =
        attempt(fuzzed_view_of(*view, input), {hal::ErrorCode::InvalidArgument},
                hal::to_string(view->shape()));
    if (derived) view = derived;
  }
  if (view) check_inside(*view);
  return 0;
}
