// `epochcast completion bash`: a bash completion script generated from the command tree, so it
// never lists a command or option the binary lacks.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace epochcast::cli {

// The script for `app` (commands, their options, and --format / --epochs-from values).
[[nodiscard]] std::string bash_completion_script(const CLI::App& app);
// Registers `completion SHELL` on `app`; it prints the script for `app` itself.
void add_completion_command(CLI::App& app);

}  // namespace epochcast::cli
