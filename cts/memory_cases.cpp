// memory.*: allocation of every size from 1 byte up, alignment, kinds, out-of-memory behaviour,
// limits and statistics.
#include <algorithm>
#include <cstring>

#include "case.hpp"

namespace hal::cts {
namespace {

// Writes a pattern to the whole buffer and reads it back.
void round_trip(const Device& d, const Buffer& buffer) {
  Stream stream = d.create_stream();
  const auto in = pattern(buffer.size(), 5);
  std::vector<unsigned char> out(buffer.size(), 0);
  stream.copy_from_host(buffer, in.data(), in.size());
  stream.copy_to_host(out.data(), buffer, out.size());
  stream.synchronize();
  check(out == in, "the bytes read back differ from those written");
}

}  // namespace

void add_memory_cases(Cases& cases) {
  for (size_t bytes : {size_t{1}, size_t{3}, size_t{512}, size_t{4096}, size_t{65537},
                       size_t{1} << 20, size_t{16} << 20})
    cases.push_back(
        {"memory.allocate." + std::to_string(bytes) + "_bytes", [bytes](const Device& d) {
           Buffer buffer = d.allocate(bytes);
           check(buffer.size() == bytes, "size() is " + std::to_string(buffer.size()));
           check(buffer.device() == d, "the buffer is on another device");
           round_trip(d, buffer);
         }});
  cases.push_back({"memory.allocate.largest_up_to_256MiB", [](const Device& d) {
                     const size_t bytes = static_cast<size_t>(std::min<uint64_t>(
                         d.info().limits.max_allocation_bytes, uint64_t{256} << 20));
                     Buffer buffer = d.allocate(bytes);
                     check(buffer.size() == bytes, "wrong size");
                     round_trip(d, buffer);
                   }});
  cases.push_back({"memory.host_pointers_are_aligned", [](const Device& d) {
                     for (size_t bytes : {1, 100, 4096}) {
                       Buffer buffer = d.allocate(bytes);
                       if (!buffer.host_accessible())
                         throw NotSupported(d.id() + "'s device memory is not host-visible");
                       check(buffer.host_data() != nullptr, "host_data() is null");
                       check(reinterpret_cast<uintptr_t>(buffer.host_data()) % 256 == 0,
                             "a buffer of " + std::to_string(bytes) + " bytes is not 256-aligned");
                     }
                   }});
  cases.push_back({"memory.zero_bytes_is_invalid_argument", [](const Device& d) {
                     check_error([&] { d.allocate(0); }, ErrorCode::InvalidArgument,
                                 {d.id(), "0 bytes"}, "allocate(0)");
                   }});
  cases.push_back({"memory.beyond_total_is_out_of_memory", [](const Device& d) {
                     const uint64_t too_much = d.info().memory_total.bytes * 4 + (1ull << 30);
                     check_error([&] { d.allocate(static_cast<size_t>(too_much)); },
                                 ErrorCode::OutOfMemory, {d.id()}, "allocating 4x the total");
                   }});
  cases.push_back({"memory.out_of_memory_leaves_the_device_usable", [](const Device& d) {
                     try {
                       d.allocate(
                           static_cast<size_t>(d.info().memory_total.bytes * 4 + (1ull << 30)));
                     } catch (const Error&) {
                     }
                     round_trip(d, d.allocate(4096));
                   }});
  const std::pair<MemoryKind, std::string_view> kinds[] = {
      {MemoryKind::pinned_host, feature::kPinnedHostMemory},
      {MemoryKind::unified, feature::kUnifiedMemory}};
  // Named copies: Clang before 16 captures no structured bindings (the fuzz preset's Clang 14).
  for (const auto& entry : kinds) {
    const MemoryKind kind = entry.first;
    const std::string_view needed = entry.second;
    cases.push_back(
        {"memory.kind." + std::string(to_string(kind)), [kind, needed](const Device& d) {
           if (!d.info().has_feature(needed))
             throw NotSupported(d.id() + " lacks the " + std::string(needed) + " feature");
           Buffer buffer = d.allocate(8192, kind);
           check(buffer.kind() == kind, "wrong kind");
           check(buffer.host_accessible(), "not host-accessible");
           std::memset(buffer.host_data(), 3, 8192);
           round_trip(d, buffer);
         }});
  }
  cases.push_back({"memory.host_data_of_device_only_memory_is_refused", [](const Device& d) {
                     Buffer buffer = d.allocate(64);
                     if (buffer.host_accessible())
                       throw NotSupported(d.id() + "'s device memory is host-visible");
                     // The message points to the call that works instead.
                     check_error([&] { buffer.host_data(); }, ErrorCode::Unsupported,
                                 {d.id(), "copy_to_host"}, "host_data");
                   }});
  cases.push_back({"memory.stats_follow_allocations", [](const Device& d) {
                     Stream stream = d.create_stream();
                     stream.synchronize();
                     const uint64_t before = d.allocator().stats().allocated_bytes.current;
                     {
                       Buffer buffer = d.allocate(1 << 20);
                       check(d.allocator().stats().allocated_bytes.current >= before + (1 << 20),
                             "allocated_bytes did not grow by the allocation");
                     }
                     check(d.allocator().stats().allocated_bytes.current == before,
                           "allocated_bytes did not return after the buffer was dropped");
                   }});
  cases.push_back({"memory.empty_cache_returns_unused_segments", [](const Device& d) {
                     { Buffer buffer = d.allocate(4 << 20); }
                     d.empty_cache();
                     for (const auto& segment : d.allocator().snapshot().segments)
                       check(std::any_of(segment.blocks.begin(), segment.blocks.end(),
                                         [](const MemoryBlockInfo& b) { return b.allocated; }),
                             "segment " + std::to_string(segment.id) +
                                 " holds no allocation but stayed after empty_cache");
                   }});
  cases.push_back({"memory.limit_is_enforced_and_removable", [](const Device& d) {
                     d.empty_cache();
                     const uint64_t reserved = d.allocator().stats().reserved_bytes.current;
                     d.allocator().set_limit(reserved + (4 << 20));
                     try {
                       check_error([&] { d.allocate(64 << 20); }, ErrorCode::OutOfMemory,
                                   {d.id(), "limit"}, "allocating past the limit");
                     } catch (...) {
                       d.allocator().set_limit(0);
                       throw;
                     }
                     d.allocator().set_limit(0);
                     Buffer after = d.allocate(8 << 20);
                     check(after.size() == (8u << 20), "allocation after removing the limit");
                   }});
}

}  // namespace hal::cts
