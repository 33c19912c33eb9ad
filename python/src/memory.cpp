// The caching allocators as hal.Device methods: statistics and snapshots as dicts (named as
// PyTorch's torch.cuda.memory_stats names them where they fit), limits, the cache.
#include "bindings.hpp"
#include "hal/allocator.hpp"
#include "hal/error.hpp"
#include "hal/units.hpp"

namespace hal::python {
namespace {

MemoryKind to_kind(const std::string& name) {
  for (MemoryKind kind : {MemoryKind::device, MemoryKind::pinned_host, MemoryKind::unified})
    if (name == to_string(kind)) return kind;
  throw Error(ErrorCode::InvalidArgument,
              "'" + name + "' is not a memory kind: device, pinned_host or unified");
}

py::dict stat(const MemoryStat& value) {
  py::dict dict;
  dict["current"] = value.current;
  dict["peak"] = value.peak;
  return dict;
}

py::dict stats_dict(const MemoryStats& s) {
  py::dict dict;
  dict["allocated_bytes"] = stat(s.allocated_bytes);
  dict["reserved_bytes"] = stat(s.reserved_bytes);
  dict["active_bytes"] = stat(s.active_bytes);
  dict["requested_bytes"] = stat(s.requested_bytes);
  dict["num_allocs"] = s.num_allocs;
  dict["num_frees"] = s.num_frees;
  dict["cache_hits"] = s.cache_hits;
  dict["cache_misses"] = s.cache_misses;
  dict["num_splits"] = s.num_splits;
  dict["num_merges"] = s.num_merges;
  dict["num_segment_allocs"] = s.num_segment_allocs;
  dict["num_segment_frees"] = s.num_segment_frees;
  dict["num_alloc_retries"] = s.num_alloc_retries;
  dict["num_ooms"] = s.num_ooms;
  return dict;
}

py::dict snapshot_dict(const MemorySnapshot& snapshot) {
  py::dict dict;
  dict["device"] = snapshot.device;
  dict["kind"] = std::string(to_string(snapshot.kind));
  py::list segments;
  for (const MemorySegmentInfo& segment : snapshot.segments) {
    py::dict entry;
    entry["id"] = segment.id;
    entry["size"] = segment.size;
    entry["small_pool"] = segment.small_pool;
    py::list blocks;
    for (const MemoryBlockInfo& block : segment.blocks) {
      py::dict b;
      b["offset"] = block.offset;
      b["size"] = block.size;
      b["requested"] = block.requested;
      b["allocated"] = block.allocated;
      blocks.append(b);
    }
    entry["blocks"] = blocks;
    segments.append(entry);
  }
  dict["segments"] = segments;
  return dict;
}

// A limit in bytes: an int, a size as people write it ("8G", "512 MiB"), or None for none.
uint64_t limit_bytes(py::handle limit) {
  if (limit.is_none()) return 0;
  if (py::isinstance<py::str>(limit)) {
    const Parsed<uint64_t> parsed =
        parse_size("memory limit", limit.cast<std::string>(), 1, UINT64_MAX);
    if (!parsed.value) throw Error(ErrorCode::InvalidArgument, parsed.error);
    return *parsed.value;
  }
  if (!is_integer(limit))
    throw Error(ErrorCode::InvalidArgument, "memory limit: " + py::repr(limit).cast<std::string>() +
                                                " is not an int, a size ('8G') or None");
  const std::optional<int64_t> bytes = to_int64(limit);
  // 0 is the allocator's "no limit": given as a number it would lift the limit silently.
  if (!bytes || *bytes <= 0)
    throw Error(ErrorCode::InvalidArgument,
                "memory limit: " + py::repr(limit).cast<std::string>() +
                    " bytes is not a positive int64; give None for no limit");
  return static_cast<uint64_t>(*bytes);
}

}  // namespace

void bind_memory(py::module_&, py::class_<Device>& device) {
  device
      .def(
          "memory_stats",
          [](const Device& d, const std::string& kind) {
            return stats_dict(d.allocator(to_kind(kind)).stats());
          },
          py::arg("kind") = "device",
          "The caching allocator's statistics for one memory kind, as a dict.")
      .def(
          "reset_peak_memory_stats",
          [](const Device& d, const std::string& kind) {
            d.allocator(to_kind(kind)).reset_peak_stats();
          },
          py::arg("kind") = "device")
      .def(
          "memory_snapshot",
          [](const Device& d, const std::string& kind) {
            return snapshot_dict(d.allocator(to_kind(kind)).snapshot());
          },
          py::arg("kind") = "device", "Every segment and block of one memory kind, as a dict.")
      .def(
          "set_memory_limit",
          [](const Device& d, py::handle limit, const std::string& kind) {
            d.allocator(to_kind(kind)).set_limit(limit_bytes(limit));
          },
          py::arg("limit"), py::arg("kind") = "device",
          "A hard limit on the bytes reserved: a positive int, a size ('8G'), or None for none.")
      .def(
          "memory_limit",
          [](const Device& d, const std::string& kind) -> py::object {
            const uint64_t limit = d.allocator(to_kind(kind)).config().limit_bytes;
            if (limit == 0) return py::none();
            return py::int_(limit);
          },
          py::arg("kind") = "device", "The limit set, in bytes; None when none is.")
      .def(
          "empty_cache",
          [](const Device& d) {
            py::gil_scoped_release unlocked;
            d.empty_cache();
          },
          "Returns cached, unused segments of every memory kind to the backend.");
}

}  // namespace hal::python
