// One table of the fit's settings (FitOptions): each one's name, default, range, help and CLI
// flag. It feeds `fit`/`eval`'s flags (apps/cli), the model file's "options" object, the check
// of a FitRequest (service) and docs/parameters.md (`epochcast fit --help-parameters`, which the
// test ParametersDoc.CommittedDocIsWhatTheBuildPrints compares with the committed file).
// The defaults are FitOptions' member initialisers; nothing else spells them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "epochcast/model/stacked_model.hpp"

namespace epochcast {

struct FitParameter {
  using Field = std::variant<bool FitOptions::*, int FitOptions::*, double FitOptions::*, std::uint64_t FitOptions::*>;
  // How `fit`/`eval` set it: `--flag VALUE`, a flag that sets it true or false, or not at all
  // (the model file alone; a preset may set it).
  enum class Flag { kValue, kSetsTrue, kSetsFalse, kNone };

  std::string_view name;  // the FitOptions member and the model file's options key
  Field field;
  double min = 0, max = 0;  // inclusive range of a number; unused for a bool
  Flag flag_kind = Flag::kValue;
  std::string_view flag;  // "--seed"; "" for kNone
  std::string_view help;
  // false: the fitted model does not depend on it (threads), so figures measured with another
  // value still describe the model (service validation.cpp).
  bool changes_model = true;

  [[nodiscard]] bool is_bool() const { return std::holds_alternative<bool FitOptions::*>(field); }
  [[nodiscard]] std::string_view kind() const;  // "bool", "integer", "number"
  [[nodiscard]] std::string value_text(const FitOptions& o) const;
  [[nodiscard]] std::string default_text() const { return value_text(FitOptions{}); }
  [[nodiscard]] std::string range_text() const;  // "1 to 2000"; "true or false"
  // Sets the field from text ("50", "0.3", "true"); returns what is wrong with it ("" when set,
  // and then nothing else changed).
  [[nodiscard]] std::string set(FitOptions& o, std::string_view text) const;
};

// One flag that sets several parameters (applied before the parameters given one by one).
struct FitPreset {
  std::string_view flag, help;
  std::span<const std::pair<std::string_view, std::string_view>> sets;
};

[[nodiscard]] std::span<const FitParameter> fit_parameters();
[[nodiscard]] const FitParameter* find_fit_parameter(std::string_view name);
[[nodiscard]] std::span<const FitPreset> fit_presets();
// docs/parameters.md: the parameters, the presets and the learners.
[[nodiscard]] std::string fit_parameters_markdown();

}  // namespace epochcast
