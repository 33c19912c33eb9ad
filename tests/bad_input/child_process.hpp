// Runs a program as a child process with a time limit and collects what it printed, so that a
// test can tell a crash (a signal), a hang (the limit) and an exit status apart.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace hal::test {

struct ChildResult {
  bool timed_out = false;  // killed (SIGKILL) at the time limit
  int exit_status = -1;    // when it exited
  int signal = 0;          // when a signal ended it (SIGKILL too after a time-out)
  std::string output;      // stdout and stderr together, in order
};

// Runs `path` with `arguments` (argv[0] included) and `environment` (NAME=VALUE entries) added
// to this process's own, killing it after `limit`. Throws std::runtime_error when it cannot
// be started.
ChildResult run_child(const std::string& path, const std::vector<std::string>& arguments,
                      const std::vector<std::string>& environment, std::chrono::seconds limit);

// "exited with status 3", "killed by signal 11 (Segmentation fault)", "timed out after 60 s".
std::string describe(const ChildResult& result, std::chrono::seconds limit);

}  // namespace hal::test
