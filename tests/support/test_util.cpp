#include "test_util.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>

namespace hal::test {

namespace {

ShellResult read_pipe(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> chunk;
  while (size_t n = fread(chunk.data(), 1, chunk.size(), pipe)) output.append(chunk.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace

ShellResult run_shell(const std::string& command) { return read_pipe(command + " 2>&1"); }

ShellResult run_shell_stdout(const std::string& command) {
  return read_pipe("(" + command + ") 2>/dev/null");
}

const std::string& child_sanitizer_options() {
#if defined(__SANITIZE_ADDRESS__)
  static const std::string options = "ASAN_OPTIONS=$ASAN_OPTIONS:intercept_tls_get_addr=0 ";
#else
  static const std::string options;
#endif
  return options;
}

void expect_error(const std::function<void()>& fn, ErrorCode code,
                  const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected hal::Error " << to_string(code) << ", nothing was thrown";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), code) << "message: " << error.message();
    for (const std::string& part : parts)
      EXPECT_NE(error.message().find(part), std::string::npos)
          << "message lacks '" << part << "': " << error.message();
  }
}

ErrorCode work_until_a_failure(const Device& device) {
  for (int i = 0; i < 50; ++i) {
    try {
      Stream s = device.create_stream();
      Buffer b = device.allocate(1024);
      s.fill(b, uint8_t{1}, 1024);
      s.synchronize();
    } catch (const Error& error) {
      return error.code();
    }
  }
  return ErrorCode::Ok;
}

std::string test_name(const std::string& device_id) {
  std::string name = device_id;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

std::vector<unsigned char> pattern_bytes(size_t size, unsigned seed) {
  std::vector<unsigned char> bytes(size);
  uint32_t state = seed * 2654435761u + 1;
  for (auto& byte : bytes) {
    state = state * 1664525u + 1013904223u;
    byte = static_cast<unsigned char>(state >> 24);
  }
  return bytes;
}

std::vector<Device> backend_devices(std::string_view backend) {
  std::vector<Device> found;
  for (const Device& device : devices())
    if (device.info().backend() == backend) found.push_back(device);
  return found;
}

std::string backend_reason(std::string_view backend) {
  for (const BackendStatus& status : Registry::instance().backends())
    if (status.name == backend) return status.reason;
  return "no " + std::string(backend) + " backend";
}

}  // namespace hal::test
