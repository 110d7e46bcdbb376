// Each subcommand lives in cmd_<verb>.cpp and registers itself on the app.
// The CLI stays thin: parse options, call the library, render a table or JSON.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

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

// Called first by the commands that fit a stack (fit, eval, and predict, which fits the default
// model on first use). A stack fit allocates and frees the same working sets (extra trees' nodes
// and row copies, kernel ridge's n×256 matrices, XGBoost's buffers) dozens of times on two
// threads; glibc gives the freed top of each heap back to the system and the next allocation
// faults it in again (~9 % of a fit's CPU, most of it in the kernel's page-fault path). Keeping
// 64 MiB of slack at the top of each heap keeps those pages. Only these short-lived commands:
// freed pages kept at the top stay resident, and the long-running ones gain nothing from them
// (`detect --follow` on a growing 27 MB trace: peak RSS 117-124 MB with the slack against
// 111-112 MB without, docs/HACKING.md review 7; `collect` unchanged).
// EPOCHCAST_MALLOC_DEFAULT=1 leaves glibc's default, for measuring.
inline void keep_heap_slack() {
#if defined(__GLIBC__)
  if (std::getenv("EPOCHCAST_MALLOC_DEFAULT") == nullptr) mallopt(M_TOP_PAD, 64 << 20);
#endif
}

// The flag that sets a request field (FieldError::field()): "--epoch-s" for source_epoch_s;
// by default "--" and the field with '-' for '_'.
[[nodiscard]] std::string flag_for_field(std::string_view field);

void add_info_command(CLI::App& app);
void add_detect_command(CLI::App& app);
void add_predict_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_eval_command(CLI::App& app);
// `eval --protocol public` (eval_public.cpp): the scaling prior, leave one GPU type out.
void run_public_eval(const std::string& catalog_path, bool json);
void add_collect_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_jobs_command(CLI::App& app);
void add_watch_command(CLI::App& app);

}  // namespace epochcast::cli
