// EnergyMeter (hal/energy.hpp) over a powercap tree laid out like /sys/class/powercap in a
// temporary directory (HAL_POWERCAP_ROOT): package domains summed, their parts left out, counters
// followed across a wrap; no counter, an unreadable one and a device that is not the host's CPU
// refused by code and message. NVIDIA GPUs' meters over a stand-in NVML (fake_nvml.cpp, named by
// HAL_NVML_LIBRARY): millijoules read as joules, the library initialised while a meter uses it,
// GPUs without a counter, unknown GPUs and a missing library refused.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "hal/energy.hpp"
#include "hal/ops.hpp"
#include "hal/registry.hpp"
#include "hal/tensor.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;

class EnergyMeterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("hal_energy_test_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_);
    setenv("HAL_POWERCAP_ROOT", root_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("HAL_POWERCAP_ROOT");
    fs::remove_all(root_);
  }
  // A domain `name` with its counter at `uj` and, where given, its range.
  void domain(const std::string& name, const std::string& label, uint64_t uj, uint64_t range = 0) {
    fs::create_directories(root_ / name);
    std::ofstream(root_ / name / "name") << label << "\n";
    if (range) std::ofstream(root_ / name / "max_energy_range_uj") << range << "\n";
    set(name, uj);
  }
  void set(const std::string& name, uint64_t uj) {
    std::ofstream(root_ / name / "energy_uj") << uj << "\n";
  }

  fs::path root_;
  hal::Device cpu_ = hal::device("cpu:0");
};

TEST_F(EnergyMeterTest, SumsThePackagesAndLeavesTheirPartsOut) {
  domain("intel-rapl:0", "package-0", 5'000'000);
  domain("intel-rapl:1", "package-1", 7'000'000);
  domain("intel-rapl:0:0", "core", 1'000'000);          // inside package 0's count already
  domain("intel-rapl-mmio:0", "package-0", 9'000'000);  // the same package by another path
  hal::EnergyMeter meter = hal::EnergyMeter::of(cpu_);
  EXPECT_EQ(meter.source(), "powercap intel-rapl:0 (package-0), intel-rapl:1 (package-1)");
  EXPECT_DOUBLE_EQ(meter.joules(), 0.0);
  set("intel-rapl:0", 6'500'000);  // +1.5 J
  set("intel-rapl:1", 7'250'000);  // +0.25 J
  set("intel-rapl:0:0", 9'000'000);
  EXPECT_DOUBLE_EQ(meter.joules(), 1.75);
  set("intel-rapl:1", 8'250'000);  // +1 J
  EXPECT_DOUBLE_EQ(meter.joules(), 2.75);
}

TEST_F(EnergyMeterTest, FollowsACounterThatWraps) {
  domain("intel-rapl:0", "package-0", 900'000, /*range=*/1'000'000);
  hal::EnergyMeter meter = hal::EnergyMeter::of(cpu_);
  set("intel-rapl:0", 100'000);  // 100 000 to the wrap, 100 000 after it
  EXPECT_DOUBLE_EQ(meter.joules(), 0.2);
  set("intel-rapl:0", 400'000);
  EXPECT_DOUBLE_EQ(meter.joules(), 0.5);
}

TEST_F(EnergyMeterTest, RefusesWhatItCannotMeter) {
  hal::test::expect_error([&] { hal::EnergyMeter::of(cpu_); }, hal::ErrorCode::Unsupported,
                          {"no RAPL package domain under " + root_.string()});
  // A counter that cannot be read (here a directory where the file should be; on a real
  // machine, a user who is not root since Linux 5.10).
  fs::create_directories(root_ / "intel-rapl:0" / "energy_uj");
  hal::test::expect_error([&] { hal::EnergyMeter::of(cpu_); }, hal::ErrorCode::Unsupported,
                          {"cannot read " + (root_ / "intel-rapl:0" / "energy_uj").string()});
  fs::remove_all(root_ / "intel-rapl:0");
  domain("intel-rapl:0", "package-0", 1);
  hal::EnergyMeter meter = hal::EnergyMeter::of(cpu_);
  fs::remove(root_ / "intel-rapl:0" / "energy_uj");
  hal::test::expect_error([&] { meter.joules(); }, hal::ErrorCode::InvalidState, {"cannot read"});
  // Only the host's CPU and NVIDIA GPUs (through NVML, below) are metered.
  for (const hal::Device& d : hal::devices())
    if (d.info().kind != hal::DeviceKind::cpu && d.info().backend() != "cuda")
      hal::test::expect_error(
          [&] { hal::EnergyMeter::of(d); }, hal::ErrorCode::Unsupported,
          {d.id() + " (" + std::string(hal::to_string(d.info().kind)) + ") has no energy counter"});
}

class NvmlEnergyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("HAL_NVML_LIBRARY", HAL_FAKE_NVML, 1);
    // The same library the meter opens (dlopen gives one copy per file), to ask it how often it
    // is initialised.
    library_ = dlopen(HAL_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << dlerror();
    initialised_ = reinterpret_cast<int (*)()>(dlsym(library_, "fake_nvml_initialised"));
    ASSERT_NE(initialised_, nullptr);
  }
  void TearDown() override {
    unsetenv("HAL_NVML_LIBRARY");
    if (library_) dlclose(library_);
  }
  void* library_ = nullptr;
  int (*initialised_)() = nullptr;
};

TEST_F(NvmlEnergyTest, NvidiaGpusAreMeteredInJoules) {
  {
    // hal's form of the UUID (as its cuda devices give it) and NVML's own.
    hal::EnergyMeter meter =
        hal::EnergyMeter::of_nvidia_gpu("11111111-2222-3333-4444-555555555555");
    hal::EnergyMeter again =
        hal::EnergyMeter::of_nvidia_gpu("GPU-11111111-2222-3333-4444-555555555555");
    EXPECT_EQ(meter.source(), "nvml GPU-11111111-2222-3333-4444-555555555555");
    EXPECT_EQ(again.source(), meter.source());
    EXPECT_EQ(initialised_(), 2);  // NVML counts its users
    // The stand-in's board has used 250 mJ more at every reading of its counter (the readings of
    // both meters share it): the meter's first was when it was made.
    EXPECT_DOUBLE_EQ(meter.joules(), 0.5);  // 2 readings on: one of `again`'s, this one
    EXPECT_DOUBLE_EQ(meter.joules(), 0.75);
    EXPECT_DOUBLE_EQ(again.joules(), 0.75);  // since `again` was made: 3 readings
  }
  EXPECT_EQ(initialised_(), 0);  // each meter's use of NVML ends with it
}

TEST_F(NvmlEnergyTest, RefusesGpusWithoutACounterAndAbsentNvml) {
  hal::test::expect_error(
      [] { hal::EnergyMeter::of_nvidia_gpu("11111111-2222-3333-4444-666666666666"); },
      hal::ErrorCode::Unsupported,
      {"GPU-11111111-2222-3333-4444-666666666666 gives no energy counter", "Volta and later",
       "NVML: Not Supported (3)"});
  hal::test::expect_error(
      [] { hal::EnergyMeter::of_nvidia_gpu("00000000-0000-0000-0000-000000000000"); },
      hal::ErrorCode::Unsupported,
      {"NVML has no GPU GPU-00000000-0000-0000-0000-000000000000", "Not Found (6)"});
  EXPECT_EQ(initialised_(), 0);  // a refusal leaves NVML as it found it
  setenv("HAL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  hal::test::expect_error(
      [] { hal::EnergyMeter::of_nvidia_gpu("11111111-2222-3333-4444-555555555555"); },
      hal::ErrorCode::Unsupported, {"cannot open /nonexistent/libnvidia-ml.so.1", "NVML"});
}

// On a machine with an NVIDIA GPU, its driver's NVML: while the GPU multiplies matrices for
// about half a second, the counter moves by a plausible amount (more than nothing, less than a
// kilowatt for the time), in steps whose spacing it prints (hal compare samples ten of them).
TEST(NvmlOnTheDriver, CudaDevicesAreMeteredWhereTheDriverHasACounter) {
  bool any = false;
  for (const hal::Device& d : hal::devices()) {
    if (d.info().backend() != "cuda") continue;
    any = true;
    std::optional<hal::EnergyMeter> meter;
    try {
      meter.emplace(hal::EnergyMeter::of(d));
    } catch (const hal::Error& e) {
      ASSERT_EQ(e.code(), hal::ErrorCode::Unsupported) << e.what();
      std::printf("%s has no energy counter: %s\n", d.id().c_str(), e.what());
      continue;
    }
    EXPECT_EQ(meter->source().rfind("nvml GPU-", 0), 0u) << meter->source();
    hal::Stream stream = d.create_stream();
    const hal::Tensor a = hal::full({4096, 4096}, 0.5, hal::DType::f32, stream);
    stream.synchronize();
    // Enqueued at once (about 140 GFLOP each), then the counter read while they run: until it
    // has moved three times, for at most 2 s from the last enqueue (a GPU or host shared with
    // other programs makes the enqueues and the driver's updates slower).
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const double before = meter->joules();
    for (int i = 0; i < 300; ++i) hal::matmul(a, a, stream);
    const auto enqueued = Clock::now();
    double last = meter->joules();
    std::vector<double> steps;  // seconds between the counter's moves, from its first seen one
    bool seen_move = false;
    auto moved = enqueued;
    while (steps.size() < 2 && Clock::now() - enqueued < std::chrono::seconds(2)) {
      const double now = meter->joules();
      if (now != last) {
        if (seen_move) steps.push_back(std::chrono::duration<double>(Clock::now() - moved).count());
        seen_move = true;
        moved = Clock::now();
        last = now;
      }
    }
    stream.synchronize();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double used = meter->joules() - before;
    std::sort(steps.begin(), steps.end());
    const double step = steps.empty() ? 0 : steps[steps.size() / 2];
    std::printf(
        "%s: %.1f J over %.2f s (%.0f W); the counter moved every %.1f ms (median of %zu)"
        " (%s)\n",
        d.id().c_str(), used, seconds, used / seconds, step * 1e3, steps.size(),
        meter->source().c_str());
    EXPECT_GT(used, 0.0);
    EXPECT_LT(used, 1000.0 * seconds);
    EXPECT_FALSE(steps.empty()) << "the counter moved less than twice in 2 s";
  }
  if (!any) GTEST_SKIP() << "no CUDA device here: NVML of a real driver cannot be read";
}

}  // namespace
