// libFuzzer target: the hal command's command line. The input is an argument vector (split at
// NUL bytes and newlines) that goes through the real parse: CLI11 with every subcommand, and
// the commands' checks of their numbers and names (tools/hal/option_values.cpp, hal's number
// parser), with the commands' work left out. A parse either succeeds, or is refused as a usage
// error (CLI::ParseError) or with hal::Error(InvalidArgument); anything else ends the run.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "hal/error.hpp"

namespace {

constexpr size_t kMaxArguments = 64;

std::vector<std::string> split_arguments(const uint8_t* data, size_t size) {
  std::vector<std::string> arguments{"hal"};
  std::string current;
  for (size_t i = 0; i < size && arguments.size() < kMaxArguments; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\0' || c == '\n') {
      arguments.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty() && arguments.size() < kMaxArguments) arguments.push_back(current);
  return arguments;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> arguments = split_arguments(data, size);
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);

  hal::tool::leave_out_work();
  const std::unique_ptr<CLI::App> app = hal::tool::make_command_line();
  try {
    app->parse(static_cast<int>(arguments.size()), argv.data());
  } catch (const CLI::ParseError&) {
    // A usage error (or --help, --version): hal prints it and exits 2 (0).
  } catch (const hal::Error& error) {
    if (error.code() != hal::ErrorCode::InvalidArgument) {
      std::fprintf(stderr, "cli_args_fuzz: %s\n", error.what());
      std::abort();
    }
  }
  return 0;
}
