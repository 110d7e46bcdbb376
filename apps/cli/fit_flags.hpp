// `fit` and `eval`'s flags for the fit's settings, made from the one table (fit_parameters()),
// and `fit --help-parameters`, which prints docs/parameters.md.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace epochcast::cli {

struct FitFlags {
  std::map<std::string, std::string> values;  // kValue flags, by parameter name
  std::map<std::string, CLI::Option*> options;
  std::map<std::string, bool> presets;        // by preset flag
};

void add_fit_parameter_flags(CLI::App& cmd, FitFlags& flags);
// What was given: presets' settings first, then each flag, in the table's order.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> fit_parameters_given(const FitFlags& flags);
// --help-parameters: prints docs/parameters.md and exits 0.
void add_help_parameters_flag(CLI::App& cmd);

}  // namespace epochcast::cli
