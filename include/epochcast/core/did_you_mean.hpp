// "did you mean": the known name closest to a mistyped one, for error messages.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace epochcast {

// Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`, case-insensitive.
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);
// The candidate nearest `word` if it is close enough to be the one meant: at most 1 edit for
// words up to 4 letters, 2 up to 8, else 3; a candidate that starts with `word` counts too.
[[nodiscard]] std::optional<std::string> closest_name(std::string_view word, std::span<const std::string> candidates);

}  // namespace epochcast
