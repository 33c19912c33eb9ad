// The trace recorder: events kept in memory under a lock while recording, written as Chrome
// trace-event JSON by stop() or at exit.
#include <unistd.h>

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
#include "hal/error.hpp"
#include "hal/log.hpp"

namespace hal::trace {

namespace detail {
std::atomic<bool> recording{false};
}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;

struct Record {
  char phase;  // 'X' span, 's' flow start, 'f' flow end
  uint64_t track;
  double ts, dur;
  std::string_view category;  // a literal
  std::string name, args;
  uint64_t flow = 0;
};

// Events kept in memory at most (about 200 bytes each): a long run keeps its first million and
// counts the rest, which the file reports as otherData.dropped_events.
constexpr size_t kMaxRecords = 1'000'000;

struct Recorder {
  std::mutex mutex;
  std::filesystem::path file;
  Clock::time_point epoch = Clock::now();
  uint64_t generation = 0;  // a new trace gives threads new tracks
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

nlohmann::ordered_json to_json(const Record& r, int pid) {
  nlohmann::ordered_json e{
      {"ph", std::string(1, r.phase)}, {"pid", pid}, {"tid", r.track}, {"ts", r.ts}};
  if (r.phase == 'X') {
    e["dur"] = r.dur;
    e["cat"] = std::string(r.category);
    e["name"] = r.name;
    e["args"] = nlohmann::json::parse(r.args, nullptr, false);
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
  for (const Record& record : r.records) events.push_back(to_json(record, pid));
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
  ++r.generation;
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
  start_us_ = detail::now_us();
}

Scope::~Scope() {
  if (start_us_ < 0 || !enabled()) return;
  detail::span(detail::thread_track(), "user", name_, start_us_, detail::now_us());
}

namespace detail {

double now_us() {
  return std::chrono::duration<double, std::micro>(Clock::now() - recorder().epoch).count();
}

Track stream_track(const StreamImpl& stream) {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  auto& [track, device] = r.stream_tracks[&stream];
  if (track == 0 || device != &stream.device()) {
    track = r.next_track++;
    device = &stream.device();
    const std::string& id = device->info().id;
    r.track_names[track] = id + " stream " + std::to_string(r.streams_per_device[id]++);
  }
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

void span(Track track, std::string_view category, std::string_view name, double start_us,
          double end_us, std::string args) {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (!recording.load() || !r.room()) return;
  r.records.push_back({'X', track.id, start_us, std::max(0.0, end_us - start_us), category,
                       std::string(name), std::move(args)});
}

void flow_from_record(Track track, const EventImpl& event, double at_us) {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (!recording.load() || !r.room()) return;
  const uint64_t id = r.next_flow++;
  r.latest_flow[&event] = id;
  r.records.push_back({'s', track.id, at_us, 0, {}, {}, {}, id});
}

void flow_to_wait(Track track, const EventImpl& event, double at_us) {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (!recording.load()) return;
  const auto found = r.latest_flow.find(&event);
  if (found == r.latest_flow.end() || !r.room()) return;  // recorded before the trace began
  r.records.push_back({'f', track.id, at_us, 0, {}, {}, {}, found->second});
}

void note_allocation(bool cache_hit) { last_hit = cache_hit; }
bool last_allocation_hit() { return last_hit; }

}  // namespace detail
}  // namespace hal::trace
