// The hal command's command line: its subcommands and options, and how what a parse or a
// command throws becomes the exit status. main() runs it; the fuzzer (fuzz/cli_args_fuzz.cpp)
// parses with the commands' work left out.
#pragma once

#include <memory>

#include <CLI/CLI.hpp>

namespace hal::tool {

// The app with every subcommand: each checks its options' values as it is parsed (a refused
// value is hal::Error(InvalidArgument)) and does its work in its final callback.
std::unique_ptr<CLI::App> make_command_line();

// From now on in this process, commands parse and check their options and do no work (their
// final callbacks return at once): the fuzzer's setting.
void leave_out_work();

// Parses `argv` and runs the chosen command. Returns the exit status: 0, 1 for a hal::Error
// or a failed command, 2 for a command line that does not parse; the error is reported on
// stderr, or as JSON on stdout under --json (error_report.hpp).
int run_command_line(CLI::App& app, int argc, char** argv);

}  // namespace hal::tool
