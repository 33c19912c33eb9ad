// The `hal` command: find, choose and drive compute devices.
#include <iostream>

#include "commands.hpp"
#include "error_report.hpp"
#include "hal/error.hpp"
#include "hal/version.hpp"

int main(int argc, char** argv) {
  using hal::tool::report_error;
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
  const bool json = hal::tool::wants_json(argc, argv);
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      if (json)
        report_error(json, "UsageError", "no command given (hal --help lists them)");
      else
        std::cerr << app.help();
      return 2;
    }
  } catch (const hal::tool::ExitStatus& exit) {
    return exit.status;
  } catch (const CLI::CallForVersion& version) {
    if (!json) return app.exit(version);
    hal::tool::print_version(/*json=*/true);
    return 0;
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0 || !json)
      return app.exit(error) == 0 ? 0 : 2;  // --help is not an error
    report_error(json, "UsageError", error.what());
    return 2;
  } catch (const hal::Error& error) {
    report_error(json, hal::to_string(error.code()), error.message());
    return 1;
  } catch (const std::exception& error) {
    report_error(json, "Internal", error.what());
    return 1;
  }
  return 0;
}
