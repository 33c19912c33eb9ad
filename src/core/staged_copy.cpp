#include "core/staged_copy.hpp"

#include "core/caching_allocator.hpp"
#include "core/callback_thread.hpp"
#include "core/device_core.hpp"

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace hal::detail {
namespace {

// Host memory for one staged copy: pinned memory of the stream's device from its pinned pool
// (the caching allocator for pinned_host), else ordinary memory.
class Staging {
 public:
  Staging(DeviceImpl& device, size_t bytes) {
    if (device.supports(MemoryKind::pinned_host)) {
      pinned_ = core_of(device).allocator(MemoryKind::pinned_host).allocate_block(bytes);
      data_ = static_cast<char*>(pinned_->host_pointer());
    }
    if (!data_) {
      plain_ = std::make_unique<char[]>(bytes);
      data_ = plain_.get();
    }
  }
  char* data() const { return data_; }

 private:
  BufferPtr pinned_;
  std::unique_ptr<char[]> plain_;
  char* data_ = nullptr;
};

char* host_address(const BufferPtr& buffer, size_t offset) {
  auto* base = static_cast<char*>(buffer->host_pointer());
  return base ? base + offset : nullptr;
}

// Memory that a part of a copy still in flight uses, kept for the rest of the process: freed, a
// copy queued into it would write into whatever took its place.
void keep_for_good(std::shared_ptr<const void> memory) {
  static std::mutex mutex;
  static auto* kept = new std::vector<std::shared_ptr<const void>>;  // never destroyed
  std::lock_guard lock(mutex);
  kept->push_back(std::move(memory));
}

// Waits for the stream's work, so that `in_flight` may go. From one of the stream's own
// callbacks that wait would be for itself, and the copy's first part, enqueued by the callback,
// runs only after it returns: its memory is kept for good instead (a leak, on an error path).
void settle(StreamImpl& stream, std::shared_ptr<const void> in_flight) {
  if (RunningCallback::of(&stream)) return keep_for_good(std::move(in_flight));
  stream.synchronize();
}

// Enqueues the parts of a copy after its first. When one cannot be enqueued, the first (a copy
// into or out of `in_flight`, host memory that only the later parts would hold) is still in
// flight: the stream runs it before the error goes up and that memory with it.
template <class Rest>
void then(StreamImpl& stream, const std::shared_ptr<const void>& in_flight, Rest rest) {
  try {
    rest();
  } catch (const Error& enqueue) {
    try {
      settle(stream, in_flight);
    } catch (const Error& earlier) {
      // The synchronize took the failure of earlier work from the stream: the caller hears of
      // both, or the earlier one would never be reported.
      throw Error(
          enqueue.code(),
          enqueue.message() + "; earlier work on the stream failed too: " + earlier.message(),
          enqueue.native_code());
    }
    throw;
  } catch (...) {
    try {
      settle(stream, in_flight);
    } catch (...) {  // not a hal::Error: the enqueue's failure is the one to report
    }
    throw;
  }
}

}  // namespace

void read_now(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes) {
  if (const char* host = host_address(src, src_offset)) {
    std::memcpy(dst, host, bytes);
    return;
  }
  auto stream = core_of(src->device()).transfer_stream();
  stream->copy_to_host(dst, src, src_offset, bytes);
  stream->synchronize();
}

void write_now(const BufferPtr& dst, size_t dst_offset, const void* src, size_t bytes) {
  if (char* host = host_address(dst, dst_offset)) {
    std::memcpy(host, src, bytes);
    return;
  }
  auto stream = core_of(dst->device()).transfer_stream();
  stream->copy_from_host(dst, dst_offset, src, bytes);
  stream->synchronize();
}

void enqueue_staged_copy(StreamImpl& stream, const BufferPtr& dst, size_t dst_offset,
                         const BufferPtr& src, size_t src_offset, size_t bytes) {
  DeviceImpl& here = stream.device();
  const bool src_here = &src->device() == &here;
  const bool dst_here = &dst->device() == &here;

  if (src_here && !dst_here) {
    if (char* host = host_address(dst, dst_offset)) {  // e.g. into CPU memory: no staging
      stream.copy_to_host(host, src, src_offset, bytes);
      then(stream, dst, [&] { stream.keep_until_done(dst); });
      return;
    }
    auto staging = std::make_shared<Staging>(here, bytes);
    stream.copy_to_host(staging->data(), src, src_offset, bytes);
    then(stream, staging, [&] {
      stream.host_callback([=] { write_now(dst, dst_offset, staging->data(), bytes); });
    });
    return;
  }
  if (dst_here && !src_here) {
    if (const char* host = host_address(src, src_offset)) {
      stream.copy_from_host(dst, dst_offset, host, bytes);
      then(stream, src, [&] { stream.keep_until_done(src); });
      return;
    }
    auto staging = std::make_shared<Staging>(here, bytes);
    stream.host_callback([=] { read_now(staging->data(), src, src_offset, bytes); });
    then(stream, staging, [&] {
      stream.copy_from_host(dst, dst_offset, staging->data(), bytes);
      stream.keep_until_done(staging);
    });
    return;
  }
  // Neither buffer is here (or the backend could not copy between two of its devices).
  auto staging = std::make_shared<Staging>(here, bytes);
  stream.host_callback([=] {
    read_now(staging->data(), src, src_offset, bytes);
    write_now(dst, dst_offset, staging->data(), bytes);
  });
}

}  // namespace hal::detail
