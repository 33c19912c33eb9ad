// The `hal` command, run as a person or a script would run it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "test_util.hpp"

namespace {

using Result = hal::test::ShellResult;

// Leak checking stays on for the hal command (hal::test::child_sanitizer_options). GCC 12's
// sanitizer runtime (before LLVM's fix of April 2023, "Fix tls_get_addr handling for glibc
// >=2.25") takes a dynamic TLS block that glibc 2.36 malloc'ed 16 bytes past a page boundary for
// a glibc 2.19 block and reads its size from the bytes before it; LeakSanitizer then scans that
// range at exit and crashes ("Tracer caught signal 11"), now and then, as the plugins and the
// OpenCL loader lay out the heap. Those blocks are ordinary heap blocks since glibc 2.25, found
// through the DTV, so the runtime's tracking of them can go.
Result run(const std::string& environment, const std::string& arguments) {
  return hal::test::run_shell(hal::test::child_sanitizer_options() + environment +
                              " " HAL_CLI_PATH " " + arguments);
}

// stdout alone, as a script reading the command's JSON sees it.
Result run_stdout(const std::string& environment, const std::string& arguments) {
  return run(environment, arguments + " 2>/dev/null; exit $?; :");
}

TEST(Cli, DevicesPrintsOneLinePerDevice) {
  const Result result = run("", "devices");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_EQ(result.output.rfind("[cpu:0] ", 0), 0u) << result.output;
  EXPECT_NE(result.output.find(" cores · "), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("GiB"), std::string::npos) << result.output;
}

TEST(Cli, DevicesAllListsUnavailableBackendsWithReasons) {
  const Result result = run("", "devices --all");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("(cuda: unavailable, "), std::string::npos) << result.output;
}

TEST(Cli, DevicesJsonFollowsTheSchema) {
  const Result result = run("", "devices --json");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["schema"], "hal.devices/1");
  ASSERT_TRUE(json["backends"].is_array());
  const auto& cpu = json["backends"][0];
  EXPECT_EQ(cpu["name"], "cpu");
  EXPECT_EQ(cpu["available"], true);
  EXPECT_EQ(cpu["reason"], "");
  ASSERT_EQ(cpu["devices"].size(), 1u);
  const auto& device = cpu["devices"][0];
  for (const char* field :
       {"id", "uuid", "name", "vendor", "kind", "arch", "driver_version", "memory_total",
        "memory_free", "compute_units", "clock_mhz", "dtypes", "features", "caches"})
    EXPECT_TRUE(device.contains(field)) << field;
  EXPECT_EQ(device["id"], "cpu:0");
  EXPECT_EQ(device["kind"], "cpu");
  EXPECT_GT(device["memory_total"].get<uint64_t>(), 0u);
  EXPECT_LE(device["memory_free"].get<uint64_t>(), device["memory_total"].get<uint64_t>());
  bool listed_unavailable = false;
  for (const auto& backend : json["backends"])
    if (backend["available"] == false)
      listed_unavailable = !backend["reason"].get<std::string>().empty();
  EXPECT_TRUE(listed_unavailable);
}

TEST(Cli, SelectorNarrowsTheList) {
  const std::string hide_all = "HAL_DEVICES='!cpu:*;!opencl:*;!sim:*;!vulkan:*'";
  const Result result = run(hide_all, "devices --json");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto listing = nlohmann::json::parse(result.output);
  for (const auto& backend : listing["backends"])
    EXPECT_EQ(backend["devices"].size(), 0u) << backend["name"];
  const Result text = run(hide_all, "devices");
  EXPECT_NE(text.output.find("no devices are visible"), std::string::npos) << text.output;
}

TEST(Cli, OpenClWithoutADriverIsUnavailableWithTheReason) {
  // The ICD loader reads its drivers from OCL_ICD_VENDORS: an empty folder means none.
  const Result result = run("OCL_ICD_VENDORS=/nonexistent-hal-test", "devices --all --json");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto listing = nlohmann::json::parse(result.output);
  bool checked = false;
  for (const auto& backend : listing["backends"]) {
    if (backend["name"] != "opencl" || !backend["compiled_in"]) continue;
    checked = true;
    EXPECT_FALSE(backend["available"]);
    EXPECT_NE(backend["reason"].get<std::string>().find("no platform"), std::string::npos)
        << backend["reason"];
    EXPECT_EQ(backend["devices"].size(), 0u);
  }
  if (!checked) GTEST_SKIP() << "this build of hal has no OpenCL backend (no CL/cl.h was found)";
}

TEST(Cli, MalformedSelectorFailsQuotingIt) {
  const Result result = run("HAL_DEVICES='cuda:zz'", "devices");
  EXPECT_EQ(result.status, 1);
  EXPECT_NE(result.output.find("HAL_DEVICES"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("'cuda:zz'"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("InvalidArgument"), std::string::npos) << result.output;
}

TEST(Cli, VersionFlagAndCommand) {
  const Result flag = run("", "--version");
  ASSERT_EQ(flag.status, 0) << flag.output;
  EXPECT_EQ(flag.output.rfind("hal 0.", 0), 0u) << flag.output;
  const Result json = run("", "version --json");
  ASSERT_EQ(json.status, 0) << json.output;
  const auto parsed = nlohmann::json::parse(json.output);
  EXPECT_EQ(parsed["schema"], "hal.version/1");
  EXPECT_EQ(parsed["backends"][0], "cpu");
  EXPECT_EQ(flag.output, "hal " + parsed["version"].get<std::string>() + "\n");
}

TEST(Cli, NoCommandPrintsHelpAndFails) {
  const Result result = run("", "");
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.output.find("devices"), std::string::npos) << result.output;
}

TEST(Cli, MemoryShowsTheAllocatorAtWork) {
  const Result text = run("", "memory");
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("caching allocator of cpu:0"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("segments"), std::string::npos) << text.output;
  const Result result = run("", "memory --device cpu:0 --json");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["schema"], "hal.memory/1");
  EXPECT_EQ(json["device"], "cpu:0");
  const auto& stats = json["stats"];
  EXPECT_GT(stats["num_allocs"].get<uint64_t>(), stats["num_frees"].get<uint64_t>());
  EXPECT_GE(stats["reserved_bytes"]["current"].get<uint64_t>(),
            stats["allocated_bytes"]["current"].get<uint64_t>());
  // The segments' blocks cover them exactly, and in-use blocks add up to what is allocated.
  uint64_t in_use = 0;
  for (const auto& segment : json["segments"]) {
    uint64_t covered = 0;
    for (const auto& block : segment["blocks"]) {
      EXPECT_EQ(block["offset"].get<uint64_t>(), covered);
      covered += block["size"].get<uint64_t>();
      if (block["allocated"].get<bool>()) in_use += block["size"].get<uint64_t>();
    }
    EXPECT_EQ(covered, segment["size"].get<uint64_t>());
  }
  EXPECT_EQ(in_use, stats["allocated_bytes"]["current"].get<uint64_t>());
  const Result bad = run("", "memory --device cpu:9");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.output.find("no device 'cpu:9'"), std::string::npos) << bad.output;
}

TEST(Cli, BenchRunsASuiteAndReportsRatios) {
  const std::string cli = HAL_CLI_PATH;
  const std::string suite = cli.substr(0, cli.rfind('/')) + "/hal_bench_memory";
  if (access(suite.c_str(), X_OK) != 0)
    GTEST_SKIP() << suite << " is not built (this preset builds no benchmarks)";
  const Result result =
      run("", "bench memory --json --benchmark_filter=alloc_free/4096 --benchmark_min_time=0.01");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto json = nlohmann::json::parse(result.output.substr(result.output.find('{')));
  EXPECT_EQ(json["schema"], "hal.bench/1");
  EXPECT_EQ(json["suite"], "memory");
  EXPECT_EQ(json["device"], "cpu:0");
  bool hit = false, trace = false;
  for (const auto& figure : json["results"]) {
    EXPECT_GT(figure["value"].get<double>(), 0.0);
    EXPECT_GT(figure["baseline_value"].get<double>(), 0.0);
    EXPECT_NEAR(figure["ratio"].get<double>(),
                figure["value"].get<double>() / figure["baseline_value"].get<double>(), 1e-9);
    hit = hit || figure["name"] == "alloc_free_hit_4k";
    trace = trace || figure["name"] == "trace_reserved_over_requested";
  }
  EXPECT_TRUE(hit && trace) << result.output;
  const Result unknown = run("", "bench nope");
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.output.find("no benchmark suite 'nope'"), std::string::npos) << unknown.output;
}

// A suite runs in a process of its own: its trace is merged into the command's (the command's
// own held one metadata event, and under HAL_TRACE it wrote its empty trace over the suite's).
TEST(Cli, BenchTracesHoldTheSuitesWork) {
  const std::string cli = HAL_CLI_PATH;
  const std::string suite = cli.substr(0, cli.rfind('/')) + "/hal_bench_memory";
  if (access(suite.c_str(), X_OK) != 0)
    GTEST_SKIP() << suite << " is not built (this preset builds no benchmarks)";
  hal::test::ScratchDir dir("hal-bench-trace");
  const std::string bench =
      "bench memory --benchmark_filter=alloc_free/4096 --benchmark_min_time=0.01";
  for (const bool environment : {false, true}) {
    const std::filesystem::path file = dir.path() / (environment ? "env.json" : "option.json");
    const Result result = environment ? run("HAL_TRACE=" + file.string(), bench)
                                      : run("", bench + " --trace " + file.string());
    ASSERT_EQ(result.status, 0) << result.output;
    std::ifstream in(file);
    const auto trace = nlohmann::json::parse(in);
    std::set<int> pids;
    bool suite_span = false, suite_process = false;
    for (const auto& event : trace["traceEvents"]) {
      pids.insert(event.value("pid", 0));
      suite_span = suite_span || event.value("name", "") == "hal bench memory";
      suite_process = suite_process || (event.value("name", "") == "process_name" &&
                                        event["args"].value("name", "") == "hal bench memory");
    }
    EXPECT_EQ(pids.size(), 2u) << "the command's process and the suite's";
    EXPECT_TRUE(suite_span && suite_process) << file;
    EXPECT_GT(trace["traceEvents"].size(), 100u);
    size_t files = 0;  // the suite's own file merged and removed
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
      files += entry.is_regular_file();
    EXPECT_EQ(files, environment ? 2u : 1u);
  }
}

TEST(Cli, BenchModelsWithoutItsModelsSaysHowToMakeThem) {
  const std::string cli = HAL_CLI_PATH;
  const std::string suite = cli.substr(0, cli.rfind('/')) + "/hal_bench_models";
  if (access(suite.c_str(), X_OK) != 0)
    GTEST_SKIP() << suite << " is not built (this preset builds no benchmarks)";
  const Result result = run("", "bench models --models=/nonexistent/models");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_NE(result.output.find("no benchmark models in /nonexistent/models"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("scripts/setup-bench-models.sh"), std::string::npos)
      << result.output;
}

TEST(Cli, BenchCopyComparesEachDirectionWithTheDriver) {
  const std::string cli = HAL_CLI_PATH;
  const std::string suite = cli.substr(0, cli.rfind('/')) + "/hal_bench_copy";
  if (access(suite.c_str(), X_OK) != 0)
    GTEST_SKIP() << suite << " is not built (this preset builds no benchmarks)";
  const Result cpu = run("", "bench copy --device cpu:0");
  EXPECT_EQ(cpu.status, 2);
  EXPECT_NE(cpu.output.find("no baseline for cpu:0"), std::string::npos) << cpu.output;

  const auto opencl = hal::test::backend_devices("opencl");
  if (opencl.empty()) GTEST_SKIP() << "no OpenCL device: " << hal::test::backend_reason("opencl");
  const Result result = run("", "bench copy --device " + opencl.front().info().id +
                                    " --json --benchmark_filter=/4096 --benchmark_min_time=0.01");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto json = nlohmann::json::parse(result.output.substr(result.output.find('{')));
  EXPECT_EQ(json["suite"], "copy");
  std::set<std::string> names;
  for (const auto& figure : json["results"]) {
    EXPECT_GT(figure["value"].get<double>(), 0.0);
    EXPECT_GT(figure["baseline_value"].get<double>(), 0.0);
    names.insert(figure["name"].get<std::string>());
  }
  EXPECT_EQ(names, (std::set<std::string>{"copy_h2d_4k", "copy_d2h_4k", "copy_d2d_4k"}))
      << result.output;
}

TEST(Cli, BenchOpsComparesWithOpenBlasAndAHandWrittenLoop) {
  const std::string cli = HAL_CLI_PATH;
  const std::string suite = cli.substr(0, cli.rfind('/')) + "/hal_bench_ops";
  if (access(suite.c_str(), X_OK) != 0)
    GTEST_SKIP() << suite << " is not built (this preset builds no benchmarks)";
  const Result missing = run("", "bench ops --device nosuch:0");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.output.find("nosuch:0"), std::string::npos) << missing.output;

  const Result result = run("",
                            "bench ops --device cpu:0 --json "
                            "'--benchmark_filter=tiny|/1024' --benchmark_min_time=0.01");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto json = nlohmann::json::parse(result.output.substr(result.output.find('{')));
  EXPECT_EQ(json["suite"], "ops");
  std::set<std::string> names;
  for (const auto& figure : json["results"]) {
    EXPECT_GT(figure["value"].get<double>(), 0.0);
    EXPECT_GT(figure["baseline_value"].get<double>(), 0.0);
    names.insert(figure["name"].get<std::string>());
  }
  EXPECT_EQ(names, (std::set<std::string>{"matmul_f32_1024", "add_f32_tiny", "add_f32_tiny_traced",
                                          "fill_tiny_traced"}))
      << result.output;
}

TEST(Cli, PluginsListsEachCandidateAndWhyItDidNotLoad) {
  const Result result = run("HAL_PLUGIN_PATH=" HAL_TEST_PLUGINS, "plugins --json");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto listing = nlohmann::json::parse(result.output);
  EXPECT_EQ(listing["schema"], "hal.plugins/1");
  std::map<std::string, nlohmann::json> by_file;
  for (const auto& plugin : listing["plugins"]) {
    const std::string path = plugin["path"];
    by_file[path.substr(path.rfind('/') + 1)] = plugin;
  }
  ASSERT_TRUE(by_file.count("libhal_plugin_sim.so")) << result.output;
  EXPECT_TRUE(by_file["libhal_plugin_sim.so"]["loaded"].get<bool>());
  EXPECT_EQ(by_file["libhal_plugin_sim.so"]["abi_version"], "1.4");
  ASSERT_TRUE(by_file.count("libbroken_major.so")) << result.output;
  EXPECT_FALSE(by_file["libbroken_major.so"]["loaded"].get<bool>());
  EXPECT_NE(by_file["libbroken_major.so"]["reason"].get<std::string>().find("2.0"),
            std::string::npos);
  const Result text = run("HAL_PLUGIN_PATH=" HAL_TEST_PLUGINS, "plugins");
  EXPECT_NE(text.output.find("[sim]"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("(not loaded)"), std::string::npos) << text.output;
  const Result devices =
      run("HAL_SIM_CONFIG=devices=1 HAL_PLUGIN_PATH=" HAL_TEST_PLUGINS, "devices");
  EXPECT_EQ(devices.status, 0) << "broken plugins never stop hal: " << devices.output;
  EXPECT_NE(devices.output.find("[sim:0]"), std::string::npos) << devices.output;
}

TEST(Cli, CtsReportsEveryCaseAsJsonAndJUnit) {
  const std::string junit = testing::TempDir() + "hal-cts-test.xml";
  const Result result = run("", "cts --device cpu:0 --json --filter device.uuid --junit " + junit);
  ASSERT_EQ(result.status, 0) << result.output;
  const auto report = nlohmann::json::parse(result.output);
  EXPECT_EQ(report["schema"], "hal.cts/1");
  EXPECT_EQ(report["device"], "cpu:0");
  EXPECT_EQ(report["failed"], 0);
  EXPECT_EQ(report["passed"].get<size_t>() + report["not_supported"].get<size_t>(),
            report["cases"].size());
  EXPECT_EQ(report["cases"].size(), 3u) << "the three uuid cases";
  for (const auto& c : report["cases"]) {
    EXPECT_NE(c["name"].get<std::string>().find("device.uuid"), std::string::npos) << c["name"];
    EXPECT_TRUE(c["status"] == "pass" || c["status"] == "not-supported") << c;
  }
  std::ifstream file(junit);
  const std::string xml((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_NE(xml.find("<testsuite name=\"hal.cts.cpu:0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("device.uuid_is_canonical"), std::string::npos) << xml;

  const Result list = run("", "cts --list");
  size_t cases = 0;
  for (char c : list.output) cases += c == '\n';
  EXPECT_GE(cases, 150u) << "the suite has at least 150 cases";
  const Result missing = run("", "cts");
  EXPECT_EQ(missing.status, 2) << "a usage error: " << missing.output;
  EXPECT_NE(missing.output.find("--device"), std::string::npos) << missing.output;
}

// hal's OpenCL kernels build without warnings: PoCL prints a build's count of them on the
// program's stderr ("4 warnings generated."), which once broke a test reading `hal train --json`
// with its stderr (integer maxima's NaN tests, a self-comparison clang calls constant). With fresh
// kernel caches, hal's and PoCL's, so that each kernel is built here, for the integer types and the
// ops that test NaN, and the row kernels (softmax, the norms, their gradients).
TEST(Cli, OpenClKernelsBuildWithoutWarnings) {
  if (run("", "devices").output.find("[opencl:0]") == std::string::npos)
    GTEST_SKIP() << "no opencl:0 here";
  const std::filesystem::path caches =
      std::filesystem::path(testing::TempDir()) / ("hal-fresh-caches-" + std::to_string(getpid()));
  std::filesystem::remove_all(caches);
  std::filesystem::create_directories(caches / "pocl");
  const std::string environment = "POCL_CACHE_DIR=" + (caches / "pocl").string() +
                                  " HAL_CACHE_DIR=" + (caches / "hal").string();
  for (const char* filter :
       {"op.table.maximum.i32", "op.table.minimum.i8", "op.table.max.i64", "op.table.min.u8",
        "op.table.argmax.i8", "op.table.sum.i64", "op.softmax.stable", "op.layer_norm_and_rms_norm",
        "op.norm_backward"}) {
    // stdout and stderr both: PoCL's clang writes to either, as it was built.
    const Result result =
        run(environment, std::string("cts --device opencl:0 --json --filter ") + filter);
    ASSERT_EQ(result.status, 0) << filter << ": " << result.output;
    EXPECT_EQ(result.output.find("warning"), std::string::npos) << filter << ": " << result.output;
    const auto report = nlohmann::json::parse(result.output);  // nothing but the JSON
    EXPECT_EQ(report["failed"], 0) << filter;
    EXPECT_GE(report["passed"].get<int>(), 1) << filter;
  }
  std::filesystem::remove_all(caches);
}

TEST(Cli, CtsFailsWhenTheJUnitReportCannotBeWritten) {
  // /dev/full takes the open and fails the write: only a check after the flush sees it.
  const Result result = run("", "cts --device cpu:0 --filter device.uuid --junit /dev/full");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_NE(result.output.find("hal: error: cannot write the JUnit report to /dev/full"),
            std::string::npos)
      << result.output;
  // Where no file can be made, refused before any case runs (the results were lost after).
  const Result early = run("", "cts --device cpu:0 --filter device --junit /nonexistent/j.xml");
  EXPECT_EQ(early.status, 1) << early.output;
  EXPECT_NE(early.output.find("--junit /nonexistent/j.xml: /nonexistent is not a directory"),
            std::string::npos)
      << early.output;
  EXPECT_EQ(early.output.find("pass"), std::string::npos) << early.output;
}

TEST(Cli, CtsListsItsCasesAsJson) {
  const Result text = run("", "cts --list");
  ASSERT_EQ(text.status, 0) << text.output;
  const Result result = run_stdout("", "cts --list --json");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto list = nlohmann::json::parse(result.output);
  EXPECT_EQ(list["schema"], "hal.cts.list/1");
  std::string names;
  for (const auto& name : list["cases"]) names += name.get<std::string>() + "\n";
  EXPECT_EQ(names, text.output);
  // --filter picks the cases a run would take (--list listed all).
  const Result some = run("", "cts --list --filter op.matmul");
  ASSERT_EQ(some.status, 0) << some.output;
  size_t listed = 0;
  for (size_t at = 0, end; (end = some.output.find('\n', at)) != std::string::npos; at = end + 1) {
    ++listed;
    EXPECT_NE(some.output.substr(at, end - at).find("op.matmul"), std::string::npos);
  }
  EXPECT_GE(listed, 1u);
  EXPECT_LT(some.output.size(), text.output.size());
}

TEST(Cli, UnknownCommandIsAUsageError) {
  const Result result = run("", "frobnicate");
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.output.find("frobnicate"), std::string::npos) << result.output;
}

// A scratch HAL_CACHE_DIR for one test's runs of the hal command.
class CacheDir {
 public:
  std::string environment() const { return "HAL_CACHE_DIR=" + scratch_.path().string(); }
  const std::filesystem::path& path() const { return scratch_.path(); }

 private:
  hal::test::ScratchDir scratch_{"hal-cli-cache"};
};

nlohmann::json parse_json(const Result& result) {
  return nlohmann::json::parse(result.output.substr(result.output.find('{')));
}

TEST(Cli, SummaryCountsEveryDeviceByBackendVendorAndKind) {
  const Result result = run("", "summary --json");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["schema"], "hal.summary/1");
  const size_t count = json["device_count"].get<size_t>();
  EXPECT_EQ(json["devices"].size(), count);
  EXPECT_GE(count, 1u);
  for (const char* by : {"by_backend", "by_vendor", "by_kind"}) {
    size_t total = 0;
    for (const auto& [name, n] : json[by].items()) total += n.get<size_t>();
    EXPECT_EQ(total, count) << by;
  }
  EXPECT_EQ(json["by_backend"]["cpu"], 1);
  EXPECT_GT(json["memory_total"].get<uint64_t>(), 0u);
  EXPECT_LE(json["memory_free"].get<uint64_t>(), json["memory_total"].get<uint64_t>());
  for (const auto& device : json["devices"]) {
    EXPECT_FALSE(device["dtypes"].empty()) << device["id"];
    EXPECT_TRUE(device["features"].is_array());
  }
  const Result text = run("", "summary");
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("backends: cpu 1"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("[cpu:0] "), std::string::npos) << text.output;
}

TEST(Cli, CalibrateMeasuresOnceAndThenServesTheCache) {
  CacheDir cache;
  const Result first = run(cache.environment(), "calibrate --device cpu:0 --quick --json");
  ASSERT_EQ(first.status, 0) << first.output;
  const auto json = parse_json(first);
  EXPECT_EQ(json["schema"], "hal.calibrate/1");
  ASSERT_EQ(json["devices"].size(), 1u);
  const auto& figures = json["devices"][0];
  EXPECT_EQ(figures["device"], "cpu:0");
  EXPECT_FALSE(figures["from_cache"].get<bool>());
  EXPECT_GT(figures["matmul"][0]["gflops"].get<double>(), 0.0);
  EXPECT_TRUE(std::filesystem::exists(cache.path() / "calibration" /
                                      (figures["uuid"].get<std::string>() + ".json")));
  const Result second = run(cache.environment(), "calibrate --device cpu:0 --quick");
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_NE(second.output.find("(cached)"), std::string::npos) << second.output;
  const Result bad = run(cache.environment(), "calibrate --device cpu:7");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.output.find("cpu:7"), std::string::npos) << bad.output;
}

TEST(Cli, SelectPrintsTheChoiceAndEveryOtherDevicesReason) {
  CacheDir cache;
  const Result result = run(cache.environment(), "select --min-memory 1K --json");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["schema"], "hal.select/1");
  ASSERT_TRUE(json["choice"].is_string());
  ASSERT_FALSE(json["candidates"].empty());
  EXPECT_EQ(json["candidates"][0]["id"], json["choice"]);
  for (const auto& c : json["candidates"]) {
    EXPECT_TRUE(c["eligible"].get<bool>()) << c;
    EXPECT_FALSE(c["reason"].get<std::string>().empty()) << c;
    EXPECT_TRUE(c.contains("predicted_s")) << c;
  }

  const Result none = run(cache.environment(), "select --min-memory 1024T --json");
  EXPECT_EQ(none.status, 1) << none.output;
  const auto refused = nlohmann::json::parse(none.output);
  EXPECT_TRUE(refused["choice"].is_null());
  for (const auto& c : refused["candidates"]) {
    EXPECT_FALSE(c["eligible"].get<bool>());
    EXPECT_NE(c["reason"].get<std::string>().find("needs 1.0 PiB"), std::string::npos) << c;
  }

  const Result text = run(cache.environment(), "select --kind cpu --dtype f32");
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("choice: "), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("chosen"), std::string::npos) << text.output;

  const Result bad_size = run(cache.environment(), "select --min-memory lots");
  EXPECT_EQ(bad_size.status, 1);
  EXPECT_NE(bad_size.output.find("--min-memory: 'lots' is not a size"), std::string::npos)
      << bad_size.output;
  const Result bad_kind = run(cache.environment(), "select --kind tpu");
  EXPECT_EQ(bad_kind.status, 1);
  EXPECT_NE(bad_kind.output.find("no device kind 'tpu'"), std::string::npos) << bad_kind.output;
}

// A quick calibration measures f32 only: a throughput requirement for an f16 matmul calibrates
// in full, over a quick entry too, and is then judged by the f16 figure.
TEST(Cli, SelectCalibratesInFullForAThroughputInAnotherDtype) {
  CacheDir cache;
  const std::string only_cpu = cache.environment() + " HAL_DEVICES=cpu:0";
  ASSERT_EQ(run(only_cpu, "calibrate --device cpu:0 --quick").status, 0);
  const Result result = run(only_cpu, "select --dtype f16 --matmul 64 --min-tflops 1e-6 --json");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_EQ(parse_json(result)["choice"], "cpu:0") << result.output;
  const Result cached = run(only_cpu, "calibrate --device cpu:0 --json");
  ASSERT_EQ(cached.status, 0) << cached.output;
  const auto figures = parse_json(cached)["devices"][0];
  EXPECT_TRUE(figures["from_cache"].get<bool>()) << figures;
  bool f16 = false;
  for (const auto& m : figures["matmul"]) f16 = f16 || m["dtype"] == "f16";
  EXPECT_TRUE(f16) << "the f16 figure was measured: " << figures;
}

TEST(Cli, DemoRunsTheReferenceWorkloadsOnEveryDeviceAndAgreesWithCpu) {
  CacheDir cache;
  const Result result = run(cache.environment(), "demo --quick --json");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto json = parse_json(result);
  EXPECT_EQ(json["schema"], "hal.demo/1");
  const size_t devices = json["summary"]["device_count"].get<size_t>();
  EXPECT_TRUE(json["choice"]["device"].is_string());
  EXPECT_EQ(json["choice"]["candidates"].size(), devices);
  ASSERT_EQ(json["runs"].size(), 3 * devices) << "mlp, matmul and the transformer on every device";
  std::set<std::string> workloads;
  for (const auto& r : json["runs"]) {
    workloads.insert(r["workload"].get<std::string>());
    if (r.contains("error")) continue;  // a device without the ops says why
    EXPECT_TRUE(r["ok"].get<bool>()) << r;
    EXPECT_GT(r["time_s"].get<double>(), 0.0) << r;
    EXPECT_GT(r["gflops"].get<double>(), 0.0) << r;
    EXPECT_LE(r["max_abs_diff"].get<double>(), 1e-2) << r;
    EXPECT_TRUE(r["predicted_s"].is_number()) << "every device was calibrated: " << r;
    if (r["device"] == "cpu:0") {
      EXPECT_EQ(r["speedup_vs_cpu"], 1.0);
    }
  }
  bool transformer_on_cpu = false;
  for (const auto& r : json["runs"])
    if (r["workload"] == "transformer" && r["device"] == "cpu:0")
      transformer_on_cpu = r["status"] == "ok";
  EXPECT_TRUE(transformer_on_cpu) << "the ONNX transformer agrees with PyTorch's output on cpu:0";
  EXPECT_EQ(workloads, (std::set<std::string>{"mlp", "matmul", "transformer"}));
  // What the demo built (on OpenCL devices, kernels compiled from source into a fresh cache).
  const auto& kernels = json["kernels"];
  bool opencl = false;
  for (const auto& r : json["runs"])
    opencl = opencl || r["device"].get<std::string>().starts_with("opencl");
  if (opencl) {
    EXPECT_GT(kernels["compiled"].get<int>(), 0) << kernels;
  }
  EXPECT_GE(kernels["compile_seconds"].get<double>(), 0.0) << kernels;
  EXPECT_GE(kernels["disk_cache_seconds"].get<double>(), 0.0) << kernels;
}

TEST(Cli, BenchWritesOneDocumentForManySuites) {
  const std::string cli = HAL_CLI_PATH;
  const std::string suite = cli.substr(0, cli.rfind('/')) + "/hal_bench_select";
  if (access(suite.c_str(), X_OK) != 0)
    GTEST_SKIP() << suite << " is not built (this preset builds no benchmarks)";
  CacheDir cache;
  const std::string file = (cache.path() / "bench.json").string();
  const Result result = run(cache.environment(), "bench memory select --quick --output " + file +
                                                     " '--benchmark_filter=alloc_free/4096|_1024'");
  ASSERT_EQ(result.status, 0) << result.output;
  std::ifstream in(file);
  const auto json = nlohmann::json::parse(in);
  EXPECT_EQ(json["schema"], "hal.bench/1");
  EXPECT_FALSE(json["hal_version"].get<std::string>().empty());
  EXPECT_GE(json["machine"]["cores"].get<int>(), 1);
  EXPECT_FALSE(json["devices"].empty());
  ASSERT_EQ(json["suites"].size(), 2u);
  std::set<std::string> suites;
  for (const auto& run : json["suites"]) {
    EXPECT_EQ(run["status"], 0) << run;
    suites.insert(run["suite"].get<std::string>());
  }
  EXPECT_EQ(suites, (std::set<std::string>{"memory", "select"}));
  std::set<std::string> figures;
  for (const auto& figure : json["results"])
    figures.insert(figure["suite"].get<std::string>() + "/" + figure["name"].get<std::string>());
  EXPECT_TRUE(figures.count("memory/alloc_free_hit_4k")) << json["results"];
  EXPECT_TRUE(figures.count("select/select_1024")) << json["results"];
  EXPECT_TRUE(figures.count("select/select_1024_ms")) << json["results"];
}

// --device all runs a driver-comparing suite on every device it has a raw baseline for:
// dispatch on OpenCL, CUDA and Vulkan devices (Vulkan's was left out). --list says what would
// run without running it.
TEST(Cli, BenchDispatchOnAllDevicesMeasuresEveryBackendWithABaseline) {
  std::set<std::string> expected;
  for (const char* backend : {"opencl", "cuda", "vulkan"})
    for (const hal::Device& d : hal::test::backend_devices(backend))
      expected.insert("dispatch " + d.id());
  CacheDir cache;
  const Result result = run(cache.environment(), "bench dispatch copy --device all --list");
  ASSERT_EQ(result.status, 0) << result.output;
  std::set<std::string> dispatch;
  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("dispatch ", 0) == 0) dispatch.insert(line);
    if (line.rfind("copy ", 0) == 0) {  // copy compares with OpenCL's and CUDA's drivers only
      EXPECT_TRUE(line.find("opencl:") != std::string::npos ||
                  line.find("cuda:") != std::string::npos)
          << line;
    }
  }
  EXPECT_EQ(dispatch, expected) << result.output;
}

TEST(Cli, BenchPipelineReportsItsSpeedupOverTheStagesOneAfterAnother) {
  const std::string cli = HAL_CLI_PATH;
  const std::string suite = cli.substr(0, cli.rfind('/')) + "/hal_bench_pipeline";
  if (access(suite.c_str(), X_OK) != 0)
    GTEST_SKIP() << suite << " is not built (this preset builds no benchmarks)";
  // The suite sets its own fleet of paced sim devices, whatever HAL_SIM_CONFIG says.
  const Result result = run_stdout("HAL_SIM_CONFIG=devices=1", "bench pipeline --quick --json");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["suite"], "pipeline");
  std::map<std::string, nlohmann::json> figures;
  for (const auto& figure : json["results"]) figures[figure["name"].get<std::string>()] = figure;
  ASSERT_TRUE(figures.count("pipeline_speedup")) << json["results"];
  ASSERT_TRUE(figures.count("pipeline_4x16_ms")) << json["results"];
  const auto& speedup = figures["pipeline_speedup"];
  EXPECT_EQ(speedup["better"], "higher");
  EXPECT_GT(speedup["value"].get<double>(), 0.0);
  EXPECT_NEAR(speedup["baseline_value"].get<double>(), 64.0 / 19.0, 1e-9);  // the ideal
  const auto& time = figures["pipeline_4x16_ms"];
  EXPECT_NEAR(time["baseline_value"].get<double>() / time["value"].get<double>(),
              speedup["value"].get<double>(), 1e-9);
  // The local all-reduce beside the alpha-beta model of sim:4..7 (20 us launches, 0.5 GB/s):
  // 6 copies of n/4 bytes and 3 adds reading two and writing one chunk.
  for (const auto& [name, model_ms] : {std::pair{"local_allreduce_4dev_1m", 8.04432},
                                       std::pair{"local_allreduce_4dev_16m", 126.00912}}) {
    ASSERT_TRUE(figures.count(name)) << json["results"];
    const auto& figure = figures[name];
    EXPECT_EQ(figure["better"], "lower") << name;
    EXPECT_NEAR(figure["baseline_value"].get<double>(), model_ms, 1e-6) << name;
    EXPECT_NEAR(figure["ratio"].get<double>(),
                figure["value"].get<double>() / figure["baseline_value"].get<double>(), 1e-9)
        << name;
  }
}

// Why the sim plugin did not load under HAL_SIM_CONFIG=`config` ("" when it loaded).
std::string sim_refusal(const std::string& config) {
  const Result result = run("HAL_SIM_CONFIG='" + config + "'", "plugins --json");
  EXPECT_EQ(result.status, 0) << result.output;
  const auto listing = parse_json(result);
  for (const auto& plugin : listing["plugins"])
    if (plugin["path"].get<std::string>().find("libhal_plugin_sim.so") != std::string::npos)
      return plugin["loaded"].get<bool>() ? "" : plugin["reason"].get<std::string>();
  ADD_FAILURE() << "no sim plugin listed: " << result.output;
  return "";
}

TEST(Cli, SimConfigNumbersAreRangeCheckedNeverWrapped) {
  const std::map<std::string, std::string> refused{
      {"devices=4294967298", "HAL_SIM_CONFIG: devices: '4294967298' is out of range (0 to 65536)"},
      {"memory=inf", "HAL_SIM_CONFIG: memory: 'inf' is not a finite size"},
      {"memory=1e30", "HAL_SIM_CONFIG: memory: '1e30' is out of range (0 B to 64.0 TiB)"},
      {"devices=2,fault_device=4294967296",
       "HAL_SIM_CONFIG: fault_device: '4294967296' is out of range (0 to 65535)"},
      {"devices=2,fault_device=2", "HAL_SIM_CONFIG: fault_device=2 names no device (devices=2"},
      {"gflops=nan", "HAL_SIM_CONFIG: gflops: 'nan' is not a finite number"},
      {"fail_op_at=-1", "HAL_SIM_CONFIG: fail_op_at: '-1' is out of range"},
      {"mixed=2", "HAL_SIM_CONFIG: mixed: '2' is out of range (0 to 1)"},
      {"pace=2", "HAL_SIM_CONFIG: pace: '2' is out of range (0 to 1)"},
      {"devices=2,gflops=100:x", "HAL_SIM_CONFIG: gflops[1]: 'x' is not a number"},
      {"devices=2,bandwidth_gbps=1::2", "HAL_SIM_CONFIG: bandwidth_gbps[1]: '' "},
      {"devices=2,launch_us=1:-1", "HAL_SIM_CONFIG: launch_us[1]: '-1' is out of range"},
      {"devices=2,memory=1G:2G:3G", "HAL_SIM_CONFIG: memory gives 3 figures for 2 devices"},
      {"devices=4,pacing=1", "HAL_SIM_CONFIG: unknown key 'pacing'"},
      {"devices", "HAL_SIM_CONFIG: 'devices' is not key=value"},
  };
  for (const auto& [config, reason] : refused)
    EXPECT_NE(sim_refusal(config).find(reason), std::string::npos)
        << config << " gave: " << sim_refusal(config);

  EXPECT_EQ(sim_refusal("devices=2;memory=1.5GiB,fault_device=1,launch_us=0"), "");
  const Result listing = run("HAL_SIM_CONFIG='devices=2,memory=1.5GiB'", "devices --json");
  ASSERT_EQ(listing.status, 0) << listing.output;
  const auto json = parse_json(listing);
  size_t sims = 0;
  for (const auto& backend : json["backends"])
    for (const auto& device : backend["devices"])
      if (backend["name"] == "sim") {
        ++sims;
        EXPECT_EQ(device["memory_total"].get<uint64_t>(), uint64_t{3} << 29) << device;
      }
  EXPECT_EQ(sims, 2u) << listing.output;
}

TEST(Cli, SimFiguresPerDeviceCycleAndMixedScalesThem) {
  // gflops=100:200:400 gives sim:i entry i mod 3; mixed=1 then scales by ((5i % 16) + 1) / 16
  // (and bandwidth by ((3i % 8) + 1) / 8), as plugins/sim/sim.hpp says.
  const Result listing =
      run("HAL_SIM_CONFIG='devices=5,gflops=100:200:400,launch_us=4:8,bandwidth_gbps=80,pace=1'",
          "devices --json");
  const Result mixed = run(
      "HAL_SIM_CONFIG='devices=5,gflops=100:200:400,mixed=1,bandwidth_gbps=80'", "devices --json");
  ASSERT_EQ(listing.status, 0) << listing.output;
  ASSERT_EQ(mixed.status, 0) << mixed.output;
  auto peaks = [](const Result& result) {
    std::vector<nlohmann::json> out;
    const auto json = parse_json(result);
    for (const auto& backend : json["backends"])
      if (backend["name"] == "sim")
        for (const auto& device : backend["devices"]) out.push_back(device["peak"]);
    return out;
  };
  const std::vector<nlohmann::json> plain = peaks(listing), scaled = peaks(mixed);
  ASSERT_EQ(plain.size(), 5u) << listing.output;
  ASSERT_EQ(scaled.size(), 5u) << mixed.output;
  const double gflops[3] = {100, 200, 400}, launch[2] = {4, 8};
  for (unsigned i = 0; i < 5; ++i) {
    EXPECT_DOUBLE_EQ(plain[i]["f32_gflops"].get<double>(), gflops[i % 3]) << "sim:" << i;
    EXPECT_DOUBLE_EQ(plain[i]["launch_latency_us"].get<double>(), launch[i % 2]) << "sim:" << i;
    EXPECT_DOUBLE_EQ(plain[i]["bandwidth_gbps"].get<double>(), 80.0) << "sim:" << i;
    EXPECT_DOUBLE_EQ(scaled[i]["f32_gflops"].get<double>(), gflops[i % 3] * ((5 * i % 16) + 1) / 16)
        << "sim:" << i;
    EXPECT_DOUBLE_EQ(scaled[i]["bandwidth_gbps"].get<double>(), 80.0 * ((3 * i % 8) + 1) / 8)
        << "sim:" << i;
  }
}

TEST(Cli, SelectRefusesNumbersItCannotHonourNamingTheOption) {
  CacheDir cache;
  const std::map<std::string, std::string> refused{
      {"--matmul 99999999999999999999",
       "--matmul: '99999999999999999999' is out of range (1 to 1048576)"},
      {"--matmul 0", "--matmul: '0' is out of range (1 to 1048576)"},
      {"--matmul 1.5", "--matmul: '1.5' is not a whole number"},
      {"--min-tflops nan", "--min-tflops: 'nan' is not a finite number"},
      {"--min-tflops -1", "--min-tflops: '-1' is out of range"},
      {"--min-memory 18446744073709551616", "--min-memory: '18446744073709551616' is out of range"},
      {"--feature ''", "--feature: an empty name"},
      {"--vendor ''", "--vendor: an empty name"},
      {"--vendor amd,,intel", "--vendor: an empty name"},
  };
  for (const auto& [arguments, message] : refused) {
    const Result result = run(cache.environment(), "select " + arguments);
    EXPECT_EQ(result.status, 1) << arguments << ": " << result.output;
    EXPECT_NE(result.output.find("hal: error: " + message), std::string::npos)
        << arguments << ": " << result.output;
    EXPECT_NE(result.output.find("[InvalidArgument]"), std::string::npos) << result.output;
  }

  // 10^19 bytes is a size (under 2^64): no device has it, and the reasons say how much it is.
  const Result huge = run(cache.environment(), "select --min-memory 10000000000000000000 --json");
  EXPECT_EQ(huge.status, 1) << huge.output;
  const auto refusals = parse_json(huge);
  for (const auto& c : refusals["candidates"])
    EXPECT_NE(c["reason"].get<std::string>().find("needs 8.7 EiB"), std::string::npos) << c;

  // The largest matmul allowed (12 TiB of operands: nothing fits) still prints its predicted
  // times with a unit.
  const Result largest = run(cache.environment(), "select --matmul 1048576");
  EXPECT_EQ(largest.status, 1) << largest.output;
  EXPECT_NE(largest.output.find("matmul 1048576x1048576x1048576"), std::string::npos)
      << largest.output;
  EXPECT_EQ(largest.output.find("0000000000"), std::string::npos) << largest.output;
  EXPECT_NE(largest.output.find("e+"), std::string::npos) << largest.output;
}

TEST(Cli, UnderJsonEveryCommandReportsAnErrorAsJsonOnStdout) {
  struct Case {
    std::string environment, arguments;
    int status;
    std::string code, message;
  };
  const std::string bad_selector = "HAL_DEVICES='cuda:zz'";
  const std::filesystem::path empty_dir =
      std::filesystem::temp_directory_path() / ("hal_cli_empty_" + std::to_string(getpid()));
  std::filesystem::create_directories(empty_dir);
  const std::string empty = empty_dir.string();
  const std::vector<Case> cases{
      {"", "memory --device cpu:9 --json", 1, "NotFound", "no device 'cpu:9'"},
      {"", "calibrate --device cpu:7 --json", 1, "NotFound", "no device 'cpu:7'"},
      {"", "select --matmul 0 --json", 1, "InvalidArgument", "--matmul: '0' is out of range"},
      {"", "bench nope --json", 1, "InvalidArgument", "no benchmark suite 'nope'"},
      {"", "cts --json", 2, "UsageError", "--device"},
      {"", "devices --json --bogus", 2, "UsageError", "--bogus"},
      {"", "version --json --bogus", 2, "UsageError", "--bogus"},
      {"", "plugins --json --bogus", 2, "UsageError", "--bogus"},
      {bad_selector, "devices --json", 1, "InvalidArgument", "'cuda:zz'"},
      {bad_selector, "summary --json", 1, "InvalidArgument", "'cuda:zz'"},
      {bad_selector, "demo --quick --json", 1, "InvalidArgument", "'cuda:zz'"},
      {bad_selector, "select --json", 1, "InvalidArgument", "'cuda:zz'"},
      {bad_selector, "memory --json", 1, "InvalidArgument", "'cuda:zz'"},
      {bad_selector, "cts --device cpu:0 --json", 1, "InvalidArgument", "'cuda:zz'"},
      // A byte that is not UTF-8 in the message: U+FFFD in the JSON (the dump threw, and the
      // error report's own throw ended the process).
      {"", "select --kind \"$(printf 'x\\377')\" --json", 1, "InvalidArgument", "x\xef\xbf\xbd"},
      // A misspelt suite, or data with no suite, is no pass of 0 cases.
      {"", "onnx-tests --device cpu:0 --data " + empty + " --suite nodes --json", 1,
       "InvalidArgument", "--suite nodes: no such suite"},
      {"", "onnx-tests --device cpu:0 --data " + empty + " --json", 1, "InvalidArgument",
       "no ONNX test suite in"},
      {"", "cts --device cpu:0 --filter zzzz --json", 1, "InvalidArgument",
       "--filter 'zzzz' matches no case"},
  };
  for (const Case& c : cases) {
    const Result result = run_stdout(c.environment, c.arguments);
    EXPECT_EQ(result.status, c.status) << c.arguments << ": " << result.output;
    const auto error = nlohmann::json::parse(result.output, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(error.is_object()) << c.arguments << " printed: '" << result.output << "'";
    EXPECT_EQ(error["schema"], "hal.error/1") << c.arguments;
    EXPECT_EQ(error["code"], c.code) << c.arguments;
    EXPECT_NE(error["message"].get<std::string>().find(c.message), std::string::npos)
        << c.arguments << ": " << error;
  }
  std::filesystem::remove_all(empty_dir);
  // Without --json the error stays a line on stderr, and stdout is empty.
  const Result text = run_stdout("", "memory --device cpu:9");
  EXPECT_EQ(text.status, 1);
  EXPECT_EQ(text.output, "");
}

TEST(Cli, VersionFlagPrintsJsonUnderJson) {
  const Result flag = run_stdout("", "--version --json");
  ASSERT_EQ(flag.status, 0) << flag.output;
  const auto version = nlohmann::json::parse(flag.output);
  EXPECT_EQ(version["schema"], "hal.version/1");
  const auto command = nlohmann::json::parse(run_stdout("", "version --json").output);
  EXPECT_EQ(version, command);
}

// Whether `hal_bench_<suite>` was built next to hal (presets without benchmarks build none).
bool suite_built(const std::string& suite) {
  const std::string cli = HAL_CLI_PATH;
  return access((cli.substr(0, cli.rfind('/')) + "/hal_bench_" + suite).c_str(), X_OK) == 0;
}

TEST(Cli, BenchReportsAFailingBenchmarkAndGoesOn) {
  if (!suite_built("ops")) GTEST_SKIP() << "hal_bench_ops is not built";
  // The warm-up runs ops 1 and 2 on sim:0; op 3 is the first benchmark's (hal_add_f32_16m).
  const Result result =
      run_stdout("HAL_SIM_CONFIG=devices=1,fail_op_at=3",
                 "bench ops --device sim:0 --json "
                 "'--benchmark_filter=add_f32_16m|tiny' --benchmark_min_time=0.01");
  EXPECT_EQ(result.status, 1) << result.output;
  const auto json = nlohmann::json::parse(result.output);
  ASSERT_EQ(json["suites"].size(), 1u) << json;
  const auto& errors = json["suites"][0]["errors"];
  ASSERT_EQ(errors.size(), 1u) << json["suites"];
  EXPECT_EQ(errors[0]["benchmark"], "hal_add_f32_16m");
  EXPECT_NE(errors[0]["message"].get<std::string>().find("op 3 failed (injected fault)"),
            std::string::npos)
      << errors;
  std::set<std::string> figures;
  for (const auto& figure : json["results"]) figures.insert(figure["name"].get<std::string>());
  EXPECT_EQ(figures,
            (std::set<std::string>{"add_f32_tiny", "add_f32_tiny_traced", "fill_tiny_traced"}))
      << "the suite went on";
}

TEST(Cli, BenchHostSuitesTakeTheHostAsTheirDevice) {
  for (const std::string suite : {"memory", "stream", "thread_pool", "select"}) {
    if (!suite_built(suite)) continue;
    const Result result =
        run("", "bench " + suite + " --device cpu:0 --benchmark_filter=no_such_benchmark");
    EXPECT_EQ(result.status, 0) << suite << ": " << result.output;
  }
  if (!suite_built("memory")) GTEST_SKIP() << "hal_bench_memory is not built";
  const Result elsewhere = run("", "bench memory --device opencl:0");
  EXPECT_EQ(elsewhere.status, 2) << elsewhere.output;
  EXPECT_NE(elsewhere.output.find("runs on cpu:0; --device opencl:0 does not apply"),
            std::string::npos)
      << elsewhere.output;
}

TEST(Cli, DemoReportsEveryRunAndFailsNamingTheDeviceThatFailed) {
  // Both devices calibrated beforehand, so that each fault lands in the demo's own work.
  CacheDir cache;
  const std::string devices = cache.environment() + " HAL_DEVICES='sim:*;cpu:*' ";
  ASSERT_EQ(run(devices + "HAL_SIM_CONFIG=devices=1", "calibrate --quick").status, 0);
  // Lost during discovery (call 3), lost mid-demo (call 40), one op failing (the first).
  for (const std::string config :
       {"devices=1,lose_device_at=3", "devices=1,lose_device_at=40", "devices=1,fail_op_at=1"}) {
    const Result result = run_stdout(devices + "HAL_SIM_CONFIG=" + config, "demo --quick --json");
    EXPECT_EQ(result.status, 1) << config << ": " << result.output;
    const auto json = nlohmann::json::parse(result.output, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(json.is_object()) << config << " printed: " << result.output;
    EXPECT_FALSE(json["ok"].get<bool>()) << config;
    ASSERT_EQ(json["runs"].size(), 6u)
        << config << ": mlp, matmul and the transformer on cpu:0 and sim:0";
    for (const auto& r : json["runs"]) {
      if (r["device"] == "cpu:0") {
        EXPECT_EQ(r["status"], "ok") << config << ": " << r;
      }
    }
    ASSERT_FALSE(json["failures"].empty()) << config;
    for (const auto& failure : json["failures"])
      EXPECT_EQ(failure["device"], "sim:0") << config << ": " << failure;
  }
  const Result text = run(devices + "HAL_SIM_CONFIG=devices=1,lose_device_at=40", "demo --quick");
  EXPECT_EQ(text.status, 1) << text.output;
  EXPECT_NE(text.output.find("FAILED on sim:0:"), std::string::npos) << text.output;
  EXPECT_EQ(text.output.find("All results agree"), std::string::npos) << text.output;
}

// The transformer given an all-NaN input: its output is NaN where PyTorch's is not, which is no
// agreement (std::max skipped the NaN differences: "All results agree", exit 0).
TEST(Cli, DemoCallsANanResultAMismatch) {
  namespace fs = std::filesystem;
  const fs::path models = fs::path(__FILE__).parent_path().parent_path().parent_path() / "models";
  const fs::path dir = fs::temp_directory_path() / ("hal_cli_nan_" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const char* file : {"transformer_encoder.onnx", "transformer_encoder.expected.npy"})
    fs::copy_file(models / file, dir / file, fs::copy_options::overwrite_existing);
  // The input's data (after the .npy header: magic, version, its length, the header) as NaN.
  std::ifstream in(models / "transformer_encoder.input.npy", std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), {}};
  ASSERT_GT(bytes.size(), 10u);
  const size_t data =
      10 + static_cast<unsigned char>(bytes[8]) + 256 * static_cast<unsigned char>(bytes[9]);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t at = data; at + 4 <= bytes.size(); at += 4) std::memcpy(&bytes[at], &nan, 4);
  std::ofstream(dir / "transformer_encoder.input.npy", std::ios::binary) << bytes;
  CacheDir cache;
  const Result result =
      run(cache.environment() + " HAL_DEVICES=cpu:0 HAL_MODELS_DIR=" + dir.string(),
          "demo --quick 2>&1");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_EQ(result.output.find("All results agree"), std::string::npos) << result.output;
  fs::remove_all(dir);
}

// What calibration could not measure never makes a device look faster. A sim of 4 MiB cannot
// hold the quick plan's largest matmul (1024^2): the sizes before it are kept (before, the whole
// curve went, its throughput counted as free: 15 us predicted for a 256^3 matmul at 100
// GFLOP/s, which takes 335 us). A fault during calibration leaves nothing cached (before, the
// failed figure was cached as "lacks it", and the 10 GFLOP/s device won over the 1000 one).
TEST(Cli, ACalibrationThatCouldNotMeasureEverythingFlattersNoDevice) {
  CacheDir cache;
  const std::string small =
      cache.environment() + " HAL_DEVICES='sim:*' HAL_SIM_CONFIG=devices=1,memory=4M,gflops=100 ";
  ASSERT_EQ(run(small, "calibrate --quick 2>&1").status, 0);
  const Result chosen = run_stdout(small, "select --matmul 256 --json");
  ASSERT_EQ(chosen.status, 0) << chosen.output;
  const auto selection = nlohmann::json::parse(chosen.output);
  EXPECT_EQ(selection["choice"], "sim:0");
  EXPECT_GT(selection["candidates"][0]["predicted_s"].get<double>(), 2e-4) << selection;

  CacheDir second;
  const std::string two =
      second.environment() + " HAL_DEVICES='sim:*' HAL_SIM_CONFIG=devices=2,gflops=10:1000";
  ASSERT_EQ(run(two + ",fail_op_at=1,fault_device=0", "calibrate --quick 2>&1").status, 0);
  const Result summary = run_stdout(two, "summary --json");
  ASSERT_EQ(summary.status, 0) << summary.output;
  for (const auto& d : nlohmann::json::parse(summary.output)["devices"])
    EXPECT_EQ(d["calibrated"].get<bool>(), d["id"] == "sim:1") << d;
  const Result faster = run_stdout(two, "select --matmul 256 --json");
  EXPECT_EQ(nlohmann::json::parse(faster.output)["choice"], "sim:1") << faster.output;
}

// The host stays a helper where HAL_DEVICES names only other devices: `hal run --device auto`
// reads its inputs on cpu:0 (before: "device cpu:0 is hidden by the device selector").
TEST(Cli, HalDevicesHidingTheHostLeavesItToHelp) {
  const std::filesystem::path models =
      std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "models";
  CacheDir cache;
  const Result result =
      run_stdout(cache.environment() + " HAL_DEVICES='sim:*' HAL_SIM_CONFIG=devices=1",
                 "run " + (models / "transformer_encoder.onnx").string() + " --input tokens=" +
                     (models / "transformer_encoder.input.npy").string() + " --device auto --json");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_EQ(nlohmann::json::parse(result.output)["schema"], "hal.run/1");
}

TEST(Cli, FreeMemoryADeviceCannotTellIsUnknownNotZero) {
  const auto listing = nlohmann::json::parse(run_stdout("", "devices --json").output);
  std::vector<std::string> unknown;
  for (const auto& backend : listing["backends"])
    for (const auto& device : backend["devices"])
      if (device["memory_provenance"]["free"] == "unknown") {
        unknown.push_back(device["id"].get<std::string>());
        EXPECT_TRUE(device["memory_free"].is_null()) << device;
      } else {
        EXPECT_TRUE(device["memory_free"].is_number()) << device;
      }
  if (unknown.empty()) GTEST_SKIP() << "every device here can tell its free memory (PoCL cannot)";
  const Result text = run("", "summary");
  ASSERT_EQ(text.status, 0) << text.output;
  for (const std::string& id : unknown) {
    const size_t line = text.output.find("[" + id + "] ");
    ASSERT_NE(line, std::string::npos) << text.output;
    const std::string device_line = text.output.substr(line, text.output.find('\n', line) - line);
    EXPECT_NE(device_line.find("free unknown"), std::string::npos) << device_line;
    EXPECT_EQ(device_line.find("0 B free"), std::string::npos) << device_line;
  }
  EXPECT_NE(text.output.find("(free unknown on " + unknown.front()), std::string::npos)
      << text.output;
}

// Protocol-buffer fields as an ONNX model is written: a varint, and bytes after their length.
std::string varint(uint64_t n) {
  std::string out;
  for (; n >= 0x80; n >>= 7) out += static_cast<char>((n & 0x7f) | 0x80);
  return out + static_cast<char>(n);
}
std::string bytes_field(uint64_t number, const std::string& payload) {
  return varint(number << 3 | 2) + varint(payload.size()) + payload;
}
std::string varint_field(uint64_t number, uint64_t value) {
  return varint(number << 3) + varint(value);
}

// ONNX's TypeProto of a float tensor of shape [2], and of a sequence of float tensors.
std::string float_vector_type() {
  return bytes_field(1, varint_field(1, 1) + bytes_field(2, bytes_field(1, varint_field(1, 2))));
}
std::string float_sequence_type() {
  return bytes_field(4, bytes_field(1, bytes_field(1, varint_field(1, 1))));
}
std::string value_info(const std::string& name, const std::string& type) {
  return bytes_field(1, name) + bytes_field(2, type);
}
std::string onnx_node(const std::string& op, const std::string& input, const std::string& output) {
  return bytes_field(1, input) + bytes_field(2, output) + bytes_field(3, output) +
         bytes_field(4, op);
}
// A model (IR 8, opset 13) of input x, a float tensor of shape [2], with these nodes and outputs.
std::string onnx_model(const std::vector<std::string>& nodes,
                       const std::vector<std::string>& outputs) {
  std::string graph;
  for (const std::string& node : nodes) graph += bytes_field(1, node);
  graph += bytes_field(2, "g") + bytes_field(11, value_info("x", float_vector_type()));
  for (const std::string& output : outputs) graph += bytes_field(12, output);
  return varint_field(1, 8) + bytes_field(8, bytes_field(1, "") + varint_field(2, 13)) +
         bytes_field(7, graph);
}

// A little-endian f32 .npy file of shape [values.size()], its data aligned to 64 bytes.
void write_f32_npy(const std::filesystem::path& file, const std::vector<float>& values) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(values.size()) + ",), }";
  header.append((64 - (11 + header.size()) % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(file, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(static_cast<char>(header.size() & 0xff));
  out.put(static_cast<char>(header.size() >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
}

// y = Identity(x), written with its input to `dir`: `hal run` arguments that run it.
std::string identity_run(const std::filesystem::path& dir) {
  std::ofstream(dir / "identity.onnx", std::ios::binary)
      << onnx_model({onnx_node("Identity", "x", "y")}, {value_info("y", float_vector_type())});
  write_f32_npy(dir / "x.npy", {1.5f, -2});
  return "run " + (dir / "identity.onnx").string() + " --input x=" + (dir / "x.npy").string();
}

// Outputs y (a tensor) then s (a sequence, which hal run does not write): y is not written
// before s is refused, whether the model declares s a sequence (refused before the run) or, as
// a tensor, only the run shows it (refused after the run, before any file is written).
TEST(Cli, RunRefusesASequenceOutputBeforeWritingAnyOutput) {
  CacheDir dir;
  write_f32_npy(dir.path() / "x.npy", {1.5f, -2});
  for (const bool declared : {true, false}) {
    const std::string name = declared ? "declared" : "undeclared";
    std::ofstream(dir.path() / (name + ".onnx"), std::ios::binary)
        << onnx_model({onnx_node("Identity", "x", "y"), onnx_node("SequenceConstruct", "x", "s")},
                      {value_info("y", float_vector_type()),
                       value_info("s", declared ? float_sequence_type() : float_vector_type())});
    const std::filesystem::path out = dir.path() / (name + "_out");
    const Result result =
        run("", "run " + (dir.path() / (name + ".onnx")).string() +
                    " --input x=" + (dir.path() / "x.npy").string() + " --output " + out.string());
    EXPECT_EQ(result.status, 1) << name << ": " << result.output;
    EXPECT_NE(result.output.find("output 's' is a sequence; hal run writes tensors"),
              std::string::npos)
        << name << ": " << result.output;
    EXPECT_FALSE(std::filesystem::exists(out / "y.npy")) << name << ": y was written";
  }
}

// --output naming a file, not a directory: refused before the run naming the path (it was an
// Internal filesystem error after the run), and the file is left alone.
TEST(Cli, RunRefusesAnOutputThatIsAFileBeforeRunning) {
  CacheDir dir;
  const std::filesystem::path file = dir.path() / "taken";
  std::ofstream(file) << "a file";
  const Result result =
      run_stdout("", identity_run(dir.path()) + " --output " + file.string() + " --json");
  EXPECT_EQ(result.status, 1) << result.output;
  const auto error = nlohmann::json::parse(result.output);
  EXPECT_EQ(error["code"], "InvalidArgument") << error;
  EXPECT_EQ(error["message"], "--output " + file.string() + ": not a directory") << error;
  std::ifstream in(file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()),
            "a file");
}

// The median of an even number of runs is the mean of the middle two (it was the slower one):
// of two runs, halfway between the fastest and the slowest (p90's nearest rank).
TEST(Cli, RunMedianOfTwoRunsIsTheirMean) {
  CacheDir dir;
  const Result result = run_stdout("", identity_run(dir.path()) + " --repeat 2 --json");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto latency = nlohmann::json::parse(result.output)["latency_ms"];
  const double min = latency["min"].get<double>(), p90 = latency["p90"].get<double>();
  EXPECT_DOUBLE_EQ(latency["median"].get<double>(), (min + p90) / 2) << latency;
}

// An empty level in --concurrency is refused naming the option (CLI11's delimiter dropped it,
// and "1,,4" ran levels 1 and 4), before any request is sent.
TEST(Cli, LoadgenRefusesAnEmptyConcurrencyLevel) {
  for (const std::string levels : {"1,,4", "4,", ",4"}) {
    const Result result = run("",
                              "loadgen --model m --url http://127.0.0.1:1 --duration 0.1s "
                              "--concurrency " +
                                  levels);
    EXPECT_EQ(result.status, 1) << levels << ": " << result.output;
    EXPECT_NE(result.output.find("hal: error: --concurrency: an empty name in '" + levels + "'"),
              std::string::npos)
        << levels << ": " << result.output;
    EXPECT_NE(result.output.find("[InvalidArgument]"), std::string::npos) << result.output;
  }
}

// --list refuses what the suites would refuse once run (exit 2, as they exit): a device a suite
// does not take and a flag none takes, as a usage error; and lists under --json as JSON.
TEST(Cli, BenchListRefusesWhatTheRunWouldAndPrintsJsonUnderJson) {
  const std::vector<std::pair<std::string, std::string>> refused{
      {"bench stream --device opencl:7 --list",
       "hal bench stream: this suite measures hal on the host and runs on cpu:0; --device "
       "opencl:7 does not apply"},
      {"bench ops --device opencl:7 --list", "hal bench ops: no device 'opencl:7'"},
      {"bench copy --device cpu:0 --list", "hal bench copy: --device cpu:0 has no driver"},
      {"bench --list --quik", "hal bench stream: unrecognized flag --quik"},
      {"bench memory --list --benchmark_filter", "unrecognized flag --benchmark_filter"},
      {"bench memory --list --models=/nonexistent", "unrecognized flag --models=/nonexistent"},
  };
  for (const auto& [arguments, message] : refused) {
    const Result text = run("", arguments);
    EXPECT_EQ(text.status, 2) << arguments << ": " << text.output;
    EXPECT_NE(text.output.find(message), std::string::npos) << arguments << ": " << text.output;
    const Result json = run_stdout("", arguments + " --json");
    EXPECT_EQ(json.status, 2) << arguments << ": " << json.output;
    const auto error = nlohmann::json::parse(json.output, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(error.is_object()) << arguments << " printed: '" << json.output << "'";
    EXPECT_EQ(error["code"], "UsageError") << arguments;
    EXPECT_NE(error["message"].get<std::string>().find(message), std::string::npos)
        << arguments << ": " << error;
  }

  const Result listed = run_stdout("",
                                   "bench memory ops models --device cpu:0 --list --json "
                                   "--benchmark_filter=x --benchmark_list_tests");
  ASSERT_EQ(listed.status, 0) << listed.output;
  const auto list = nlohmann::json::parse(listed.output);
  EXPECT_EQ(list["schema"], "hal.bench.list/1");
  EXPECT_EQ(list["runs"], nlohmann::json::parse(R"([{"suite": "memory", "device": "cpu:0"},
                                                    {"suite": "ops", "device": "cpu:0"},
                                                    {"suite": "models", "device": "cpu:0"}])"));
  // A suite's own flag, and each suite's own device (null; "-" in text).
  const Result own = run_stdout("", "bench models --list --json --models=/nonexistent");
  ASSERT_EQ(own.status, 0) << own.output;
  EXPECT_EQ(nlohmann::json::parse(own.output)["runs"],
            nlohmann::json::parse(R"([{"suite": "models", "device": null}])"));
  EXPECT_EQ(run_stdout("", "bench models --list").output, "models -\n");
}

// --output is checked before any suite runs (a directory is no file to write), and the
// document replaces the file whole: a reader of the file as it was still reads all of it, and
// no temporary file is left beside it.
TEST(Cli, BenchWritesItsDocumentWholeOrNotAtAll) {
  CacheDir cache;
  const Result directory =
      run(cache.environment(), "bench memory --output " + cache.path().string());
  EXPECT_EQ(directory.status, 1) << directory.output;
  EXPECT_NE(
      directory.output.find("--output " + cache.path().string() + ": a directory, not a file"),
      std::string::npos)
      << directory.output;
  EXPECT_EQ(directory.output.find("FAILED"), std::string::npos) << directory.output;

  if (!suite_built("memory")) GTEST_SKIP() << "hal_bench_memory is not built";
  const std::filesystem::path out = cache.path() / "out";  // the document's alone
  std::filesystem::create_directories(out);
  const std::filesystem::path file = out / "bench.json";
  std::ofstream(file) << "the document before";
  std::ifstream before(file);  // open across the run
  const Result result = run(cache.environment(), "bench memory --quick --output " + file.string() +
                                                     " --benchmark_filter=alloc_free/4096");
  ASSERT_EQ(result.status, 0) << result.output;
  std::stringstream old_text;
  old_text << before.rdbuf();
  EXPECT_EQ(old_text.str(), "the document before") << "the file was rewritten in place";
  std::ifstream after(file);
  EXPECT_EQ(nlohmann::json::parse(after)["schema"], "hal.bench/1");
  for (const auto& entry : std::filesystem::directory_iterator(out))
    EXPECT_EQ(entry.path().filename().string(), "bench.json") << "left beside it";
}

}  // namespace
