#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <stdexcept>

extern char** environ;

namespace hal::test {
namespace {

// This process's environment with `overrides` replacing or adding entries.
std::vector<std::string> merged_environment(const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> entries;
  auto add = [&](const std::string& entry) { entries[entry.substr(0, entry.find('='))] = entry; };
  for (char** entry = environ; *entry; ++entry) add(*entry);
  for (const std::string& entry : overrides) add(entry);
  std::vector<std::string> merged;
  for (const auto& [name, entry] : entries) merged.push_back(entry);
  return merged;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (std::string& s : strings) result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

class Pipe {
 public:
  Pipe() {
    if (::pipe2(fds_, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  int read_end() const { return fds_[0]; }
  int write_end() const { return fds_[1]; }
  void close_read() { close_fd(fds_[0]); }
  void close_write() { close_fd(fds_[1]); }

 private:
  static void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  int fds_[2] = {-1, -1};
};

}  // namespace

ChildResult run_child(const std::string& path, const std::vector<std::string>& arguments,
                      const std::vector<std::string>& environment, std::chrono::seconds limit) {
  std::vector<std::string> argv_strings = arguments;
  std::vector<std::string> env_strings = merged_environment(environment);
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<char*> envp = pointers(env_strings);

  Pipe output;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, output.write_end(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, output.write_end(), STDERR_FILENO);
  // Its own process group, so that a time-out kills whatever it started as well.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = -1;
  const int failed =
      posix_spawn(&pid, path.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (failed) throw std::runtime_error("cannot run " + path + ": " + std::strerror(failed));
  output.close_write();

  ChildResult result;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char chunk[4096];
  // Reads until the child (and every process sharing the pipe) closes it, or the deadline.
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd fd{output.read_end(), POLLIN, 0};
    const int ready = ::poll(&fd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline check above ends it
    const ssize_t n = ::read(output.read_end(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.output.append(chunk, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

std::string describe(const ChildResult& result, std::chrono::seconds limit) {
  if (result.timed_out) return "timed out after " + std::to_string(limit.count()) + " s";
  if (result.signal)
    return "killed by signal " + std::to_string(result.signal) + " (" + ::strsignal(result.signal) +
           ")";
  return "exited with status " + std::to_string(result.exit_status);
}

}  // namespace hal::test
