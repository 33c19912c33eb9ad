// The `hal` command: find, choose and drive compute devices.
#include "command_line.hpp"

int main(int argc, char** argv) {
  const std::unique_ptr<CLI::App> app = hal::tool::make_command_line();
  return hal::tool::run_command_line(*app, argc, argv);
}
