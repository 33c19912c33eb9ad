// The `hal` command: find, choose and drive compute devices.
#include <iostream>

#include "commands.hpp"
#include "hal/error.hpp"
#include "hal/version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"hal: find, choose and drive every compute device of this machine", "hal"};
  app.set_version_flag("--version", "hal " + std::string(hal::version()));
  app.require_subcommand(0, 1);
  hal::tool::add_devices_command(app);
  hal::tool::add_version_command(app);
  hal::tool::add_memory_command(app);
  hal::tool::add_bench_command(app);
  hal::tool::add_plugins_command(app);
  hal::tool::add_cts_command(app);
  hal::tool::add_summary_command(app);
  hal::tool::add_calibrate_command(app);
  hal::tool::add_select_command(app);
  hal::tool::add_demo_command(app);
  hal::tool::add_ops_command(app);
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      std::cerr << app.help();
      return 2;
    }
  } catch (const hal::tool::ExitStatus& exit) {
    return exit.status;
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;  // --help and --version are not errors
  } catch (const hal::Error& error) {
    std::cerr << "hal: error: " << error.message() << " [" << hal::to_string(error.code()) << "]\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "hal: error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
