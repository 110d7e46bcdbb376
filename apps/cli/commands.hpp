// Each subcommand lives in cmd_<verb>.cpp and registers itself on the app.
// The CLI stays thin: parse options, call the library, render a table or JSON.
#pragma once

#include <CLI/CLI.hpp>

namespace epochcast::cli {

// For counts and indices: CLI11 converts "-1" to an unsigned option as 2^64 - 1, and its own
// NonNegativeNumber prints DBL_MAX in full.
inline const CLI::Validator kNotNegative(
    [](std::string& value) {
      const auto first = value.find_first_not_of(" \t");
      return first != std::string::npos && value[first] == '-' ? "must not be negative, got " + value
                                                               : std::string();
    },
    "NOT NEGATIVE");

void add_info_command(CLI::App& app);
void add_detect_command(CLI::App& app);
void add_predict_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_collect_command(CLI::App& app);

}  // namespace epochcast::cli
