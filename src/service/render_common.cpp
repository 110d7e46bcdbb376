#include "render_common.hpp"

#include <fmt/format.h>

#include <cmath>

#include "epochcast/service/render.hpp"

namespace epochcast {

// JSON has no NaN/inf: such numbers become null.
nlohmann::json number_or_null(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

std::string format_usd(double usd) {
  if (!std::isfinite(usd)) return "-";
  if (usd < 0.01) return fmt::format("${:.5f}", usd);
  if (usd < 1) return fmt::format("${:.4f}", usd);
  if (usd < 1000) return fmt::format("${:.2f}", usd);
  return fmt::format("${:.0f}", usd);
}

std::string instance_label(const InstanceCost& c) {
  if (c.gpu_count == 1) return fmt::format("{} {}", c.provider, c.instance);
  return fmt::format("{} {} (1/{})", c.provider, c.instance, c.gpu_count);
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string detection_line(const Segmentation& s) {
  if (!s.found) return fmt::format("no epochs found: {}", s.reason.empty() ? "no reason given" : s.reason);
  return fmt::format("{} epochs, period {}, confidence {:.2f}{}", s.epochs.size(),
                     format_duration(s.period_s), s.confidence,
                     s.channels.empty() ? "" : fmt::format(" (channels: {})", fmt::join(s.channels, ", ")));
}

std::string validation_line(const ModelValidation& v) {
  if (!v.available || v.protocols.empty()) {
    if (v.note.empty()) return "no validation figures";
    std::string note = v.note;  // a sentence: after "Model: FILE; " it starts in lower case
    if (!note.empty() && note[0] >= 'A' && note[0] <= 'Z') note[0] = static_cast<char>(note[0] - 'A' + 'a');
    return note;
  }
  std::vector<std::string> parts;
  for (const auto& p : v.protocols) {
    std::string part = fmt::format("{} MAPE {:.1f} % (p90 {:.1f} %", p.protocol, p.mape_pct, p.p90_ape_pct);
    if (p.interval_coverage_pct) part += fmt::format(", 90 % interval covers {:.0f} %", *p.interval_coverage_pct);
    parts.push_back(part + ")");
  }
  return fmt::format("held-out {}", fmt::join(parts, "; "));
}

}  // namespace epochcast
