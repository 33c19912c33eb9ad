// The subcommands of the `hal` tool, one file each.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace hal::tool {

// Thrown by a subcommand that finished but must exit with `status` (a failed check, no device
// fits); main returns it after the stack has unwound.
struct ExitStatus {
  int status;
};

// Sets `command`'s work, as its final callback: what the command does once its options are
// parsed and checked. `work` owns the options' storage, which the parse writes.
void set_work(CLI::App& command, std::function<void()> work);

// hal's version and compiled-in backends, as `hal version` and `hal --version --json` print it.
void print_version(bool json);

// Each adds its subcommand to `app`. Values the command cannot honour are refused as the
// command line is parsed (a parse-complete callback); the work, which may throw, is the
// subcommand's final callback (command_line.hpp).
void add_devices_command(CLI::App& app);
void add_version_command(CLI::App& app);
void add_memory_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_plugins_command(CLI::App& app);
void add_cts_command(CLI::App& app);
void add_summary_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_select_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_ops_command(CLI::App& app);
void add_onnx_tests_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_loadgen_command(CLI::App& app);
void add_tune_command(CLI::App& app);
void add_cache_command(CLI::App& app);

}  // namespace hal::tool
