// Rendering of service results: the readable table, --json objects, the HTML report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epochcast/epoch/plot.hpp"  // render_detection_svg: the `detect --plot` picture
#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/service/answer.hpp"
#include "epochcast/service/report.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

// The `detect --json` object of DESIGN.md.
[[nodiscard]] nlohmann::json to_json(const Segmentation& segmentation);
// The model's held-out figures, as under "validation" in the `predict --json` object.
[[nodiscard]] nlohmann::json to_json(const ModelValidation& validation);
// The one-line answer: {"text", "fastest_gpu", …, "caveat", "no_prediction"} (answer.hpp).
[[nodiscard]] nlohmann::json to_json(const Answer& answer);
// The `predict --json` object: {"source", "predictions", "warnings", ...}.
[[nodiscard]] nlohmann::json to_json(const PredictReport& report);
// Several traces: {"traces": [report | {"trace", "error"}], "summary": [...]}.
[[nodiscard]] nlohmann::json to_json(const std::vector<BatchItem>& batch);

// Ranked table by epoch time, then the cost ranking, then warnings.
[[nodiscard]] std::string render_table(const PredictReport& report);
// One line per trace: source GPU, measured epoch, fastest and cheapest GPU, warnings.
[[nodiscard]] std::string render_batch_table(const std::vector<BatchItem>& batch);

// One self-contained HTML page (inline CSS and SVG, no network): the trace's channels with the
// detected epochs marked, the ranked bar chart with intervals, the cost table, the model's
// validation figures and the warnings.
[[nodiscard]] std::string render_html(const PredictReport& report, const Trace& trace);
// Writes render_html to `path`; Error(kIo) when it cannot.
void write_html_report(const std::string& path, const PredictReport& report, const Trace& trace);

// Several traces in one page (`predict DIR --html`): a table of every trace's one-line answer,
// then per trace its answer, prediction chart and cheapest kBatchCostRows instances (no trace
// chart: the batch keeps no traces). A trace that failed shows its error.
[[nodiscard]] std::string render_batch_html(const std::vector<BatchItem>& batch);
void write_batch_html_report(const std::string& path, const std::vector<BatchItem>& batch);
// Instances shown per trace in the batch page: the cheapest few; the rest are in --json.
inline constexpr std::size_t kBatchCostRows = 5;

// Formats seconds for people: "4.23 s", "12 min 3 s", "2 h 05 min".
[[nodiscard]] std::string format_duration(double seconds);

}  // namespace epochcast
