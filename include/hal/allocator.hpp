// Allocators: the interface, what it reports and how it is configured. Each device has one
// caching allocator per memory kind (Device::allocator); Device::allocate goes through it
// unless told to bypass it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hal/buffer.hpp"

namespace hal {

class Device;
class DeviceImpl;

// Names follow PyTorch's torch.cuda.memory_stats where they fit. Counts and current figures are
// exact whichever threads allocate and free. A buffer freed into its thread's cache of recent
// frees (docs/design.md, "Fast paths") counts as freed at once, but its block stays handed out
// by the pools until the cache is flushed (empty_cache, snapshot, reset_peak_stats, running out
// of memory, the thread's end): peaks count such blocks, as the pools see them.
struct MemoryStat {
  uint64_t current = 0;
  uint64_t peak = 0;
};

struct MemoryStats {
  MemoryStat allocated_bytes;  // in blocks handed out (rounded sizes)
  MemoryStat reserved_bytes;   // in segments taken from the backend
  MemoryStat active_bytes;     // in blocks not yet returned: equals allocated, as enqueued
                               // work holds its buffers (see record_stream)
  MemoryStat requested_bytes;  // as asked for, before rounding
  uint64_t num_allocs = 0;
  uint64_t num_frees = 0;
  uint64_t cache_hits = 0;    // served from a cached block
  uint64_t cache_misses = 0;  // needed a new segment
  uint64_t num_splits = 0;
  uint64_t num_merges = 0;  // free neighbours coalesced
  uint64_t num_segment_allocs = 0;
  uint64_t num_segment_frees = 0;
  uint64_t num_alloc_retries = 0;  // cached segments released to retry an allocation
  uint64_t num_ooms = 0;           // allocations refused (OutOfMemory), each once after any retry
};

struct MemoryBlockInfo {
  uint64_t offset = 0;  // within its segment
  uint64_t size = 0;
  uint64_t requested = 0;  // 0 when free
  bool allocated = false;
};

struct MemorySegmentInfo {
  uint64_t id = 0;
  uint64_t size = 0;
  bool small_pool = false;              // segments of the small-block pool hold requests <= 1 MiB
  std::vector<MemoryBlockInfo> blocks;  // in address order, covering the segment
};

struct MemorySnapshot {
  std::string device;
  MemoryKind kind = MemoryKind::device;
  std::vector<MemorySegmentInfo> segments;
};

enum class MemoryPressure : uint8_t { warning, critical };

struct MemoryPressureEvent {
  std::string device;
  MemoryKind kind = MemoryKind::device;
  MemoryPressure level = MemoryPressure::warning;
  uint64_t reserved_bytes = 0;
  uint64_t limit_bytes = 0;  // the limit, or the device's total memory when none is set
};

// Called outside the allocator's lock, on the thread whose allocation crossed the threshold,
// once that allocation is complete. A callback may allocate, free, or remove itself or others; a
// removed callback is not called again, even for a second threshold the same allocation crossed.
// What it throws is caught and logged at error level: the allocation stands.
using MemoryPressureCallback = std::function<void(const MemoryPressureEvent&)>;

struct AllocatorConfig {
  // Hard limit on reserved bytes; 0: none (the device's own memory is the limit).
  uint64_t limit_bytes = 0;
  // Reserved as one segment of the large-block pool at its first allocation (the first request
  // over 1 MiB), so that early work does not grow that pool piece by piece; requests of 1 MiB
  // or less keep to their own pool of 2 MiB segments, as in PyTorch. 0: none.
  uint64_t initial_reserve_bytes = 0;
  // Each new large segment is at least the previous one times this (1: no growth), but never
  // more than max_segment_bytes; nor is the segment that requests under 10 MiB share (20 MiB
  // by default). A single request larger than max_segment_bytes still gets its own segment.
  double growth_factor = 1.0;
  uint64_t max_segment_bytes = uint64_t{1} << 30;
  // Fractions of the limit at which pressure callbacks fire, rising.
  double warning_fraction = 0.90;
  double critical_fraction = 0.95;
};

// The interface every device allocator implements; hal's is a caching allocator modeled on
// PyTorch's (size classes, small and large pools, split and coalesced blocks). Thread-safe.
class Allocator {
 public:
  virtual ~Allocator() = default;
  // Throws OutOfMemory with the figures (see Device::allocate).
  virtual Buffer allocate(size_t bytes) = 0;
  virtual MemoryStats stats() const = 0;
  virtual void reset_peak_stats() = 0;
  virtual MemorySnapshot snapshot() const = 0;
  // Returns cached memory that no buffer uses to the backend.
  virtual void empty_cache() = 0;
  virtual AllocatorConfig config() const = 0;
  // Throws InvalidArgument for a growth factor outside [1, 64], thresholds that do not satisfy
  // 0 < warning <= critical <= 1, or a maximum segment under 2 MiB.
  virtual void configure(const AllocatorConfig& config) = 0;
  // Sets config().limit_bytes alone: a hard limit on the bytes reserved; 0 removes it.
  virtual void set_limit(uint64_t bytes) = 0;
  // The same as a fraction (0, 1] of the device's total memory; throws InvalidArgument outside.
  virtual void set_limit_fraction(double fraction) = 0;
  // Returns an id for remove_pressure_callback.
  virtual uint64_t add_pressure_callback(MemoryPressureCallback callback) = 0;
  virtual void remove_pressure_callback(uint64_t id) = 0;
};

class Stream;

// Marks `buffer` as used by work enqueued on `stream` that hal cannot see (a library called with
// its raw address, say): its memory is held until the work enqueued on `stream` so far has
// completed, even if every handle is dropped sooner. Work enqueued through hal needs no such
// call: it holds its buffers already. When memory runs out, the allocator waits for such work
// and releases what it held before it gives up.
void record_stream(const Buffer& buffer, const Stream& stream);

// Hands out buffers whose lifetime a scope ends: the scope holds a handle to everything
// allocated through it and drops them all when it is destroyed. A buffer's memory then returns
// to the cache once no other handle (a copy taken out of the scope) and no enqueued work holds
// it. Not thread-safe: one scope belongs to one thread.
class MemoryScope {
 public:
  explicit MemoryScope(Device device);
  ~MemoryScope();
  MemoryScope(const MemoryScope&) = delete;
  MemoryScope& operator=(const MemoryScope&) = delete;

  Buffer allocate(size_t bytes, MemoryKind kind = MemoryKind::device);
  size_t size() const { return buffers_.size(); }

 private:
  std::shared_ptr<DeviceImpl> device_;
  std::vector<Buffer> buffers_;
};

}  // namespace hal
