#include "command_line.hpp"

#include <atomic>
#include <iostream>

#include "commands.hpp"
#include "error_report.hpp"
#include "hal/error.hpp"
#include "hal/trace.hpp"
#include "hal/version.hpp"

namespace hal::tool {

std::unique_ptr<CLI::App> make_command_line() {
  auto app = std::make_unique<CLI::App>(
      "hal: find, choose and drive every compute device of this machine", "hal");
  app->set_version_flag("--version", "hal " + std::string(hal::version()));
  app->require_subcommand(0, 1);
  add_devices_command(*app);
  add_version_command(*app);
  add_memory_command(*app);
  add_bench_command(*app);
  add_plugins_command(*app);
  add_cts_command(*app);
  add_summary_command(*app);
  add_calibrate_command(*app);
  add_select_command(*app);
  add_demo_command(*app);
  add_ops_command(*app);
  add_onnx_tests_command(*app);
  add_run_command(*app);
  add_train_command(*app);
  add_compare_command(*app);
  add_report_command(*app);
  add_eval_command(*app);
  add_serve_command(*app);
  add_loadgen_command(*app);
  add_tune_command(*app);
  add_cache_command(*app);
  return app;
}

namespace {
std::atomic<bool> work_left_out{false};
}  // namespace

void leave_out_work() { work_left_out = true; }

void set_work(CLI::App& command, std::function<void()> work) {
  // Every command takes --trace: its work recorded as a Chrome trace (hal/trace.hpp).
  auto trace_file = std::make_shared<std::string>();
  command.add_option("--trace", *trace_file,
                     "Write a timeline of the command's work to FILE (Chrome trace-event JSON, "
                     "for Perfetto); HAL_TRACE=FILE does the same");
  // Wrapped rather than dropped when work is left out: the callback owns the options' storage.
  command.final_callback([work = std::move(work), trace_file] {
    if (work_left_out) return;
    if (!trace_file->empty()) hal::trace::start(*trace_file);
    work();  // a command that throws has its trace written at exit
    if (!trace_file->empty()) hal::trace::stop();
  });
}

int run_command_line(CLI::App& app, int argc, char** argv) {
  const bool json = wants_json(argc, argv);
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      if (json)
        report_error(json, "UsageError", "no command given (hal --help lists them)");
      else
        std::cerr << app.help();
      return 2;
    }
  } catch (const ExitStatus& exit) {
    return exit.status;
  } catch (const CLI::CallForVersion& version) {
    if (!json) return app.exit(version);
    print_version(/*json=*/true);
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

}  // namespace hal::tool
