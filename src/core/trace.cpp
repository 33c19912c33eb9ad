// The trace recorder: events kept in memory under a lock while recording, written as Chrome
// trace-event JSON by stop() or at exit.
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/trace_record.hpp"
#include "hal/backend.hpp"
#include "hal/buffer.hpp"
#include "hal/error.hpp"
#include "hal/log.hpp"

namespace hal::trace {

namespace detail {
std::atomic<bool> recording{false};
}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;

// Whether the time-stamp counter ticks at a constant rate (the kernel says so in cpuinfo).
bool constant_tsc() {
#if defined(__x86_64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0) return line.find(" constant_tsc") != std::string::npos;
#endif
  return false;
}
const bool tsc_is_constant = constant_tsc();

struct Record {
  char phase;  // 'X' span, 's' flow start, 'f' flow end
  uint64_t track;
  uint64_t ts, dur;           // in the clock's ticks
  std::string_view category;  // a literal
  std::string name;
  detail::SpanArgs args;
  uint64_t flow = 0;
};

// Events kept in memory at most (about 200 bytes each): a long run keeps its first million and
// counts the rest, which the file reports as otherData.dropped_events.
constexpr size_t kMaxRecords = 1'000'000;

struct Recorder {
  std::mutex mutex;
  std::filesystem::path file;
  // The clock's ticks and steady_clock at the trace's start: microseconds from ticks.
  uint64_t epoch_ticks = 0;
  Clock::time_point epoch = Clock::now();
  uint64_t generation = 0;                   // a new trace gives threads new tracks
  std::atomic<uint64_t> generation_seen{0};  // the same, for reads without the lock
  std::vector<Record> records;
  std::map<uint64_t, std::string> track_names;
  std::map<const StreamImpl*, std::pair<uint64_t, const DeviceImpl*>> stream_tracks;  // by address:
  // a stream made where a dropped one was, on another device, gets a track of its own
  std::map<std::string, int> streams_per_device;
  std::map<const EventImpl*, uint64_t> latest_flow;
  uint64_t next_track = 1, next_flow = 1, dropped = 0;
  int threads = 0;

  // Whether there is room for one more record (counting the ones that find none).
  bool room() {
    if (records.size() < kMaxRecords) return true;
    if (dropped++ == 0)
      log(LogLevel::warn, "trace: " + std::to_string(kMaxRecords) +
                              " events recorded; later ones are dropped (counted in the file)");
    return false;
  }
};

Recorder& recorder() {
  static Recorder* r = new Recorder;  // never destroyed: written from atexit
  return *r;
}

thread_local struct { uint64_t generation = 0, track = 0; } thread_track_cache;
thread_local bool last_hit = false;
// The stream this thread traced last: most work comes in runs on one stream.
thread_local struct {
  uint64_t generation = 0, track = 0;
  const StreamImpl* stream = nullptr;
  const DeviceImpl* device = nullptr;
} stream_track_cache;

nlohmann::ordered_json args_json(const detail::SpanArgs& a) {
  using Kind = detail::SpanArgs::Kind;
  switch (a.kind) {
    case Kind::none:
      return nlohmann::ordered_json::object();
    case Kind::bytes:
      return {{"bytes", a.n[0]}};
    case Kind::nodes:
      return {{"nodes", a.n[0]}};
    case Kind::launch:
      return {{"global", {a.n[0], a.n[1], a.n[2]}},
              {"local", {a.n[3], a.n[4], a.n[5]}},
              {"shared_bytes", a.n[6]}};
    case Kind::allocation:
      return {{"bytes", a.n[0]},
              {"kind", std::string(to_string(static_cast<MemoryKind>(a.n[1])))},
              {"cache_hit", a.n[2] != 0}};
  }
  return nlohmann::ordered_json::object();
}

// Ticks to microseconds from the trace's start.
struct TimeScale {
  uint64_t epoch;
  double us_per_tick;
  double us(uint64_t ticks) const {
    return ticks > epoch ? static_cast<double>(ticks - epoch) * us_per_tick : 0.0;
  }
};

nlohmann::ordered_json to_json(const Record& r, int pid, const TimeScale& time) {
  nlohmann::ordered_json e{
      {"ph", std::string(1, r.phase)}, {"pid", pid}, {"tid", r.track}, {"ts", time.us(r.ts)}};
  if (r.phase == 'X') {
    e["dur"] = static_cast<double>(r.dur) * time.us_per_tick;
    e["cat"] = std::string(r.category);
    e["name"] = r.name;
    e["args"] = args_json(r.args);
  } else {
    e["cat"] = "flow";
    e["name"] = "event";
    e["id"] = r.flow;
    if (r.phase == 'f') e["bp"] = "e";
  }
  return e;
}

// Writes and clears the trace; the caller holds the lock.
void write_locked(Recorder& r) {
  const int pid = static_cast<int>(getpid());
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  events.push_back(
      {{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", "hal"}}}});
  for (const auto& [track, name] : r.track_names)
    events.push_back({{"ph", "M"},
                      {"pid", pid},
                      {"tid", track},
                      {"name", "thread_name"},
                      {"args", {{"name", name}}}});
  // By track, then by start; a span before the flow events inside it.
  std::stable_sort(r.records.begin(), r.records.end(), [](const Record& a, const Record& b) {
    if (a.track != b.track) return a.track < b.track;
    if (a.ts != b.ts) return a.ts < b.ts;
    return a.phase == 'X' && b.phase != 'X';
  });
  // Ticks per microsecond from the clock's and steady_clock's progress over the trace.
  const uint64_t ticks = detail::now() - r.epoch_ticks;
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - r.epoch).count();
  const TimeScale time{r.epoch_ticks,
                       tsc_is_constant && ticks > 0 ? us / static_cast<double>(ticks) : 1e-3};
  for (const Record& record : r.records) events.push_back(to_json(record, pid, time));
  const nlohmann::ordered_json document{
      {"displayTimeUnit", "ns"},
      {"otherData", {{"dropped_events", r.dropped}, {"max_events", kMaxRecords}}},
      {"traceEvents", events}};
  std::ofstream out(r.file);
  out << document.dump() << "\n";
  if (!out) throw Error(ErrorCode::InvalidArgument, "trace: cannot write " + r.file.string());
  r.records.clear();
  r.records.shrink_to_fit();
  r.dropped = 0;
}

void stop_at_exit() {
  try {
    stop();
  } catch (const std::exception& error) {
    log(LogLevel::error, error.what());
  }
}

const bool started_from_environment = [] {
  if (const char* file = std::getenv("HAL_TRACE"); file && *file) {
    try {
      start(file);
    } catch (const std::exception& error) {
      log(LogLevel::error, std::string("HAL_TRACE: ") + error.what());
    }
  }
  return true;
}();

}  // namespace

void start(const std::filesystem::path& file) {
  static std::once_flag at_exit;
  std::call_once(at_exit, [] { std::atexit(stop_at_exit); });
  if (!std::ofstream(file))
    throw Error(ErrorCode::InvalidArgument, "trace: cannot create " + file.string());
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (detail::recording.load()) write_locked(r);
  r.file = file;
  r.epoch = Clock::now();
  r.epoch_ticks = detail::now();
  ++r.generation;
  r.generation_seen.store(r.generation);
  r.records.clear();
  r.track_names.clear();
  r.stream_tracks.clear();
  r.streams_per_device.clear();
  r.latest_flow.clear();
  r.threads = 0;
  r.dropped = 0;
  detail::recording.store(true);
}

void stop() {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (!detail::recording.load()) return;
  detail::recording.store(false);
  write_locked(r);
}

Scope::Scope(std::string_view name) {
  if (!enabled()) [[likely]]
    return;
  name_ = name;
  start_ = detail::now();
}

Scope::~Scope() {
  if (start_ == 0 || !enabled()) return;
  detail::span(detail::thread_track(), "user", std::move(name_), start_, detail::now());
}

namespace detail {

uint64_t now() {
#if defined(__x86_64__)
  if (tsc_is_constant) return __rdtsc();
#endif
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
}

Track stream_track(const StreamImpl& stream) {
  Recorder& r = recorder();
  auto& cached = stream_track_cache;
  // The generation is read without the lock: a stale one only sends the call to the map.
  if (cached.stream == &stream && cached.device == &stream.device() &&
      cached.generation == r.generation_seen.load(std::memory_order_relaxed))
    return {cached.track};
  std::lock_guard lock(r.mutex);
  auto& [track, device] = r.stream_tracks[&stream];
  if (track == 0 || device != &stream.device()) {
    track = r.next_track++;
    device = &stream.device();
    const std::string& id = device->info().id;
    r.track_names[track] = id + " stream " + std::to_string(r.streams_per_device[id]++);
  }
  cached = {r.generation, track, &stream, device};
  return {track};
}

Track thread_track() {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (thread_track_cache.generation != r.generation) {
    thread_track_cache = {r.generation, r.next_track++};
    r.track_names[thread_track_cache.track] = "host thread " + std::to_string(r.threads++);
  }
  return {thread_track_cache.track};
}

void span(Track track, std::string_view category, std::string&& name, uint64_t start, uint64_t end,
          const SpanArgs& args) {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (!recording.load() || !r.room()) return;
  r.records.push_back(
      {'X', track.id, start, end > start ? end - start : 0, category, std::move(name), args});
}

void flow_from_record(Track track, const EventImpl& event, uint64_t at) {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (!recording.load() || !r.room()) return;
  const uint64_t id = r.next_flow++;
  r.latest_flow[&event] = id;
  r.records.push_back({'s', track.id, at, 0, {}, {}, {}, id});
}

void flow_to_wait(Track track, const EventImpl& event, uint64_t at) {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (!recording.load()) return;
  const auto found = r.latest_flow.find(&event);
  if (found == r.latest_flow.end() || !r.room()) return;  // recorded before the trace began
  r.records.push_back({'f', track.id, at, 0, {}, {}, {}, found->second});
}

void note_allocation(bool cache_hit) { last_hit = cache_hit; }
bool last_allocation_hit() { return last_hit; }

}  // namespace detail
}  // namespace hal::trace
