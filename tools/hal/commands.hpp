// The subcommands of the `hal` tool, one file each.
#pragma once

#include <CLI/CLI.hpp>

namespace hal::tool {

// Each adds its subcommand to `app`; the subcommand's callback does the work and may throw.
void add_devices_command(CLI::App& app);
void add_version_command(CLI::App& app);
void add_memory_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_plugins_command(CLI::App& app);
void add_cts_command(CLI::App& app);

}  // namespace hal::tool
