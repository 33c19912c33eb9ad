#include "hal/registry.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/host_cpu.hpp"
#include "far_backend.hpp"
#include "hal/backend.hpp"
#include "test_util.hpp"

namespace hal {
namespace {

using test::expect_error;
using test::ScopedSelector;

TEST(Registry, ListsEveryKnownBackendWithAReasonWhenUnavailable) {
  const auto backends = Registry::instance().backends();
  std::vector<std::string> names;
  for (const auto& backend : backends) {
    names.push_back(backend.name);
    if (backend.available) {
      EXPECT_TRUE(backend.reason.empty()) << backend.name;
      EXPECT_TRUE(backend.compiled_in) << backend.name;
    } else {
      EXPECT_FALSE(backend.reason.empty()) << backend.name;
    }
  }
  for (const char* name : {"cpu", "opencl", "cuda", "vulkan", "hip"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  EXPECT_EQ(backends.front().name, "cpu");
  EXPECT_TRUE(backends.front().available);
  EXPECT_EQ(backends.front().device_count, 1u);
}

TEST(Registry, CpuZeroIsAlwaysThere) {
  ScopedSelector all(std::nullopt);
  const Device cpu = device("cpu:0");
  EXPECT_EQ(cpu.id(), "cpu:0");
  EXPECT_EQ(cpu.info().kind, DeviceKind::cpu);
  EXPECT_EQ(cpu, Registry::instance().device("CPU:0"));
  const auto list = devices();
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(list.front(), cpu);
}

TEST(Registry, FindsADeviceByUuidPrefix) {
  const Device cpu = device("cpu:0");
  EXPECT_EQ(device(cpu.info().uuid.substr(0, 8)), cpu);
  EXPECT_EQ(device(cpu.info().uuid), cpu);
}

TEST(Registry, BadDeviceIdsNameWhatIsVisible) {
  expect_error([] { device("cpu:7"); }, ErrorCode::NotFound, {"'cpu:7'", "visible: cpu:0"});
  expect_error([] { device("nonsense"); }, ErrorCode::NotFound, {"'nonsense'", "cpu:0"});
  expect_error([] { device(""); }, ErrorCode::NotFound, {"''"});
  expect_error([] { device("hip:0"); }, ErrorCode::NotFound,
               {"hip", "unavailable", "not compiled in"});
  // Every unavailable backend's devices are refused with the backend's own reason.
  for (const BackendStatus& backend : Registry::instance().backends())
    if (!backend.available)
      expect_error([&] { device(backend.name + ":0"); }, ErrorCode::NotFound,
                   {backend.name, "unavailable", backend.reason});
  // The registry works as before.
  EXPECT_EQ(device("cpu:0").id(), "cpu:0");
}

TEST(Registry, SelectorHidesDevicesAndSaysSo) {
  ScopedSelector hide_cpu("!cpu:*");
  for (const Device& d : devices()) EXPECT_NE(d.id(), "cpu:0");
  expect_error([] { device("cpu:0"); }, ErrorCode::NotFound, {"cpu:0", "hidden", "!cpu:*"});
  // By a UUID prefix too: hidden, not unknown.
  std::string prefix;
  for (const Device& d : Registry::instance().all_devices())
    if (d.id() == "cpu:0") prefix = d.info().uuid.substr(0, 8);
  ASSERT_EQ(prefix.size(), 8u);
  expect_error([&] { device(prefix); }, ErrorCode::NotFound,
               {"UUID prefix '" + prefix + "'", "cpu:0", "hidden", "!cpu:*"});
  // all_devices ignores the selector.
  EXPECT_FALSE(Registry::instance().all_devices().empty());
}

TEST(Registry, MalformedSelectorIsAnErrorNeverAnEmptyList) {
  ScopedSelector bad("cpu:0;gpu");
  expect_error([] { devices(); }, ErrorCode::InvalidArgument, {"cpu:0;gpu", "has no ':'"});
  expect_error([] { device("cpu:0"); }, ErrorCode::InvalidArgument, {"cpu:0;gpu"});
}

TEST(Registry, UnknownBackendInSelectorIsAnError) {
  ScopedSelector typo("cpy:*");
  expect_error([] { devices(); }, ErrorCode::InvalidArgument, {"unknown backend 'cpy'", "cpu"});
}

TEST(Registry, SelectorByKind) {
  ScopedSelector gpus("*:gpu");
  for (const Device& d : devices()) EXPECT_EQ(d.info().kind, DeviceKind::gpu);
  ScopedSelector cpus("*:cpu");
  ASSERT_FALSE(devices().empty());
  EXPECT_EQ(devices().front().id(), "cpu:0");
}

class NamedBackend final : public Backend {
 public:
  explicit NamedBackend(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  BackendProbe probe() override { return {false, "test backend without devices", {}}; }

 private:
  std::string name_;
};

class ThrowingBackend final : public Backend {
 public:
  std::string name() const override { return "throwing"; }
  BackendProbe probe() override { throw std::runtime_error("driver exploded"); }
};

TEST(Registry, RegisterBackendRejectsBadAndDuplicateNames) {
  expect_error([] { register_backend(nullptr); }, ErrorCode::InvalidArgument, {"null backend"});
  expect_error([] { register_backend(std::make_shared<NamedBackend>("Bad Name")); },
               ErrorCode::InvalidArgument, {"'Bad Name'"});
  expect_error([] { register_backend(std::make_shared<NamedBackend>("cpu")); },
               ErrorCode::InvalidArgument, {"'cpu'", "already registered"});
}

TEST(Registry, ABackendThatFailsToProbeIsUnavailableWithTheReason) {
  register_backend(std::make_shared<ThrowingBackend>());
  register_backend(std::make_shared<NamedBackend>("empty"));
  bool seen_throwing = false, seen_empty = false;
  for (const auto& backend : Registry::instance().backends()) {
    if (backend.name == "throwing") {
      seen_throwing = true;
      EXPECT_FALSE(backend.available);
      EXPECT_NE(backend.reason.find("driver exploded"), std::string::npos) << backend.reason;
    }
    if (backend.name == "empty") {
      seen_empty = true;
      EXPECT_EQ(backend.reason, "test backend without devices");
    }
  }
  EXPECT_TRUE(seen_throwing && seen_empty);
  EXPECT_EQ(device("cpu:0").id(), "cpu:0");  // other backends unaffected
}

// A backend whose probe is counted: a stand-in for a driver that is slow to load.
class CountedBackend final : public Backend {
 public:
  explicit CountedBackend(std::string name = "counted") : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  BackendProbe probe() override {
    ++probes;
    return {false, "counted backend without devices", {}};
  }
  std::atomic<int> probes{0};

 private:
  std::string name_;
};

TEST(Registry, ABackendTheSelectorHidesEntirelyIsNotProbed) {
  auto counted = std::make_shared<CountedBackend>();
  register_backend(counted);
  {
    ScopedSelector cpu_only("cpu:*");
    EXPECT_EQ(devices().front().id(), "cpu:0");
    EXPECT_EQ(counted->probes.load(), 0);
    ScopedSelector not_counted("!counted:*");
    EXPECT_FALSE(devices().empty());
    EXPECT_EQ(counted->probes.load(), 0);
  }
  {
    // Asking for one of its devices by id probes it, so the error gives the backend's reason.
    ScopedSelector cpu_only("cpu:*");
    expect_error([] { device("counted:0"); }, ErrorCode::NotFound,
                 {"counted", "unavailable", "counted backend without devices"});
    EXPECT_EQ(counted->probes.load(), 1);
  }
  // Probed once, whatever the selector after.
  devices();
  Registry::instance().backends();
  EXPECT_EQ(counted->probes.load(), 1);
}

// hal's own host work (folding constants, an op's CPU fallback, reading values back) finds cpu:0
// by probing the CPU backend alone, shown or not: a program that shows only its GPUs, or a
// bad-input child only its sim device, loads no other driver for it (it probed every backend).
TEST(Registry, TheHostCpuIsFoundWithoutProbingAnotherBackend) {
  auto counted = std::make_shared<CountedBackend>("counted_host");
  register_backend(counted);
  ScopedSelector only_it("counted_host:*");
  EXPECT_EQ(hal::detail::host_cpu().id(), "cpu:0");
  EXPECT_EQ(counted->probes.load(), 0);
}

TEST(Registry, ADeviceOfAnUnprobedBackendIsNamedAsHidden) {
  test::register_far_backend();  // unprobed in a process of its own (release CTest)
  ScopedSelector cpu_only("cpu:*");
  expect_error([] { device("far:1"); }, ErrorCode::NotFound,
               {"far:1", "hidden", "'cpu:*'", "visible: cpu:0"});
  expect_error([] { device("far:9"); }, ErrorCode::NotFound, {"'far:9'", "visible: cpu:0"});
}

// Devices that claim as much memory as they are told to (a plugin's figures are taken as
// given): for sums past 2^64.
class ClaimingDevice final : public DeviceImpl {
 public:
  ClaimingDevice(std::string id, uint64_t bytes) {
    info_.id = std::move(id);
    info_.kind = DeviceKind::accelerator;
    info_.memory_total = {bytes, Provenance::measured};
    info_.memory_free = info_.memory_total;
  }
  const DeviceInfo& info() const override { return info_; }
  BufferPtr allocate(size_t, MemoryKind) override { throw_unsupported(*this, "memory"); }
  std::shared_ptr<StreamImpl> create_stream() override { throw_unsupported(*this, "streams"); }
  std::shared_ptr<EventImpl> create_event() override { throw_unsupported(*this, "events"); }

 private:
  DeviceInfo info_;
};

class ClaimingBackend final : public Backend {
 public:
  std::string name() const override { return "claiming"; }
  BackendProbe probe() override {
    BackendProbe found{true, "", {}};
    for (int i = 0; i < 3; ++i)
      found.devices.push_back(
          std::make_shared<ClaimingDevice>("claiming:" + std::to_string(i), uint64_t{1} << 63));
    return found;
  }
};

TEST(Registry, SummaryHoldsMemorySumsAtTheLargestFigureRatherThanWrapping) {
  register_backend(std::make_shared<ClaimingBackend>());
  ScopedSelector claiming("claiming:*");
  const Summary machine = summary();
  ASSERT_EQ(machine.devices.size(), 3u);
  EXPECT_EQ(machine.memory_total_bytes, UINT64_MAX);  // 3 * 2^63 wrapped to 2^63
  EXPECT_EQ(machine.memory_free_bytes, UINT64_MAX);
}

TEST(Registry, IsSafeToUseFromManyThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> found{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        if (device("cpu:0").id() == "cpu:0") found.fetch_add(1);
        EXPECT_FALSE(devices().empty());
        EXPECT_FALSE(Registry::instance().backends().empty());
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(found.load(), 8 * 200);
}

}  // namespace
}  // namespace hal
