#include "fit_flags.hpp"

#include <iostream>

#include "commands.hpp"
#include "epochcast/service/service.hpp"

namespace epochcast::cli {

void add_fit_parameter_flags(CLI::App& cmd, FitFlags& flags) {
  for (const FitPreset& s : fit_presets()) cmd.add_flag(std::string(s.flag), flags.presets[std::string(s.flag)], std::string(s.help));
  for (const FitParameter& p : fit_parameters()) {
    const std::string name(p.name), flag(p.flag), help(p.help);
    switch (p.flag_kind) {
      case FitParameter::Flag::kValue: {
        CLI::Option* o = cmd.add_option(flag, flags.values[name], help + " (default " + p.default_text() + ")");
        // A negative count read as 2^64 - 1 would be fitted with; say it (the range is the service's).
        if (p.min >= 0) o->check(kNotNegative);
        flags.options[name] = o;
        break;
      }
      case FitParameter::Flag::kSetsTrue:
      case FitParameter::Flag::kSetsFalse: flags.options[name] = cmd.add_flag(flag, help); break;
      case FitParameter::Flag::kNone: break;
    }
  }
}

std::vector<std::pair<std::string, std::string>> fit_parameters_given(const FitFlags& flags) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const FitPreset& s : fit_presets())
    if (flags.presets.at(std::string(s.flag)))
      for (const auto& [name, value] : s.sets) out.emplace_back(name, value);
  for (const FitParameter& p : fit_parameters()) {
    const auto it = flags.options.find(std::string(p.name));
    if (it == flags.options.end() || it->second->count() == 0) continue;
    switch (p.flag_kind) {
      case FitParameter::Flag::kValue: out.emplace_back(p.name, flags.values.at(std::string(p.name))); break;
      case FitParameter::Flag::kSetsTrue: out.emplace_back(p.name, "true"); break;
      case FitParameter::Flag::kSetsFalse: out.emplace_back(p.name, "false"); break;
      case FitParameter::Flag::kNone: break;
    }
  }
  return out;
}

void add_help_parameters_flag(CLI::App& cmd) {
  cmd.add_flag_callback(
      "--help-parameters",
      [] {
        std::cout << fit_parameters_markdown();
        throw CLI::Success();
      },
      "print every fit parameter (name, flag, default, range, help) as docs/parameters.md and exit");
}

}  // namespace epochcast::cli
