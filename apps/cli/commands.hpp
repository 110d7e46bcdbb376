// Each subcommand lives in cmd_<verb>.cpp and registers itself on the app.
// The CLI stays thin: parse options, call the library, render a table or JSON.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

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

// JSON text for stdout. Strings from input (file names, GPU names, quoted cells) may hold bytes
// that are not UTF-8; nlohmann's dump() throws on them (type_error 316: `info --json` of such a
// trace ended as an internal error, and the JSON error object itself as std::terminate). They are
// written as U+FFFD instead.
inline std::string dump_json(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void add_info_command(CLI::App& app);
void add_detect_command(CLI::App& app);
void add_predict_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_collect_command(CLI::App& app);

}  // namespace epochcast::cli
