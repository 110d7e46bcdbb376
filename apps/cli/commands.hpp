// Each subcommand lives in cmd_<verb>.cpp and registers itself on the app.
// The CLI stays thin: parse options, call the library, render a table or JSON.
#pragma once

#include <CLI/CLI.hpp>

namespace epochcast::cli {

void add_info_command(CLI::App& app);
void add_detect_command(CLI::App& app);
void add_predict_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_collect_command(CLI::App& app);

}  // namespace epochcast::cli
