// Traces (hal/trace.hpp): the JSON that Perfetto reads is well formed (every span closed,
// timestamps in order on each track, spans nested, flows from a record to its waits), carries
// the spans of ops, kernels with their launch configuration, copies, allocations with cache
// hits, synchronizations and the user's scopes, one track per stream, also from many threads;
// a CPU stream's work also as it ran, with copies' rates; and nothing is recorded while tracing
// is off.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "test_util.hpp"

namespace {

std::filesystem::path temporary(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("hal_trace_test_" + std::to_string(getpid()) + "_" + name);
}

nlohmann::json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in) << file;
  return nlohmann::json::parse(in);
}

// What must hold of any trace hal writes; returns the track names by tid.
std::map<int64_t, std::string> expect_valid_trace(const nlohmann::json& trace) {
  std::map<int64_t, std::string> names;
  std::map<int64_t, double> last_ts;
  std::map<int64_t, std::vector<double>> open_ends;   // per track: ends of the enclosing spans
  std::map<int64_t, std::vector<std::string>> begun;  // B events waiting for their E
  std::map<int64_t, double> flow_starts;              // id -> ts
  std::map<int64_t, int64_t> flow_start_track;
  std::vector<nlohmann::json> flow_ends;
  for (const auto& e : trace.at("traceEvents")) {
    const std::string phase = e.at("ph");
    if (phase == "M") {
      if (e.at("name") == "thread_name") names[e.at("tid")] = e.at("args").at("name");
      continue;
    }
    const int64_t tid = e.at("tid");
    const double ts = e.at("ts");
    EXPECT_TRUE(names.count(tid)) << "track " << tid << " has no name: " << e;
    EXPECT_GE(ts, last_ts[tid]) << "timestamps go back on track " << names[tid] << ": " << e;
    last_ts[tid] = ts;
    if (phase == "X") {
      const double dur = e.at("dur");
      EXPECT_GE(dur, 0) << e;
      EXPECT_FALSE(e.at("name").get<std::string>().empty()) << e;
      auto& ends = open_ends[tid];
      while (!ends.empty() && ends.back() <= ts) ends.pop_back();
      if (!ends.empty()) {
        EXPECT_LE(ts + dur, ends.back() + 1e-3) << "span overlaps its neighbour: " << e;
      }
      ends.push_back(ts + dur);
    } else if (phase == "B") {
      begun[tid].push_back(e.at("name"));
    } else if (phase == "E") {
      EXPECT_FALSE(begun[tid].empty()) << "an end without a begin: " << e;
      if (!begun[tid].empty()) begun[tid].pop_back();
    } else if (phase == "s") {
      EXPECT_FALSE(flow_starts.count(e.at("id"))) << "flow id used twice: " << e;
      flow_starts[e.at("id")] = ts;
      flow_start_track[e.at("id")] = tid;
    } else if (phase == "f") {
      flow_ends.push_back(e);
    } else {
      ADD_FAILURE() << "unexpected phase: " << e;
    }
  }
  for (const auto& [tid, pending] : begun)
    EXPECT_TRUE(pending.empty()) << pending.size() << " begins without an end on " << names[tid];
  for (const auto& e : flow_ends) {
    EXPECT_TRUE(flow_starts.count(e.at("id"))) << "a flow that starts nowhere: " << e;
    if (!flow_starts.count(e.at("id"))) continue;
    EXPECT_LE(flow_starts[e.at("id")], e.at("ts").get<double>()) << e;
    EXPECT_NE(flow_start_track[e.at("id")], e.at("tid").get<int64_t>()) << e;
  }
  return names;
}

std::vector<nlohmann::json> spans(const nlohmann::json& trace, const std::string& category) {
  std::vector<nlohmann::json> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("cat") == category) out.push_back(e);
  return out;
}

TEST(Trace, RecordsTheWorkOfStreamsAsValidJson) {
  const std::filesystem::path file = temporary("streams.json");
  hal::Device cpu = hal::device("cpu:0");
  {
    hal::trace::start(file);
    EXPECT_TRUE(hal::trace::enabled());
    const hal::trace::Scope step("user step");
    hal::Stream first = cpu.create_stream(), second = cpu.create_stream();
    const hal::Tensor x = hal::full({64}, 1.0, hal::DType::f32, first);
    const hal::Tensor y = hal::add(x, x, first);
    std::vector<float> host(64, 2.0f);
    hal::Buffer buffer = cpu.allocate(host.size() * sizeof(float));
    first.copy_from_host(buffer, host.data(), host.size() * sizeof(float));
    first.launch(hal::host_kernel("double_it",
                                  [](hal::Index3 i, const hal::KernelArgs& args) {
                                    args.ptr<float>(0)[i[0]] *= 2;
                                  }),
                 hal::LaunchConfig::linear(64), {buffer});
    const hal::Event done = first.record();
    second.wait(done);
    const hal::Tensor z = hal::add(y, y, second);
    second.synchronize();
    done.synchronize();
    hal::Buffer again = cpu.allocate(64);  // the first 64 bytes came from a new segment
    again = hal::Buffer();
    again = cpu.allocate(64);  // from the cache
    EXPECT_EQ(z.to_vector<float>(second)[0], 4.0f);
  }
  hal::trace::stop();
  EXPECT_FALSE(hal::trace::enabled());
  const nlohmann::json trace = read_json(file);
  const auto names = expect_valid_trace(trace);
  std::set<std::string> tracks;
  for (const auto& [tid, name] : names) tracks.insert(name);
  EXPECT_TRUE(tracks.count("cpu:0 stream 0") && tracks.count("cpu:0 stream 1")) << trace.dump();
  EXPECT_TRUE(tracks.count("host thread 0"));

  std::set<std::string> ops;
  for (const auto& e : spans(trace, "op")) ops.insert(e.at("name"));
  EXPECT_TRUE(ops.count("add")) << trace.dump();
  const auto kernels = spans(trace, "kernel");
  const auto kernel = std::find_if(kernels.begin(), kernels.end(),
                                   [](const auto& e) { return e.at("name") == "double_it"; });
  ASSERT_NE(kernel, kernels.end());
  EXPECT_EQ((*kernel)["args"]["global"], nlohmann::json({64, 1, 1}));
  bool copied = false;
  for (const auto& e : spans(trace, "copy"))
    copied |= e.at("name") == "copy_from_host" && e["args"]["bytes"] == 256;
  EXPECT_TRUE(copied);
  bool hit = false, miss = false;
  for (const auto& e : spans(trace, "memory")) {
    hit |= e["args"]["cache_hit"] == true;
    miss |= e["args"]["cache_hit"] == false;
  }
  EXPECT_TRUE(hit && miss);
  EXPECT_GE(spans(trace, "synchronize").size(), 2u);
  ASSERT_EQ(spans(trace, "user").size(), 1u);
  EXPECT_EQ(spans(trace, "user")[0]["name"], "user step");
  int flows = 0;
  for (const auto& e : trace.at("traceEvents")) flows += e.at("ph") == "f";
  EXPECT_GE(flows, 1) << "the wait on the second stream ends a flow";
  std::filesystem::remove(file);
}

TEST(Trace, CpuStreamsShowWhenTheirWorkRanOnADeviceTrack) {
  const std::filesystem::path file = temporary("device.json");
  hal::Device cpu = hal::device("cpu:0");
  const size_t bytes = size_t{8} << 20;
  std::vector<char> host(bytes, 1);
  {
    hal::trace::start(file);
    hal::Stream stream = cpu.create_stream();
    hal::Buffer buffer = cpu.allocate(bytes);
    // The kernel runs until the launch has returned, then 5 ms more: its issue is over before
    // its run, which lasts at least 5 ms.
    std::atomic<bool> issued{false};
    stream.launch(hal::host_kernel("sleepy",
                                   [&issued](hal::Index3, const hal::KernelArgs&) {
                                     while (!issued.load()) std::this_thread::yield();
                                     std::this_thread::sleep_for(std::chrono::milliseconds(5));
                                   }),
                  hal::LaunchConfig::linear(1), {});
    issued = true;
    stream.copy_from_host(buffer, host.data(), bytes);
    stream.synchronize();
  }
  hal::trace::stop();
  const nlohmann::json trace = read_json(file);
  const auto names = expect_valid_trace(trace);
  int64_t issue_track = -1, device_track = -1;
  for (const auto& [tid, name] : names) {
    if (name == "cpu:0 stream 0") issue_track = tid;
    if (name == "cpu:0 stream 0 (device)") device_track = tid;
  }
  ASSERT_GE(issue_track, 0) << trace.dump();
  ASSERT_GE(device_track, 0) << trace.dump();
  const auto on = [&](int64_t track, const std::string& category, const std::string& name) {
    for (const auto& e : spans(trace, category))
      if (e.at("tid") == track && e.at("name") == name) return e;
    ADD_FAILURE() << "no " << category << " span '" << name << "' on track " << track;
    return nlohmann::json();
  };
  const nlohmann::json issued_kernel = on(issue_track, "kernel", "sleepy");
  const nlohmann::json ran_kernel = on(device_track, "kernel", "sleepy");
  const nlohmann::json ran_copy = on(device_track, "copy", "copy_from_host");
  ASSERT_FALSE(issued_kernel.is_null() || ran_kernel.is_null() || ran_copy.is_null());
  EXPECT_EQ(ran_kernel["args"]["global"], nlohmann::json({1, 1, 1}));
  EXPECT_GE(ran_kernel["dur"].get<double>(), 5000.0) << ran_kernel;  // microseconds
  const auto end = [](const nlohmann::json& e) {
    return e["ts"].get<double>() + e["dur"].get<double>();
  };
  EXPECT_LT(end(issued_kernel), end(ran_kernel)) << issued_kernel << ran_kernel;
  // In the stream's order, and the copy's rate from its own duration.
  EXPECT_GE(ran_copy["ts"].get<double>(), end(ran_kernel) - 1e-3) << ran_copy;
  EXPECT_EQ(ran_copy["args"]["bytes"], bytes);
  ASSERT_TRUE(ran_copy["args"].contains("GB/s")) << ran_copy;
  EXPECT_NEAR(ran_copy["args"]["GB/s"].get<double>(),
              static_cast<double>(bytes) / (ran_copy["dur"].get<double>() * 1e3),
              1e-2 * ran_copy["args"]["GB/s"].get<double>());
  std::filesystem::remove(file);
}

TEST(Trace, ManyThreadsEachOnTheirOwnTracks) {
  const std::filesystem::path file = temporary("threads.json");
  hal::trace::start(file);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([] {
      hal::Stream stream = hal::device("cpu:0").create_stream();
      for (int i = 0; i < 20; ++i) {
        const hal::trace::Scope scope("iteration");
        hal::Tensor x = hal::full({16}, double(i), hal::DType::f32, stream);
        x = hal::add(x, x, stream);
        stream.synchronize();
      }
    });
  for (std::thread& thread : threads) thread.join();
  hal::trace::stop();
  const nlohmann::json trace = read_json(file);
  const auto names = expect_valid_trace(trace);
  int streams = 0, device_tracks = 0, hosts = 0;
  for (const auto& [tid, name] : names) {
    const bool device_track = name.ends_with(" (device)");
    streams += name.rfind("cpu:0 stream", 0) == 0 && !device_track;
    device_tracks += device_track;
    hosts += name.rfind("host thread", 0) == 0;
  }
  EXPECT_EQ(streams, 4);
  EXPECT_EQ(device_tracks, 4);  // where each stream's fills and adds ran
  EXPECT_EQ(hosts, 4);
  EXPECT_EQ(spans(trace, "user").size(), 80u);
  std::filesystem::remove(file);
}

TEST(Trace, AStreamMadeWhereADroppedOneWasGetsATrackOfItsOwn) {
  const std::filesystem::path file = temporary("reused.json");
  hal::trace::start(file);
  // Streams one after another until one is made where a dropped one's memory was (within a few).
  std::set<const void*> addresses;
  int made = 0;
  bool reused = false;
  while (!reused && made < 50) {
    hal::Stream stream = hal::device("cpu:0").create_stream();
    ++made;
    reused = !addresses.insert(stream.impl().get()).second;
    hal::Tensor x = hal::full({16}, 1.0, hal::DType::f32, stream);
    stream.synchronize();
  }
  hal::trace::stop();
  int streams = 0;
  for (const auto& [tid, name] : expect_valid_trace(read_json(file)))
    streams += name.rfind("cpu:0 stream", 0) == 0 && !name.ends_with(" (device)");
  EXPECT_EQ(streams, made) << (reused ? "the last stream reused a dropped one's address"
                                      : "no stream reused an address");
  std::filesystem::remove(file);
}

TEST(Trace, OffRecordsNothingAndBadFilesAreRefused) {
  EXPECT_FALSE(hal::trace::enabled());
  hal::trace::stop();  // not recording: nothing to do
  { const hal::trace::Scope ignored("not recorded"); }
  const std::filesystem::path file = temporary("later.json");
  hal::trace::start(file);
  hal::trace::stop();
  EXPECT_TRUE(spans(read_json(file), "user").empty());
  std::filesystem::remove(file);
  hal::test::expect_error([] { hal::trace::start("/nonexistent-dir/trace.json"); },
                          hal::ErrorCode::InvalidArgument,
                          {"trace: cannot create /nonexistent-dir/trace.json"});
  EXPECT_FALSE(hal::trace::enabled());
}

// A name from a user or a driver may hold bytes that are not UTF-8: the trace is still written,
// the bad byte as U+FFFD (before, the JSON writer threw and left an empty file).
TEST(Trace, ANameThatIsNotUtf8IsWrittenReplaced) {
  const std::filesystem::path file = temporary("utf8.json");
  hal::trace::start(file);
  { const hal::trace::Scope step("caf\xe9 step"); }
  hal::trace::stop();
  const nlohmann::json trace = read_json(file);
  ASSERT_EQ(spans(trace, "user").size(), 1u);
  EXPECT_EQ(spans(trace, "user")[0]["name"], "caf\xef\xbf\xbd step");
  std::filesystem::remove(file);
}

// A Vulkan stream's track holds its commands' spans (timestamp queries on steady_clock) beside
// host-side copies (the tick clock): in time order together, not one clock's spans after the
// other's.
TEST(Trace, ADeviceTrackOfTwoClocksIsInTimeOrder) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // As the sanitizer presets leave out label vulkan: the driver runs uninstrumented.
  GTEST_SKIP() << "Vulkan (lavapipe) under a sanitizer: the release build runs this";
#endif
  std::optional<hal::Device> vulkan;
  for (const hal::Device& d : hal::devices())
    if (d.info().backend() == "vulkan") vulkan = d;
  if (!vulkan) GTEST_SKIP() << "no Vulkan device here";
  const std::filesystem::path file = temporary("vulkan.json");
  hal::trace::start(file);
  {
    hal::Stream stream = vulkan->create_stream();
    std::vector<float> host(4096, 1.0f);
    hal::Tensor x = hal::zeros({4096}, hal::DType::f32, stream);
    for (int i = 0; i < 4; ++i) {
      stream.copy_from_host(x.storage(), host.data(), host.size() * sizeof(float));
      x = hal::add(x, x, stream);
      stream.synchronize();
    }
  }
  hal::trace::stop();
  const nlohmann::json trace = read_json(file);
  const auto names = expect_valid_trace(trace);
  std::set<std::string> kinds;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X" && names.at(e.at("tid")).find("(device)") != std::string::npos)
      kinds.insert(e.at("cat").get<std::string>());
  EXPECT_TRUE(kinds.count("kernel") && kinds.count("copy")) << trace.dump();
  std::filesystem::remove(file);
}

// The limit counts events, not threads: 400 threads of a few events each (a program with
// hundreds of streams, each with its worker) drop nothing. A thread took a chunk of 4 096
// records for its first event, so 244 threads reached the million.
TEST(Trace, HundredsOfThreadsOfAFewEventsDropNothing) {
  const std::filesystem::path file = temporary("threads.json");
  hal::trace::start(file);
  for (int batch = 0; batch < 20; ++batch) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 20; ++t)
      threads.emplace_back([] {
        for (int i = 0; i < 3; ++i) const hal::trace::Scope scope("few");
      });
    for (std::thread& thread : threads) thread.join();
  }
  hal::trace::stop();
  const nlohmann::json trace = read_json(file);
  expect_valid_trace(trace);
  EXPECT_EQ(spans(trace, "user").size(), 1200u);
  EXPECT_EQ(trace["otherData"]["dropped_events"], 0);
  std::filesystem::remove(file);
}

// Each thread records into buffers of its own, chunk by chunk (64 events, growing to 4 096), kept
// for the next trace: a trace crossing chunks keeps every event in order, a thread that ended
// before the trace was written keeps its events, and a later trace holds none of an earlier one's.
TEST(Trace, ThreadBuffersSpanChunksOutliveTheirThreadsAndAreReused) {
  const std::filesystem::path file = temporary("chunks.json");
  hal::trace::start(file);
  for (int i = 0; i < 10'000; ++i) const hal::trace::Scope scope(i % 2 ? "odd" : "even");
  std::thread([] {
    for (int i = 0; i < 5; ++i) const hal::trace::Scope scope("gone");
  }).join();
  hal::trace::stop();
  nlohmann::json trace = read_json(file);
  expect_valid_trace(trace);
  std::map<std::string, int> by_name;
  for (const auto& span : spans(trace, "user")) ++by_name[span["name"]];
  EXPECT_EQ(by_name, (std::map<std::string, int>{{"even", 5000}, {"gone", 5}, {"odd", 5000}}));
  EXPECT_EQ(trace["otherData"]["dropped_events"], 0);

  hal::trace::start(file);  // the main thread's chunks again
  for (int i = 0; i < 3; ++i) const hal::trace::Scope scope("second");
  hal::trace::stop();
  trace = read_json(file);
  expect_valid_trace(trace);
  ASSERT_EQ(spans(trace, "user").size(), 3u);
  EXPECT_EQ(spans(trace, "user")[0]["name"], "second");
  std::filesystem::remove(file);
}

// Traces stopped and started while other threads record: each file is a valid trace (a thread
// may add to its buffer as the recorder reads it; what it adds late is left out).
TEST(Trace, StopsAndStartsWhileThreadsRecord) {
  const std::filesystem::path file = temporary("racing.json");
  std::atomic<bool> done{false};
  hal::trace::start(file);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&done] {
      for (int i = 0; i < 200'000 && !done.load(); ++i) const hal::trace::Scope scope("busy");
    });
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    hal::trace::stop();
    const nlohmann::json trace = read_json(file);
    expect_valid_trace(trace);
    hal::trace::start(file);
  }
  done = true;
  for (std::thread& thread : threads) thread.join();
  hal::trace::stop();
  expect_valid_trace(read_json(file));
  std::filesystem::remove(file);
}

}  // namespace
