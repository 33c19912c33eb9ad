// `hal memory [--device ID] [--json]`: runs a small workload through a device's caching
// allocator and prints its statistics and segments, so a person can see the allocator at work.
#include <iostream>

#include <nlohmann/json.hpp>
#include "commands.hpp"
#include "hal/hal.hpp"
#include "hal/units.hpp"
#include "json_text.hpp"

namespace hal::tool {
namespace {

using json = nlohmann::ordered_json;

// Layers of a small network: weights that stay, activations that come and go, and a scratch
// buffer per step. Returns what is still alive, so that the snapshot shows used blocks.
std::vector<Buffer> run_workload(const Device& device) {
  std::vector<Buffer> weights;
  for (size_t size : {size_t{768} * 768 * 4, size_t{768} * 3072 * 4, size_t{3072} * 768 * 4})
    weights.push_back(device.allocate(size));
  for (int step = 0; step < 4; ++step) {
    std::vector<Buffer> activations;
    for (int layer = 0; layer < 6; ++layer) {
      activations.push_back(device.allocate(static_cast<size_t>(64 + 16 * step) * 768 * 4));
      Buffer scratch = device.allocate(4096 + 512 * static_cast<size_t>(layer));
    }
  }
  weights.push_back(device.allocate(1000));  // a small one, split from a small segment
  return weights;
}

json stat_json(const MemoryStat& stat) { return {{"current", stat.current}, {"peak", stat.peak}}; }

json to_json(const MemoryStats& s) {
  return {{"allocated_bytes", stat_json(s.allocated_bytes)},
          {"reserved_bytes", stat_json(s.reserved_bytes)},
          {"active_bytes", stat_json(s.active_bytes)},
          {"requested_bytes", stat_json(s.requested_bytes)},
          {"num_allocs", s.num_allocs},
          {"num_frees", s.num_frees},
          {"cache_hits", s.cache_hits},
          {"cache_misses", s.cache_misses},
          {"num_splits", s.num_splits},
          {"num_merges", s.num_merges},
          {"num_segment_allocs", s.num_segment_allocs},
          {"num_segment_frees", s.num_segment_frees},
          {"num_alloc_retries", s.num_alloc_retries},
          {"num_ooms", s.num_ooms}};
}

json to_json(const MemorySnapshot& snapshot) {
  json segments = json::array();
  for (const auto& segment : snapshot.segments) {
    json blocks = json::array();
    for (const auto& block : segment.blocks)
      blocks.push_back({{"offset", block.offset},
                        {"size", block.size},
                        {"requested", block.requested},
                        {"allocated", block.allocated}});
    segments.push_back({{"id", segment.id},
                        {"size", segment.size},
                        {"pool", segment.small_pool ? "small" : "large"},
                        {"blocks", blocks}});
  }
  return segments;
}

void print_text(const Device& device, const MemoryStats& s, const MemorySnapshot& snapshot) {
  auto figure = [](const char* name, const MemoryStat& stat) {
    std::cout << "  " << name << " " << format_bytes(stat.current) << " (peak "
              << format_bytes(stat.peak) << ")\n";
  };
  std::cout << "caching allocator of " << device.id()
            << " (device memory), after the built-in workload\n";
  figure("allocated", s.allocated_bytes);
  figure("reserved ", s.reserved_bytes);
  figure("requested", s.requested_bytes);
  std::cout << "  allocs " << s.num_allocs << ", frees " << s.num_frees << ", cache hits "
            << s.cache_hits << ", misses " << s.cache_misses << ", splits " << s.num_splits
            << ", merges " << s.num_merges << ", segments +" << s.num_segment_allocs << " -"
            << s.num_segment_frees << ", retries " << s.num_alloc_retries << ", out of memory "
            << s.num_ooms << "\n";
  std::cout << "segments (blocks in address order; * in use):\n";
  for (const auto& segment : snapshot.segments) {
    std::cout << "  #" << segment.id << " " << (segment.small_pool ? "small" : "large") << " "
              << format_bytes(segment.size) << ":";
    for (const auto& block : segment.blocks)
      std::cout << " [" << (block.allocated ? "*" : "") << format_bytes(block.size) << "]";
    std::cout << "\n";
  }
}

void run(const std::string& id, bool json_output) {
  const Device device = hal::device(id);
  device.empty_cache();
  device.allocator().reset_peak_stats();
  const std::vector<Buffer> alive = run_workload(device);
  const MemoryStats stats = device.allocator().stats();
  const MemorySnapshot snapshot = device.allocator().snapshot();
  if (json_output) {
    std::cout << json{{"schema", "hal.memory/1"},
                      {"device", device.id()},
                      {"kind", "device"},
                      {"stats", to_json(stats)},
                      {"segments", to_json(snapshot)}}
                     .dump(2, ' ', false, kReplaceBadUtf8)
              << "\n";
  } else {
    print_text(device, stats, snapshot);
  }
}

}  // namespace

void add_memory_command(CLI::App& app) {
  auto* command = app.add_subcommand("memory", "Show a device's caching allocator at work");
  auto id = std::make_shared<std::string>("cpu:0");
  auto json_output = std::make_shared<bool>(false);
  command->add_option("--device", *id, "Device id or UUID prefix (default cpu:0)");
  command->add_flag("--json", *json_output, "Print JSON (schema hal.memory/1)");
  set_work(*command, [id, json_output] { run(*id, *json_output); });
}

}  // namespace hal::tool
