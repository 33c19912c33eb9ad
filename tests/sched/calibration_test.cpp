// Calibration: what it measures (checked on sim, whose events keep a modelled clock), the cache
// by UUID and driver version, and what it does with stale or corrupt entries.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "hal/calibration.hpp"
#include "hal/cost_model.hpp"
#include "sched/calibration_store.hpp"
#include "sim_fleet.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file) << text;
}

class CalibrationTest : public ::testing::Test {
 protected:
  ScopedCacheDir cache{"calibration"};
};

TEST_F(CalibrationTest, SimCalibrationRecoversTheModelItsDeviceRuns) {
  const Device sim = hal::device("sim:0");
  const SimFigures want = sim_figures(0);  // 1 GFLOP/s, 12.5 GB/s, 5 us a launch
  const Calibration c = calibrate(sim, {.use_cache = true, .quick = true});
  EXPECT_FALSE(c.from_cache);
  EXPECT_EQ(c.device_id, "sim:0");
  EXPECT_EQ(c.uuid, sim.info().uuid);
  EXPECT_EQ(c.driver_version, sim.info().driver_version);
  // Each copy also pays one launch: within 2 % of the bandwidth at 8 MiB.
  EXPECT_NEAR(c.host_to_device_gbps, want.bandwidth_gbps, 0.02 * want.bandwidth_gbps);
  EXPECT_NEAR(c.device_to_host_gbps, want.bandwidth_gbps, 0.02 * want.bandwidth_gbps);
  EXPECT_NEAR(c.device_bandwidth_gbps, want.bandwidth_gbps, 0.02 * want.bandwidth_gbps);
  // Sizes double from 128 until a product takes 10 ms: 128 (4 ms modelled), 256 (34 ms).
  ASSERT_EQ(c.matmul.size(), 2u) << "quick: f32 only";
  EXPECT_EQ(c.matmul[0].dtype, DType::f32);
  EXPECT_EQ(c.matmul[0].size, 128);
  EXPECT_EQ(c.matmul[1].size, 256);
  EXPECT_NEAR(c.matmul_gflops(DType::f32), want.gflops, 0.02 * want.gflops);
  EXPECT_EQ(c.matmul_gflops(DType::f16), 0.0);
  // The model's 5 us a launch is the floor; the host's enqueue may cost more (sanitizers).
  EXPECT_GE(c.launch_latency_us, 0.99 * want.launch_us);
  EXPECT_LT(c.launch_latency_us, 1000.0);
  EXPECT_GT(c.seconds, 0.0);
  EXPECT_EQ(c.measured_at.size(), 20u) << c.measured_at;  // 2026-11-23T03:04:05Z

  // The cost model now predicts from the measured figures.
  const Workload w = Workload::matmul(256, 256, 256);
  const Estimate e = estimate(w, sim);
  EXPECT_EQ(e.provenance, Provenance::measured);
  EXPECT_NEAR(e.seconds, c.launch_latency_us * 1e-6 + w.flops / (want.gflops * 1e9),
              0.03 * e.seconds);
}

TEST_F(CalibrationTest, CpuFiguresAreMeasuredCachedAndServedFromTheCache) {
  const Device cpu = hal::device("cpu:0");
  ASSERT_FALSE(cached_calibration(cpu));
  const Calibration first = calibrate(cpu, {.use_cache = true, .quick = true});
  EXPECT_FALSE(first.from_cache);
  EXPECT_GT(first.host_to_device_gbps, 0.0);
  EXPECT_GT(first.device_to_host_gbps, 0.0);
  EXPECT_GT(first.device_bandwidth_gbps, 0.0);
  EXPECT_GT(first.matmul_gflops(DType::f32), 0.0);
  EXPECT_GT(first.launch_latency_us, 0.0);

  const std::filesystem::path file = calibration_cache_file(cpu);
  ASSERT_TRUE(std::filesystem::exists(file)) << file;
  EXPECT_EQ(file.filename(), cpu.info().uuid + ".json");
  const auto json = nlohmann::json::parse(read_text(file));
  EXPECT_EQ(json["schema"], "hal.calibration/1");
  EXPECT_EQ(json["uuid"], cpu.info().uuid);
  EXPECT_EQ(json["driver_version"], cpu.info().driver_version);
  ASSERT_EQ(json["matmul"].size(), first.matmul.size());
  for (size_t i = 0; i < first.matmul.size(); ++i) {
    EXPECT_EQ(json["matmul"][i]["size"].get<int64_t>(), first.matmul[i].size);
    EXPECT_DOUBLE_EQ(json["matmul"][i]["gflops"].get<double>(), first.matmul[i].gflops);
  }

  const Calibration again = calibrate(cpu, {.use_cache = true, .quick = true});
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(to_json(again), to_json(first));
  reload_calibrations();  // as a new process would: from the file
  const std::optional<Calibration> read = cached_calibration(cpu);
  ASSERT_TRUE(read);
  EXPECT_EQ(to_json(*read), to_json(first));

  const Calibration forced = calibrate(cpu, {.use_cache = false, .quick = true});
  EXPECT_FALSE(forced.from_cache);
  EXPECT_TRUE(forced.quick);
  EXPECT_EQ(nlohmann::json::parse(read_text(file))["quick"], true);
}

TEST_F(CalibrationTest, AFullRequestMeasuresAgainOverAQuickEntry) {
  const Device sim = hal::device("sim:48");
  EXPECT_TRUE(calibrate(sim, {.use_cache = true, .quick = true}).quick);
  EXPECT_TRUE(calibrate(sim, {.use_cache = true, .quick = true}).from_cache);
  const Calibration full = calibrate(sim, {.use_cache = true, .quick = false});
  EXPECT_FALSE(full.from_cache);
  EXPECT_FALSE(full.quick);
  const Calibration again = calibrate(sim, {.use_cache = true, .quick = true});
  EXPECT_TRUE(again.from_cache) << "a full entry serves a quick request";
  EXPECT_FALSE(again.quick);
}

TEST_F(CalibrationTest, AnotherDriverOrDeviceMakesTheEntryStale) {
  const Device sim = hal::device("sim:16");
  calibrate(sim, {.use_cache = true, .quick = true});
  const std::filesystem::path file = calibration_cache_file(sim);
  const std::string original = read_text(file);
  for (const auto& [field, other] :
       {std::pair<std::string, std::string>{"driver_version", "0.9-older"},
        std::pair<std::string, std::string>{"uuid", "00000000-0000-0000-0000-000000000000"}}) {
    auto json = nlohmann::json::parse(original);
    json[field] = other;
    write_text(file, json.dump());
    reload_calibrations();
    LogCapture log(LogLevel::info);
    EXPECT_FALSE(cached_calibration(sim)) << field;
    EXPECT_NE(log.lines().find("calibration of sim:16 is stale"), std::string::npos) << log.lines();
    EXPECT_NE(log.lines().find(other), std::string::npos) << log.lines();
    EXPECT_EQ(performance_figures(sim).provenance, Provenance::estimated);
    const Calibration fresh = calibrate(sim, {.use_cache = true, .quick = true});
    EXPECT_FALSE(fresh.from_cache) << "a stale entry is measured again";
    EXPECT_EQ(nlohmann::json::parse(read_text(file))[field],
              field == "uuid" ? sim.info().uuid : sim.info().driver_version);
  }
}

TEST_F(CalibrationTest, ACorruptEntryIsIgnoredWithAWarning) {
  const Device sim = hal::device("sim:32");
  std::filesystem::create_directories(calibration_cache_file(sim).parent_path());
  for (const std::string text :
       {"{not json", R"({"schema":"hal.calibration/1","uuid":7})", R"({"schema":"hal.other/1"})"}) {
    write_text(calibration_cache_file(sim), text);
    reload_calibrations();
    LogCapture log(LogLevel::info);
    EXPECT_FALSE(cached_calibration(sim)) << text;
    EXPECT_NE(log.lines().find("ignored"), std::string::npos) << text << ": " << log.lines();
  }
  EXPECT_FALSE(calibrate(sim, {.use_cache = true, .quick = true}).from_cache);
  EXPECT_TRUE(cached_calibration(sim));
}

// A matmul size past int64 went through get<int64_t>() (undefined: 1e30 came back as INT64_MIN)
// and a fractional one was cut to a whole one: now the entry is ignored, naming the field.
TEST_F(CalibrationTest, AnEntryWithAnImpossibleMatmulSizeIsIgnoredNamingIt) {
  const Device sim = hal::device("sim:80");
  calibrate(sim, {.use_cache = true, .quick = true});
  const std::filesystem::path file = calibration_cache_file(sim);
  const auto original = nlohmann::json::parse(read_text(file));
  for (const nlohmann::json& size :
       {nlohmann::json(1e30), nlohmann::json(uint64_t{1} << 63), nlohmann::json(-128),
        nlohmann::json(0), nlohmann::json(128.5), nlohmann::json("128")}) {
    auto json = original;
    json["matmul"][0]["size"] = size;
    write_text(file, json.dump());
    reload_calibrations();
    LogCapture log(LogLevel::info);
    EXPECT_FALSE(cached_calibration(sim)) << size;
    EXPECT_NE(log.lines().find("matmul[0].size " + size.dump() +
                               " is not a whole number from 1 to 1048576"),
              std::string::npos)
        << log.lines();
  }
  write_text(file, original.dump());
  reload_calibrations();
  ASSERT_TRUE(cached_calibration(sim));
  EXPECT_EQ(cached_calibration(sim)->matmul.at(0).size,
            original["matmul"][0]["size"].get<int64_t>());
}

// A negative or infinite figure was taken as measured: a copy rate of -13.3 GB/s or a latency of
// -2 us priced the device's work below zero, so that it won every choice. Such an entry is now
// ignored with a warning naming the field; 0, a figure not measured, is kept.
TEST_F(CalibrationTest, AnEntryWithAFigureBelowZeroIsIgnoredNamingIt) {
  const Device sim = hal::device("sim:96");
  Calibration c;
  c.device_id = sim.id();
  c.uuid = sim.info().uuid;
  c.driver_version = sim.info().driver_version;
  c.host_to_device_gbps = c.device_to_host_gbps = c.device_bandwidth_gbps = 10;
  c.launch_latency_us = 5;
  c.matmul = {{DType::f32, 128, 100}};
  c.measured_at = "2026-01-01T00:00:00Z";
  const auto original = nlohmann::json::parse(to_json(c));
  const std::filesystem::path file = calibration_cache_file(sim);
  std::filesystem::create_directories(file.parent_path());
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"host_to_device_gbps", -13.3},
                                                           {"device_to_host_gbps", "fast"},
                                                           {"device_bandwidth_gbps", -1},
                                                           {"launch_latency_us", -2},
                                                           {"matmul[0].gflops", -5}}) {
    auto json = original;
    if (field == "matmul[0].gflops")
      json["matmul"][0]["gflops"] = value;
    else
      json[field] = value;
    write_text(file, json.dump());
    reload_calibrations();
    LogCapture log;  // warnings
    EXPECT_FALSE(cached_calibration(sim)) << field;
    EXPECT_NE(
        log.lines().find("ignored: " + field + " " + value.dump() + " is not a finite number >= 0"),
        std::string::npos)
        << log.lines();
  }
  // Past the largest double: read as infinite.
  std::string text = original.dump();
  const std::string latency = "\"launch_latency_us\":5.0";
  ASSERT_NE(text.find(latency), std::string::npos) << text;
  text.replace(text.find(latency), latency.size(), "\"launch_latency_us\":1e999");
  write_text(file, text);
  reload_calibrations();
  {
    LogCapture log;
    EXPECT_FALSE(cached_calibration(sim));
    EXPECT_NE(log.lines().find("ignored"), std::string::npos) << log.lines();
  }

  auto unmeasured = original;
  unmeasured["host_to_device_gbps"] = 0;
  write_text(file, unmeasured.dump());
  reload_calibrations();
  ASSERT_TRUE(cached_calibration(sim));
  EXPECT_EQ(cached_calibration(sim)->host_to_device_gbps, 0.0);
}

// Threads of one process named their temporaries by the pid alone: when two stored at once, one
// rename took the other's half-written file and the other's rename failed (a warning), or the
// entry held both threads' text. Each store now writes a temporary of its own, as the kernel
// and tuning caches do.
TEST_F(CalibrationTest, ThreadsStoringAtOnceEachWriteTheirOwnTemporary) {
  const Device sim = hal::device("sim:64");
  LogCapture log;  // warnings
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&sim, t] {
      Calibration c;
      c.device_id = sim.id();
      c.uuid = sim.info().uuid;
      c.driver_version = sim.info().driver_version;
      c.measured_at = "2026-01-01T00:00:00Z";
      // Each thread's text has its own length: two in one file would not parse.
      c.matmul.assign(static_cast<size_t>(t + 1), {DType::f32, 128, 1.0 + t});
      for (int i = 0; i < 50; ++i) hal::detail::store_calibration(sim, c);
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(log.lines(), "");
  const std::filesystem::path file = calibration_cache_file(sim);
  reload_calibrations();
  EXPECT_TRUE(cached_calibration(sim)) << read_text(file);
  for (const auto& entry : std::filesystem::directory_iterator(file.parent_path()))
    EXPECT_EQ(entry.path(), file) << "a temporary was left behind";
}

// sim's UUID named the backend and the index alone, so a calibration made under one
// HAL_SIM_CONFIG was served under another whose device is a hundred times faster. The UUID, the
// cache's key, now follows the figures the config gives the device; faults change none. sim
// reads its config once, so each config is asked of a process of its own (sched_test_main.cpp).
TEST_F(CalibrationTest, AnotherSimConfigIsAnotherDeviceToTheCache) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const auto uuid_under = [&self](const std::string& config) {
    const ShellResult run = run_shell(child_sanitizer_options() + "HAL_SIM_CONFIG='" + config +
                                      "' '" + self + "' --print-sim-uuid");
    EXPECT_EQ(run.status, 0) << config << ": " << run.output;
    // sim's UUIDs begin so (8-4-4-4-12 hex); a backend may log around it.
    const size_t at = run.output.find("5a110ca1-");
    EXPECT_NE(at, std::string::npos) << config << ": " << run.output;
    return at == std::string::npos ? run.output : run.output.substr(at, 36);
  };
  const std::string slow = uuid_under("devices=1,gflops=10");
  EXPECT_EQ(uuid_under("devices=1,gflops=10"), slow) << "one config, one UUID";
  EXPECT_NE(uuid_under("devices=1,gflops=1000"), slow);
  EXPECT_NE(uuid_under("devices=1,gflops=10,memory=2G"), slow);
  EXPECT_EQ(uuid_under("devices=1,gflops=10,fail_op_at=7"), slow) << "a fault changes no figure";
}

TEST(Calibration, ThroughputFollowsTheMeasuredCurveBySize) {
  Calibration c;
  c.matmul = {{DType::f32, 256, 50},
              {DType::f32, 1024, 200},
              {DType::f32, 512, 100},
              {DType::f16, 512, 400}};
  const auto flops = [](double n) { return 2 * n * n * n; };
  EXPECT_DOUBLE_EQ(c.matmul_gflops(DType::f32), 200);  // the best measured
  EXPECT_DOUBLE_EQ(c.matmul_gflops(DType::f32, flops(256)), 50);
  EXPECT_NEAR(c.matmul_gflops(DType::f32, flops(512)), 100, 1e-9);
  EXPECT_NEAR(c.matmul_gflops(DType::f32, flops(724.0773)), 150, 1e-3);  // halfway in log n
  EXPECT_DOUBLE_EQ(c.matmul_gflops(DType::f32, flops(64)), 50);          // clamped below
  EXPECT_DOUBLE_EQ(c.matmul_gflops(DType::f32, flops(8192)), 200);       // and above
  EXPECT_DOUBLE_EQ(c.matmul_gflops(DType::f16, flops(4096)), 400);
  EXPECT_EQ(c.matmul_gflops(DType::bf16, flops(512)), 0.0);
  c.matmul.push_back({DType::f32, 2048, 20});  // a disturbed run: below the smaller sizes
  EXPECT_DOUBLE_EQ(c.matmul_gflops(DType::f32, flops(2048)), 200);
}

// With no cache directory at all (HAL_CACHE_DIR, XDG_CACHE_HOME and HOME unset, as under
// `env -i` or a service), what this process measured still counts in it: `hal select
// --min-tflops` once calibrated every device and then found none calibrated.
TEST(CalibrationWithoutACacheDirectory, WhatWasMeasuredCountsInThisProcess) {
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char* name : {"HAL_CACHE_DIR", "XDG_CACHE_HOME", "HOME"}) {
    if (const char* value = std::getenv(name)) saved.emplace_back(name, value);
    ::unsetenv(name);
  }
  reload_calibrations();
  const Device sim = hal::device("sim:0");
  EXPECT_TRUE(calibration_cache_file(sim).empty());
  EXPECT_FALSE(cached_calibration(sim));
  const Calibration made = calibrate(sim, {.use_cache = true, .quick = true});
  const std::optional<Calibration> found = cached_calibration(sim);
  const Estimate e = estimate(Workload::matmul(256, 256, 256), sim);
  const Calibration again = calibrate(sim, {.use_cache = true, .quick = true});
  for (const auto& [name, value] : saved) ::setenv(name.c_str(), value.c_str(), 1);
  reload_calibrations();
  ASSERT_TRUE(found);
  EXPECT_DOUBLE_EQ(found->matmul_gflops(DType::f32), made.matmul_gflops(DType::f32));
  EXPECT_EQ(e.provenance, Provenance::measured);
  EXPECT_TRUE(again.from_cache) << "the second request is served from memory";
}

TEST_F(CalibrationTest, NoDeviceIsRefused) {
  expect_error([] { calibrate(Device{}); }, ErrorCode::InvalidArgument, {"calibrate", "no device"});
}

}  // namespace
}  // namespace hal::test
