// Device facts against the driver's own answers (read here through the loader directly), and
// how hal reports the backend: listed with the others, and in traces.
#include <unistd.h>
#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

#include "backends/vulkan/vulkan_shaders.hpp"
#include "trace_json.hpp"
#include "vulkan_fixture.hpp"

namespace hal::test {
namespace {

// The driver's properties of the device with `uuid`, through an instance of the test's own.
struct DriverFacts {
  bool found = false;
  VkPhysicalDeviceProperties properties{};
  uint32_t subgroup_size = 0;
  VkSubgroupFeatureFlags subgroup_operations = 0;
  VkShaderStageFlags subgroup_stages = 0;
  uint64_t device_local_bytes = 0;
  // VK_EXT_calibrated_timestamps, reading the device's clock with CLOCK_MONOTONIC
  bool calibrated_timestamps = false;
};

bool calibrates_against_monotonic(VkInstance instance, VkPhysicalDevice device) {
  uint32_t count = 0;
  vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  vkEnumerateDeviceExtensionProperties(device, nullptr, &count, extensions.data());
  const bool listed = std::any_of(extensions.begin(), extensions.end(), [](const auto& e) {
    return std::string_view(e.extensionName) == VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME;
  });
  const auto domains_of = reinterpret_cast<PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT"));
  if (!listed || !domains_of) return false;
  domains_of(device, &count, nullptr);
  std::vector<VkTimeDomainEXT> domains(count);
  domains_of(device, &count, domains.data());
  const auto has = [&](VkTimeDomainEXT d) {
    return std::find(domains.begin(), domains.end(), d) != domains.end();
  };
  return has(VK_TIME_DOMAIN_DEVICE_EXT) && has(VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT);
}

std::string uuid_text(const uint8_t (&bytes)[VK_UUID_SIZE]) {
  char text[40];
  std::snprintf(text, sizeof text,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", bytes[0],
                bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return text;
}

DriverFacts driver_facts(const std::string& uuid) {
  DriverFacts facts;
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  if (vkCreateInstance(&info, nullptr, &instance) != VK_SUCCESS) return facts;
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance, &count, devices.data());
  for (VkPhysicalDevice device : devices) {
    VkPhysicalDeviceSubgroupProperties subgroup{};
    subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    VkPhysicalDeviceIDProperties ids{};
    ids.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
    ids.pNext = &subgroup;
    VkPhysicalDeviceProperties2 properties{};
    properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    properties.pNext = &ids;
    vkGetPhysicalDeviceProperties2(device, &properties);
    if (uuid_text(ids.deviceUUID) != uuid) continue;
    facts.found = true;
    facts.properties = properties.properties;
    facts.subgroup_size = subgroup.subgroupSize;
    facts.subgroup_operations = subgroup.supportedOperations;
    facts.subgroup_stages = subgroup.supportedStages;
    facts.calibrated_timestamps = calibrates_against_monotonic(instance, device);
    VkPhysicalDeviceMemoryProperties memory;
    vkGetPhysicalDeviceMemoryProperties(device, &memory);
    for (uint32_t h = 0; h < memory.memoryHeapCount; ++h)
      if (memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
        facts.device_local_bytes += memory.memoryHeaps[h].size;
  }
  vkDestroyInstance(instance, nullptr);
  return facts;
}

using VulkanDeviceTest = VulkanTest;

TEST_F(VulkanDeviceTest, FactsAreTheDriversOwn) {
  const DeviceInfo& info = device.info();
  const DriverFacts facts = driver_facts(info.uuid);
  ASSERT_TRUE(facts.found) << "no Vulkan device has hal's UUID " << info.uuid;
  EXPECT_EQ(info.id, "vulkan:0");
  EXPECT_EQ(info.name, facts.properties.deviceName);
  char ids[32];
  std::snprintf(ids, sizeof ids, "%04x:%04x", facts.properties.vendorID, facts.properties.deviceID);
  EXPECT_EQ(info.architecture, ids);
  EXPECT_TRUE(info.has_feature("subgroup_size_" + std::to_string(facts.subgroup_size)));
  // The reductions' subgroup shaders: basic, vote and arithmetic operations in compute shaders,
  // unless HAL_VULKAN_SUBGROUPS=0 (a CTest run of its own) turns them off.
  const VkSubgroupFeatureFlags needed = VK_SUBGROUP_FEATURE_BASIC_BIT |
                                        VK_SUBGROUP_FEATURE_VOTE_BIT |
                                        VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  const char* subgroups = std::getenv("HAL_VULKAN_SUBGROUPS");
  EXPECT_EQ(info.has_feature(vulkan::kSubgroupReductions),
            (facts.subgroup_operations & needed) == needed &&
                (facts.subgroup_stages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                !(subgroups && std::string_view(subgroups) == "0"));
  EXPECT_EQ(info.memory_total.bytes, facts.device_local_bytes);
  EXPECT_EQ(info.limits.max_work_group_size,
            facts.properties.limits.maxComputeWorkGroupInvocations);
  EXPECT_EQ(info.limits.max_shared_memory_bytes,
            facts.properties.limits.maxComputeSharedMemorySize);
  EXPECT_EQ(info.kind, facts.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU
                           ? DeviceKind::cpu
                           : DeviceKind::gpu);
  EXPECT_TRUE(info.supports(DType::f32));
  EXPECT_TRUE(std::is_sorted(info.features.begin(), info.features.end()));
  EXPECT_GT(device.memory_free().bytes, 0u);
  EXPECT_LE(device.memory_free().bytes, info.memory_total.bytes);
}

TEST_F(VulkanDeviceTest, ListedWithTheOtherBackends) {
  bool listed = false;
  for (const Device& each : Registry::instance().devices())
    listed |= each.info().id == device.info().id;
  EXPECT_TRUE(listed);
  EXPECT_EQ(hal::device(device.info().uuid).info().id, "vulkan:0");
}

// While a trace records, a stream's copies and dispatches also show when they ran, on the
// stream's device track: a device command from its own timestamps mapped onto the host's clock,
// where the driver can read both clocks together (without, hal shows no device command at
// all rather than one in the wrong place); a copy through mapped memory timed on the stream's
// worker. HAL_VULKAN_STAGING=1 (a CTest run of its own) stages the copies: a device copy, and
// the host's part into or out of the staging memory.
TEST_F(VulkanDeviceTest, TracesShowWhenCommandsRanOnTheDevice) {
  namespace fs = std::filesystem;
  const DriverFacts facts = driver_facts(device.info().uuid);
  ASSERT_TRUE(facts.found);
  const char* staging = std::getenv("HAL_VULKAN_STAGING");
  const bool staged = staging && std::string_view(staging) == "1";
  const fs::path file =
      fs::temp_directory_path() / ("hal_vulkan_trace_" + std::to_string(::getpid()) + ".json");
  const uint32_t n = uint32_t{4} << 20;  // 16 MiB of floats
  std::vector<float> host(n, 1.0f);
  // Binary op 0 (add), flat: x = x + x.
  const Kernel add =
      device.compile({"main", std::string(vulkan::vulkan_shader("binary")), KernelLanguage::native},
                     {.defines = {"0=0", "1=0"}});
  Stream stream = device.create_stream();
  Buffer x = device.allocate(size_t{n} * 4);
  stream.synchronize();
  trace::start(file);
  stream.copy_from_host(x, host.data(), size_t{n} * 4);
  stream.launch(add, LaunchConfig::linear(n), {x, x, x, 0u, 0u, n});
  stream.copy_to_host(host.data(), x, size_t{n} * 4);
  stream.synchronize();
  trace::stop();
  EXPECT_EQ(host[n - 1], 2.0f);

  const nlohmann::json trace = take_trace(file);
  ASSERT_GE(track_id(trace, device.id() + " stream 0"), 0) << trace.dump();
  const DeviceTrackRun run = device_track_run(trace, device.id());
  const std::vector<nlohmann::json>& ran = run.ran;
  std::vector<std::string> expected;
  // What runs where: host copies on the worker; device commands only with calibrated clocks.
  const bool device_spans = facts.calibrated_timestamps;
  if (staged) expected.push_back("copy_from_host (into staging)");
  if (staged && device_spans) expected.push_back("copy_from_host");
  if (!staged) expected.push_back("copy_from_host");
  if (device_spans) expected.push_back(add.name());
  if (!staged) expected.push_back("copy_to_host");
  if (staged && device_spans) expected.push_back("copy_to_host");
  if (staged) expected.push_back("copy_to_host (out of staging)");
  ASSERT_EQ(run.names(), expected)
      << (device_spans ? "" : "(the driver cannot calibrate its clock) ") << trace.dump();
  // In queue order, within the issue of the first command and the synchronize's return: the
  // host's clock and the device's calibrated one agree to well under 0.1 ms (lavapipe's device
  // clock is CLOCK_MONOTONIC itself), and the trace rounds to 0.1 us.
  constexpr double kSlackUs = 100;
  EXPECT_GE(ran.front()["ts"].get<double>(), run.first_issue - kSlackUs) << ran.front();
  for (size_t i = 1; i < ran.size(); ++i)
    EXPECT_LE(span_end(ran[i - 1]), ran[i]["ts"].get<double>() + kSlackUs) << ran[i - 1] << ran[i];
  EXPECT_LE(span_end(ran.back()), run.synchronized + kSlackUs) << ran.back();
  for (const auto& e : ran) {
    if (e["name"] == add.name()) {
      EXPECT_EQ(e["args"]["global"], nlohmann::json({n, 1, 1})) << e;
      continue;
    }
    EXPECT_EQ(e["args"]["bytes"], size_t{n} * 4) << e;
    EXPECT_GT(e["args"]["GB/s"].get<double>(), 0.0) << e;
  }
}

}  // namespace
}  // namespace hal::test
