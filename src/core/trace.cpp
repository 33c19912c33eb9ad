// The trace recorder: each thread appends its events to buffers of its own without a lock,
// publishing each with one release store; stop() (or exit) gathers them under the recorder's
// lock and writes Chrome trace-event JSON. A thread's buffers are kept for its next trace: the
// memory a trace needs is faulted in once, not again for every trace.
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/trace_record.hpp"
#include "hal/backend.hpp"
#include "hal/buffer.hpp"
#include "hal/error.hpp"
#include "hal/kernel.hpp"
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

// A span's name: copied into the record itself up to 39 bytes (every name hal gives but the
// longest kernel names), which costs a fixed-size copy rather than std::string's assign; longer
// ones are kept whole beside it.
class RecordName {
 public:
  void assign(std::string_view text) {
    size_ = static_cast<uint8_t>(std::min(text.size(), sizeof inline_));
    if (size_ > 0) std::memcpy(inline_, text.data(), size_);  // data() may be null when empty
    if (text.size() > sizeof inline_)
      long_.assign(text);
    else if (!long_.empty())
      long_.clear();
  }
  std::string_view view() const {
    return long_.empty() ? std::string_view(inline_, size_) : std::string_view(long_);
  }

 private:
  char inline_[39];
  uint8_t size_ = 0;
  std::string long_;
};

struct Record {
  char phase;           // 'X' span, 's' flow start, 'f' flow end
  bool steady = false;  // ts and dur in steady_clock's nanoseconds (a device's times mapped)
  uint64_t track;
  uint64_t ts, dur;           // in the clock's ticks (or nanoseconds: steady)
  std::string_view category;  // a literal
  RecordName name;
  detail::SpanArgs args;
  uint64_t flow = 0;
};

// Events kept in memory at most (about 170 bytes each, in all threads' buffers together): a
// long run keeps its first million and counts the rest, which the file reports as
// otherData.dropped_events.
constexpr size_t kMaxRecords = 1'000'000;
// A thread's buffer grows by chunks of 64 records, then 128, ... up to 4096 (about 0.5 MB):
// the limit counts the records chunks hold, and a program of hundreds of streams, each with a
// worker recording a few events, took a whole 4096 a thread (244 threads reached the limit).
constexpr size_t kFirstChunkRecords = 64, kChunkRecords = 4096;
constexpr size_t chunk_records(size_t index) {
  return index >= 6 ? kChunkRecords : kFirstChunkRecords << index;
}
using Chunk = std::vector<Record>;

// One thread's events of one trace. Only its thread writes records and `count`; the recorder
// reads records [0, count) under its lock once `count` is published (release/acquire). `chunks`
// changes only under the recorder's lock (its thread alone changes it, and reads it without).
struct ThreadBuffer {
  uint64_t generation = 0;                     // the trace it records into
  std::vector<std::unique_ptr<Chunk>> chunks;  // kept across traces, reused; chunk i holds
                                               // chunk_records(i)
  size_t chunks_in_use = 0;                    // this trace's, counted against kMaxRecords
  size_t capacity = 0;                         // the records they hold
  size_t current_first = 0;                    // the index of the last one's first record
  bool full = false;  // this trace reached kMaxRecords: later events are dropped
  std::atomic<size_t> count{0};
  std::atomic<uint64_t> dropped{0};
};

struct Recorder {
  std::mutex mutex;
  std::filesystem::path file;
  // The clock's ticks and steady_clock at the trace's start: microseconds from ticks.
  uint64_t epoch_ticks = 0;
  Clock::time_point epoch = Clock::now();
  uint64_t generation = 0;                             // a new trace gives threads new tracks
  std::atomic<uint64_t> generation_seen{0};            // the same, for reads without the lock
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;  // the threads' that record this trace
  size_t records_held = 0;                             // by all of their chunks in use
  std::map<uint64_t, std::string> track_names;
  std::map<uint64_t, uint64_t> stream_tracks;  // by the stream's serial, never its address:
  // a stream made where a dropped one's memory was gets a track of its own
  std::map<uint64_t, uint64_t> execution_tracks;  // by the stream's own track
  std::map<std::string, int> streams_per_device;
  std::map<uint64_t, uint64_t> latest_flow;  // by the event's serial
  uint64_t next_track = 1, next_flow = 1;
  bool warned_full = false;
  int threads = 0;
};

Recorder& recorder() {
  static Recorder* r = new Recorder;  // never destroyed: written from atexit
  return *r;
}

// The hot path's thread_locals keep the default (global-dynamic) TLS model: initial-exec would
// save the __tls_get_addr call on each access, but it takes glibc's small static TLS surplus,
// which a Python process with NumPy, OpenBLAS and torch loaded has already used up, and then
// `import hal` fails ("cannot allocate memory in static TLS block").
thread_local struct { uint64_t generation = 0, track = 0; } thread_track_cache;
// This thread's buffer: the raw pointer for the hot path (no thread_local initialisation guard),
// the owner to free it when the thread and the recorder are done with it.
thread_local ThreadBuffer* thread_buffer = nullptr;
thread_local std::shared_ptr<ThreadBuffer> thread_buffer_owner;
thread_local bool last_hit = false;
// The stream this thread traced last: most work comes in runs on one stream.
thread_local struct {
  uint64_t generation = 0, track = 0, stream = 0;  // the stream's serial
  bool nvtx = false;
} stream_track_cache;
// The same for execution tracks (asked for at every traced enqueue on a CPU stream).
thread_local struct { uint64_t generation = 0, issue = 0, track = 0; } execution_track_cache;

nlohmann::ordered_json args_json(const detail::SpanArgs& a) {
  using Kind = detail::SpanArgs::Kind;
  switch (a.kind) {
    case Kind::none:
      return nlohmann::ordered_json::object();
    case Kind::bytes:
    case Kind::transfer:  // to_json adds GB/s
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
// Ticks (or steady_clock nanoseconds) to microseconds from the trace's start.
struct TimeScale {
  uint64_t epoch;     // ticks
  uint64_t epoch_ns;  // steady_clock
  double us_per_tick;
  double us(const Record& r) const {
    const uint64_t from = r.steady ? epoch_ns : epoch;
    return r.ts > from ? static_cast<double>(r.ts - from) * per(r) : 0.0;
  }
  double per(const Record& r) const { return r.steady ? 1e-3 : us_per_tick; }
};

uint64_t steady_ns(Clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

nlohmann::ordered_json to_json(const Record& r, int pid, const TimeScale& time) {
  nlohmann::ordered_json e{
      {"ph", std::string(1, r.phase)}, {"pid", pid}, {"tid", r.track}, {"ts", time.us(r)}};
  if (r.phase == 'X') {
    e["dur"] = static_cast<double>(r.dur) * time.per(r);
    e["cat"] = std::string(r.category);
    e["name"] = std::string(r.name.view());
    e["args"] = args_json(r.args);
    if (r.args.kind == detail::SpanArgs::Kind::transfer && r.dur > 0)  // bytes per ns are GB/s
      e["args"]["GB/s"] =
          static_cast<double>(r.args.n[0]) / (static_cast<double>(r.dur) * time.per(r) * 1e3);
  } else {
    e["cat"] = "flow";
    e["name"] = "event";
    e["id"] = r.flow;
    if (r.phase == 'f') e["bp"] = "e";
  }
  return e;
}

// Writes the trace; the caller holds the lock. Threads' buffers stay as they are: each resets
// its own when it next records (a thread may still be adding to its buffer as this reads).
void write_locked(Recorder& r) {
  const int pid = static_cast<int>(getpid());
  std::vector<Record> records;
  uint64_t dropped = 0;
  for (const auto& buffer : r.buffers) {
    const size_t count = buffer->count.load(std::memory_order_acquire);
    for (size_t c = 0, i = 0; i < count; ++c)
      for (const Record& record : *buffer->chunks[c]) {
        if (i++ == count) break;
        records.push_back(record);
      }
    dropped += buffer->dropped.load(std::memory_order_relaxed);
  }
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  events.push_back(
      {{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", "hal"}}}});
  for (const auto& [track, name] : r.track_names)
    events.push_back({{"ph", "M"},
                      {"pid", pid},
                      {"tid", track},
                      {"name", "thread_name"},
                      {"args", {{"name", name}}}});
  // Ticks per microsecond from the clock's and steady_clock's progress over the trace.
  const uint64_t ticks = detail::now() - r.epoch_ticks;
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - r.epoch).count();
  const TimeScale time{r.epoch_ticks, steady_ns(r.epoch),
                       tsc_is_constant && ticks > 0 ? us / static_cast<double>(ticks) : 1e-3};
  // By track, then by start in microseconds (a device's track mixes steady_clock spans of its
  // commands with tick spans of host-side copies); a span before the flow events inside it.
  std::stable_sort(records.begin(), records.end(), [&time](const Record& a, const Record& b) {
    if (a.track != b.track) return a.track < b.track;
    const double at = time.us(a), bt = time.us(b);
    if (at != bt) return at < bt;
    return a.phase == 'X' && b.phase != 'X';
  });
  for (const Record& record : records) events.push_back(to_json(record, pid, time));
  const nlohmann::ordered_json document{
      {"displayTimeUnit", "ns"},
      {"otherData", {{"dropped_events", dropped}, {"max_events", kMaxRecords}}},
      {"traceEvents", events}};
  // Names come from users and drivers: bytes that are not UTF-8 become U+FFFD rather than cost
  // the whole trace. The text is made before the file is opened, which truncates it.
  const std::string text =
      document.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::ofstream out(r.file);
  out << text << "\n";
  if (!out) throw Error(ErrorCode::InvalidArgument, "trace: cannot write " + r.file.string());
}

// This thread's buffer for the trace being recorded, reset for it when it held an earlier
// trace's; nullptr when no trace is recorded.
[[gnu::noinline, gnu::cold]] ThreadBuffer* join_trace(Recorder& r) {
  std::lock_guard lock(r.mutex);
  if (!detail::recording.load()) return nullptr;
  if (!thread_buffer) {
    thread_buffer_owner = std::make_shared<ThreadBuffer>();
    thread_buffer = thread_buffer_owner.get();
  }
  ThreadBuffer& b = *thread_buffer;
  if (b.generation != r.generation) {
    b.generation = r.generation;
    b.count.store(0, std::memory_order_relaxed);
    b.dropped.store(0, std::memory_order_relaxed);
    b.chunks_in_use = 0;
    b.capacity = 0;
    b.current_first = 0;
    b.full = false;
    r.buffers.push_back(thread_buffer_owner);
  }
  return &b;
}

// Room for the next chunk of this thread's records, within the recorder's limit: a chunk kept
// from an earlier trace, or a new one.
[[gnu::noinline, gnu::cold]] bool next_chunk(Recorder& r, ThreadBuffer& b) {
  std::lock_guard lock(r.mutex);
  const size_t size = chunk_records(b.chunks_in_use);
  if (r.records_held + size > kMaxRecords) {
    b.full = true;
    if (!r.warned_full) {
      r.warned_full = true;
      log(LogLevel::warn, "trace: " + std::to_string(kMaxRecords) +
                              " events recorded; later ones are dropped (counted in the file)");
    }
    return false;
  }
  if (b.chunks_in_use == b.chunks.size()) b.chunks.push_back(std::make_unique<Chunk>(size));
  ++b.chunks_in_use;
  b.current_first = b.capacity;
  b.capacity += size;
  r.records_held += size;
  return true;
}

// This thread's next record, to be filled in place (its name's storage is reused from an earlier
// trace) and then published; nullptr when the event is not recorded. No lock but once a chunk
// (or a trace).
Record* next_record(ThreadBuffer*& b) {
  Recorder& r = recorder();
  b = thread_buffer;
  if (b == nullptr || b->generation != r.generation_seen.load(std::memory_order_relaxed))
      [[unlikely]] {
    b = join_trace(r);
    if (b == nullptr) return nullptr;
  }
  const size_t n = b->count.load(std::memory_order_relaxed);
  if (n == b->capacity) [[unlikely]] {
    if (b->full || !next_chunk(r, *b)) {
      b->dropped.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  }
  return &(*b->chunks[b->chunks_in_use - 1])[n - b->current_first];
}

// Makes the record that next_record() gave visible to the recorder.
void publish(ThreadBuffer* b) {
  b->count.store(b->count.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

void append_flow(char phase, detail::Track track, uint64_t at, uint64_t id) {
  ThreadBuffer* b = nullptr;
  Record* r = next_record(b);
  if (r == nullptr) return;
  r->phase = phase;
  r->steady = false;
  r->track = track.id;
  r->ts = at;
  r->dur = 0;
  r->category = {};
  r->name.assign({});
  r->args = {};
  r->flow = id;
  publish(b);
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
  r.buffers.clear();  // each thread joins the new trace with its first event
  r.records_held = 0;
  r.warned_full = false;
  r.track_names.clear();
  r.stream_tracks.clear();
  r.execution_tracks.clear();
  r.streams_per_device.clear();
  r.latest_flow.clear();
  r.threads = 0;
  detail::recording.store(true);
}

void stop() {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (!detail::recording.load()) return;
  detail::recording.store(false);
  write_locked(r);
  r.buffers.clear();  // an exited thread's buffer goes now; a live one keeps its own
}

std::filesystem::path file() {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  return detail::recording.load() ? r.file : std::filesystem::path();
}

Scope::Scope(std::string_view name) {
  if (!enabled()) [[likely]]
    return;
  name_ = name;
  start_ = detail::now();
}

Scope::~Scope() {
  if (start_ == 0 || !enabled()) return;
  detail::span(detail::thread_track(), "user", name_, start_, detail::now());
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
  if (cached.stream == stream.serial() &&
      cached.generation == r.generation_seen.load(std::memory_order_relaxed))
    return {cached.track, cached.nvtx};
  std::lock_guard lock(r.mutex);
  uint64_t& track = r.stream_tracks[stream.serial()];
  const DeviceInfo& device = stream.device().info();
  if (track == 0) {
    track = r.next_track++;
    r.track_names[track] =
        device.id + " stream " + std::to_string(r.streams_per_device[device.id]++);
  }
  const bool nvtx = nvtx_ranges_for(device.backend());
  cached = {r.generation, track, stream.serial(), nvtx};
  return {track, nvtx};
}

Track execution_track(const StreamImpl& stream) {
  Recorder& r = recorder();
  const uint64_t issue = stream_track(stream).id;  // names the stream first
  auto& cached = execution_track_cache;
  if (cached.issue == issue &&
      cached.generation == r.generation_seen.load(std::memory_order_relaxed))
    return {cached.track};
  std::lock_guard lock(r.mutex);
  uint64_t& track = r.execution_tracks[issue];
  if (track == 0) {
    track = r.next_track++;
    r.track_names[track] = r.track_names[issue] + " (device)";
  }
  cached = {r.generation, issue, track};
  return {track};
}

SpanArgs launch_args(const LaunchConfig& c) {
  return {
      SpanArgs::Kind::launch,
      {c.global[0], c.global[1], c.global[2], c.local[0], c.local[1], c.local[2], c.shared_bytes}};
}

Track thread_track() {
  Recorder& r = recorder();
  // The generation is read without the lock: a stale one only sends the call to the lock.
  if (thread_track_cache.generation == r.generation_seen.load(std::memory_order_relaxed))
    return {thread_track_cache.track};
  std::lock_guard lock(r.mutex);
  if (thread_track_cache.generation != r.generation) {
    thread_track_cache = {r.generation, r.next_track++};
    r.track_names[thread_track_cache.track] = "host thread " + std::to_string(r.threads++);
  }
  return {thread_track_cache.track};
}

namespace {

void append_span(bool steady, Track track, std::string_view category, std::string_view name,
                 uint64_t start, uint64_t end, const SpanArgs& args) {
  if (!recording.load(std::memory_order_relaxed)) return;
  ThreadBuffer* b = nullptr;
  Record* r = next_record(b);
  if (r == nullptr) return;
  r->phase = 'X';
  r->steady = steady;
  r->track = track.id;
  r->ts = start;
  r->dur = end > start ? end - start : 0;
  r->category = category;
  r->name.assign(name);
  r->args = args;
  r->flow = 0;
  publish(b);
}

}  // namespace

void span(Track track, std::string_view category, std::string_view name, uint64_t start,
          uint64_t end, const SpanArgs& args) {
  append_span(false, track, category, name, start, end, args);
}

uint64_t steady_now_ns() { return steady_ns(Clock::now()); }

void steady_span(Track track, std::string_view category, std::string_view name, uint64_t start_ns,
                 uint64_t end_ns, const SpanArgs& args) {
  append_span(true, track, category, name, start_ns, end_ns, args);
}

void flow_from_record(Track track, const EventImpl& event, uint64_t at) {
  Recorder& r = recorder();
  uint64_t id = 0;
  {
    std::lock_guard lock(r.mutex);
    if (!recording.load()) return;
    id = r.next_flow++;
    r.latest_flow[event.serial()] = id;
  }
  append_flow('s', track, at, id);
}

void flow_to_wait(Track track, const EventImpl& event, uint64_t at) {
  Recorder& r = recorder();
  uint64_t id = 0;
  {
    std::lock_guard lock(r.mutex);
    if (!recording.load()) return;
    const auto found = r.latest_flow.find(event.serial());
    if (found == r.latest_flow.end()) return;  // recorded before the trace began
    id = found->second;
  }
  append_flow('f', track, at, id);
}

void note_allocation(bool cache_hit) { last_hit = cache_hit; }
bool last_allocation_hit() { return last_hit; }

}  // namespace detail
}  // namespace hal::trace
