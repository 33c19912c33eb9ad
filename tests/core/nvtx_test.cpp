// NVTX ranges (core/nvtx.hpp) with a stand-in libnvToolsExt (fake_nvtx.cpp, named by
// HAL_NVTX_LIBRARY; HAL_NVTX=all so that cpu:0's streams count as a CUDA stream's would): while a
// trace records, each span on a stream's track is a range pushed and popped in order, nested as the
// spans are; while none records, nothing is pushed.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hal/hal.hpp"
#include "hal/ops.hpp"
#include "hal/trace.hpp"

namespace {

// Set before libhal first looks for libnvToolsExt (the first stream span of a trace).
const bool environment_set = [] {
  setenv("HAL_NVTX_LIBRARY", HAL_FAKE_NVTX, 1);
  setenv("HAL_NVTX", "all", 1);
  return true;
}();

std::string take_log() {
  void* fake = dlopen(HAL_FAKE_NVTX, RTLD_NOW | RTLD_NOLOAD);  // the copy libhal opened
  if (fake == nullptr) return "(not loaded)";
  auto take = reinterpret_cast<std::string* (*)()>(dlsym(fake, "fake_nvtx_take_log"));
  const std::unique_ptr<std::string> log(take());
  dlclose(fake);
  return *log;
}

TEST(Nvtx, SpansOnStreamsAreRangesWhileTracing) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("hal_nvtx_" + std::to_string(getpid()) + ".json");
  hal::Stream stream = hal::device("cpu:0").create_stream();
  const hal::Buffer buffer = hal::device("cpu:0").allocate(16);
  const hal::Tensor x = hal::full({4}, 1.0, hal::DType::f32, stream);
  stream.synchronize();
  hal::trace::start(file);
  stream.fill(buffer, 0.0f, 4);
  const hal::Tensor y = hal::add(x, x, stream);
  stream.synchronize();
  hal::trace::stop();
  const std::string log = take_log();

  // Pushes and pops balance, never below zero, and the fill and the add are among the names.
  int depth = 0, deepest = 0, pushes = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("push ", 0) == 0) {
      deepest = std::max(deepest, ++depth);
      ++pushes;
    } else {
      ASSERT_EQ(line, "pop");
      ASSERT_GT(depth--, 0) << log;
    }
  }
  EXPECT_EQ(depth, 0) << log;
  EXPECT_GE(deepest, 2) << log;  // the add's kernel launch inside the add
  EXPECT_NE(log.find("push fill\n"), std::string::npos) << log;
  EXPECT_NE(log.find("push add\n"), std::string::npos) << log;

  // As many ranges as spans on the stream's track (its device track's spans are the worker's,
  // no ranges of the calling thread).
  std::ifstream in(file);
  const nlohmann::json trace = nlohmann::json::parse(in);
  int64_t stream_track = -1;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" &&
        e["args"]["name"].get<std::string>().rfind("cpu:0 stream", 0) == 0 &&
        !e["args"]["name"].get<std::string>().ends_with("(device)"))
      stream_track = e["tid"];
  int spans = 0;
  for (const auto& e : trace["traceEvents"]) spans += e["ph"] == "X" && e["tid"] == stream_track;
  EXPECT_EQ(pushes, spans) << log;
  std::filesystem::remove(file);
}

TEST(Nvtx, NothingWhileNotTracing) {
  hal::Stream stream = hal::device("cpu:0").create_stream();
  const hal::Buffer buffer = hal::device("cpu:0").allocate(16);
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("hal_nvtx_off_" + std::to_string(getpid()));
  hal::trace::start(file);  // a traced fill and wait: the stand-in is loaded and has ranges
  stream.fill(buffer, 0.0f, 4);
  stream.synchronize();
  hal::trace::stop();
  std::filesystem::remove(file);
  ASSERT_EQ(take_log(), "push fill\npop\npush synchronize\npop\n");
  stream.fill(buffer, 0.0f, 4);  // not traced
  stream.synchronize();
  EXPECT_EQ(take_log(), "");
}

}  // namespace
