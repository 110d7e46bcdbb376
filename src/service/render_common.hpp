// Pieces every renderer of service results shares (table, JSON, HTML): number and price
// formats, escaping, the one-line descriptions of a detection and of the model's validation.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/service/report.hpp"

namespace epochcast {

// JSON has no NaN/inf: such numbers become null.
[[nodiscard]] nlohmann::json number_or_null(double v);
// "$0.00012", "$0.1234", "$12.34", "$1234"; "-" when not finite.
[[nodiscard]] std::string format_usd(double usd);
// "aws p4d.24xlarge (1/8)".
[[nodiscard]] std::string instance_label(const InstanceCost& c);
// &, <, >, " and ' as entities: text and attribute values of HTML and SVG.
[[nodiscard]] std::string html_escape(std::string_view s);
// "12 epochs, period 4.20 s, confidence 0.93 (channels: …)" or "no epochs found: why".
[[nodiscard]] std::string detection_line(const Segmentation& s);
// "held-out lomo MAPE 9.1 % (…)" or the note saying why there are no figures.
[[nodiscard]] std::string validation_line(const ModelValidation& v);

}  // namespace epochcast
