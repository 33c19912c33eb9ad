// A stand-in for libnvToolsExt: the two NVTX calls hal makes, recorded as text ("push NAME",
// "pop") for tests/core/nvtx_test.cpp to read through fake_nvtx_log().
#include <mutex>
#include <string>

namespace {
std::mutex mutex;
std::string log;
int depth = 0;
}  // namespace

extern "C" {

int nvtxRangePushA(const char* message) {
  std::lock_guard lock(mutex);
  log += std::string("push ") + message + "\n";
  return depth++;
}

int nvtxRangePop() {
  std::lock_guard lock(mutex);
  log += "pop\n";
  return --depth;
}

// What was called so far; clears the record.
std::string* fake_nvtx_take_log() {
  std::lock_guard lock(mutex);
  auto* taken = new std::string(std::move(log));
  log.clear();
  return taken;
}

}  // extern "C"
