// The self-contained HTML report of one prediction.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

#include "epochcast/chart/svg_chart.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/core/metric.hpp"
#include "epochcast/service/answer.hpp"
#include "epochcast/service/render.hpp"
#include "render_common.hpp"

namespace epochcast {

namespace {

// Every page's style: one font and palette with the charts; table cells never wrap (a wide
// table scrolls sideways in its .scroll box instead).
constexpr const char* kStyle = R"(<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;padding:0 12px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:3px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:left;white-space:nowrap}
td.n,th.n{text-align:right}.muted{color:#777}#warnings li,.warnings li{color:#8a5300}
.scroll{overflow-x:auto;max-width:100%}svg.ec-chart{max-width:100%;height:auto}
.answer{font-size:15px;padding:10px 14px;background:#f3f7fd;border-left:4px solid #3b6fb6;margin:12px 0}
.no-prediction{padding:10px 14px;background:#fff8e6;border-left:4px solid #c08a00}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px -2px 12px}
</style>)";

std::string page_head(const std::string& title) {
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>{}</head><body>",
                     html_escape(title), kStyle);
}

// The answer line: the one the table and --json carry (answer_of).
std::string answer_html(const Answer& a, const std::string& id) {
  return fmt::format(R"(<p{} class="answer{}">{}</p>)", id.empty() ? "" : fmt::format(R"( id="{}")", id),
                     a.fastest ? "" : " no-prediction", html_escape(a.text));
}

std::string warnings_html(const std::vector<std::string>& warnings) {
  if (warnings.empty()) return R"(<ul id="warnings" class="muted"><li>none</li></ul>)";
  std::string h = R"(<ul id="warnings">)";
  for (const auto& w : warnings) h += fmt::format("<li>{}</li>", html_escape(w));
  return h + "</ul>";
}

std::string prediction_chart(const PredictReport& r, const std::string& id) {
  chart::BarChart c;
  c.frame = {id, "predicted epoch time per GPU", false};
  c.format = [](double s) { return format_duration(s); };
  c.axis_label = "epoch time";
  for (const auto& p : r.predictions) {
    chart::Bar b;
    b.key = p.gpu;
    b.label = p.gpu_name.empty() ? p.gpu : p.gpu_name;
    b.value = p.epoch_s;
    if (!p.measured) b.lo = p.interval_lo_s, b.hi = p.interval_hi_s;
    b.kind = p.measured ? chart::Bar::Kind::kMeasured
                        : p.in_training_data ? chart::Bar::Kind::kSeen : chart::Bar::Kind::kUnseen;
    if (p.measured) b.note = " (measured)";
    c.bars.push_back(std::move(b));
  }
  return chart::render(c);
}

std::string legend_html() {
  return fmt::format(
      R"(<p class="legend muted"><span style="background:{}"></span>measured on the source GPU<span style="background:{}"></span>predicted, GPU in training data<span style="background:{}"></span>predicted, GPU not in training data; whiskers: 90 % interval</p>)",
      chart::kBarMeasured, chart::kBarSeen, chart::kBarUnseen);
}

// The cost ranking; at most `rows` rows (0: all).
std::string cost_table(const PredictReport& r, const std::string& id, std::size_t rows) {
  std::string h = fmt::format(
      R"(<div class="scroll"><table{}><thead><tr><th class="n">rank</th><th>GPU</th><th>provider</th><th>instance</th><th>region</th><th class="n">$/GPU-hour</th><th class="n">epoch</th><th class="n">$/epoch</th>)",
      id.empty() ? " class=\"cost\"" : fmt::format(R"( id="{}")", id));
  h += fmt::format(R"(<th class="n">$ for {} epochs</th><th>price as of</th></tr></thead><tbody>)", r.epochs);
  std::size_t rank = 0;
  for (const auto& row : rank_by_cost(r)) {
    if (rows > 0 && rank == rows) break;
    const InstanceCost& c = *row.instance;
    h += fmt::format(
        R"(<tr data-gpu="{}"><td class="n">{}</td><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td>{}</td></tr>)",
        html_escape(row.prediction->gpu), ++rank, html_escape(row.prediction->gpu), html_escape(c.provider),
        html_escape(c.instance), c.gpu_count > 1 ? fmt::format(" (1/{})", c.gpu_count) : "", html_escape(c.region),
        format_usd(c.gpu_share_usd_h), html_escape(format_duration(row.prediction->epoch_s)),
        format_usd(c.usd_per_epoch), format_usd(c.usd_total), html_escape(c.as_of));
  }
  return h + "</tbody></table></div>";
}

std::string validation_html(const PredictReport& r) {
  std::string h;
  h += R"(<h2>Model validation</h2><section id="validation">)";
  const ModelValidation& v = r.validation;
  if (!v.available || v.protocols.empty()) {
    h += R"(<p class="muted">No validation figures are available for this model.</p>)";
  } else {
    h += R"(<table class="scores"><thead><tr><th>protocol</th><th class="n">pairs</th><th class="n">MAPE</th><th class="n">median APE</th><th class="n">p90 APE</th><th class="n">90 % interval coverage</th></tr></thead><tbody>)";
    for (const auto& p : v.protocols)
      h += fmt::format(
          R"(<tr><td>{}</td><td class="n">{}</td><td class="n">{:.1f} %</td><td class="n">{:.1f} %</td><td class="n">{:.1f} %</td><td class="n">{}</td></tr>)",
          html_escape(p.protocol), p.pairs, p.mape_pct, p.median_ape_pct, p.p90_ape_pct,
          p.interval_coverage_pct ? fmt::format("{:.1f} %", *p.interval_coverage_pct) : "-");
    h += "</tbody></table>";
    std::set<std::string> gpus;
    for (const auto& p : v.protocols)
      for (const auto& [gpu, mape] : p.per_target_gpu_mape_pct) gpus.insert(gpu);
    if (!gpus.empty()) {
      h += R"(<table class="per-gpu"><thead><tr><th>target GPU</th>)";
      for (const auto& p : v.protocols) h += fmt::format(R"(<th class="n">{} MAPE</th>)", html_escape(p.protocol));
      h += "</tr></thead><tbody>";
      for (const auto& gpu : gpus) {
        h += fmt::format("<tr><td>{}</td>", html_escape(gpu));
        for (const auto& p : v.protocols) {
          const auto it = p.per_target_gpu_mape_pct.find(gpu);
          h += it == p.per_target_gpu_mape_pct.end() ? std::string(R"(<td class="n">-</td>)")
                                                     : fmt::format(R"(<td class="n">{:.1f} %</td>)", it->second);
        }
        h += "</tr>";
      }
      h += "</tbody></table>";
    }
  }
  if (!v.note.empty()) h += fmt::format(R"(<p class="muted">{}</p>)", html_escape(v.note));
  if (!r.uncertainty.empty()) {
    h += R"(<p>Intervals were widened for:</p><ul id="uncertainty">)";
    for (const auto& u : r.uncertainty)
      h += fmt::format("<li>{} (×{:.2f})</li>", html_escape(u.reason), std::exp(u.log_half_width));
    h += "</ul>";
  }
  h += "</section>";
  return h;
}

}  // namespace

std::string render_html(const PredictReport& r, const Trace& trace) {
  std::string h;
  h.reserve(64 * 1024);
  const Answer answer = answer_of(r);
  h += page_head(fmt::format("epochcast: {}", r.source.trace));
  h += fmt::format("<h1>Epoch time of <code>{}</code> on every GPU type</h1>", html_escape(r.source.trace));
  h += answer_html(answer, "answer");
  h += fmt::format(R"(<p id="source">Recorded on <b>{}</b> ({}){}. Detected: {}. Model: {}.</p>)",
                   html_escape(r.source.gpu_name), html_escape(r.source.gpu),
                   r.source.gpu_name_in_trace.empty() ? " [given with --source-gpu]" : "",
                   html_escape(detection_line(r.source.detected)), html_escape(r.model));

  h += "<h2>Warnings</h2>";
  h += warnings_html(r.warnings);

  h += "<h2>Trace and detected epochs</h2>";
  h += R"(<div class="scroll">)";
  h += render_detection_svg(trace, r.source.detected, {"trace-chart", "trace channels with detected epochs", false});
  h += "</div>";

  h += "<h2>Predicted epoch time, fastest first</h2>";
  if (r.predictions.empty()) {
    // An empty chart would look like an answer: say why there is none.
    h += fmt::format(R"(<p id="no-prediction" class="no-prediction">No prediction: {}</p>)",
                     html_escape(answer.no_prediction));
  } else {
    h += legend_html();
    h += R"(<div class="scroll">)" + prediction_chart(r, "prediction-chart") + "</div>";
    h += fmt::format("<h2>Cost per epoch and for {} epochs (on demand)</h2>", r.epochs);
    h += cost_table(r, "cost-table", 0);
    std::vector<std::string> unpriced;
    for (const auto& p : r.predictions)
      if (p.instances.empty()) unpriced.push_back(p.gpu);
    if (!unpriced.empty())
      h += fmt::format(R"(<p class="muted">No attributable price for: {}.</p>)",
                       html_escape(fmt::format("{}", fmt::join(unpriced, ", "))));
  }

  h += validation_html(r);
  h += fmt::format(R"(<p class="muted">epochcast {}; trace format {}, {} samples over {}.</p>)", EPOCHCAST_VERSION,
                   html_escape(trace.format), trace.size(), html_escape(format_duration(trace.duration_s())));
  h += "</body></html>\n";
  return h;
}

namespace {

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(ErrorCode::kIo, fmt::format("cannot write HTML report '{}': {}", path, std::strerror(errno)));
  out << text;
  out.close();
  if (!out) throw Error(ErrorCode::kIo, fmt::format("cannot write HTML report '{}': {}", path, std::strerror(errno)));
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

void write_html_report(const std::string& path, const PredictReport& report, const Trace& trace) {
  write_text_file(path, render_html(report, trace));
}

std::string render_batch_html(const std::vector<BatchItem>& batch) {
  std::string h;
  h.reserve(64 * 1024 * std::max<std::size_t>(batch.size(), 1));
  h += page_head(fmt::format("epochcast: {} traces", batch.size()));
  h += fmt::format("<h1>Epoch time of {} traces on every GPU type</h1>", batch.size());
  // The answers first, one line per trace (prose, so it may wrap), then the figures as a table
  // of short cells; each trace links to its section.
  h += R"(<ul id="answers">)";
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const BatchItem& item = batch[i];
    h += fmt::format(R"(<li><a href="#trace-{}">{}</a>: {}</li>)", i + 1, html_escape(base_name(item.trace)),
                     html_escape(item.report ? answer_of(*item.report).text : "error: " + item.error));
  }
  h += "</ul>";
  h += R"(<div class="scroll"><table id="batch-summary"><thead><tr><th>trace</th><th>source</th><th class="n">epoch</th><th class="n">confidence</th><th>fastest</th><th>cheapest per epoch</th><th class="n">$/epoch</th><th class="n">warnings</th></tr></thead><tbody>)";
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const BatchItem& item = batch[i];
    const std::string name = html_escape(base_name(item.trace));
    if (!item.report) {
      h += fmt::format(R"(<tr class="error"><td><a href="#trace-{}">{}</a></td><td colspan="7">not read</td></tr>)", i + 1,
                       name);
      continue;
    }
    const PredictReport& r = *item.report;
    const Answer a = answer_of(r);
    h += fmt::format(
        R"(<tr><td><a href="#trace-{}">{}</a></td><td>{}</td><td class="n">{}</td><td class="n">{:.2f}</td><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td></tr>)",
        i + 1, name, html_escape(r.source.gpu),
        r.source.measured_epoch_s > 0 ? html_escape(format_duration(r.source.measured_epoch_s)) : "none",
        r.source.detected.confidence,
        a.fastest ? html_escape(fmt::format("{} {}", a.fastest->gpu, format_duration(a.fastest->epoch_s))) : "-",
        a.cheapest ? html_escape(fmt::format("{} on {}", a.cheapest_gpu->gpu, instance_label(*a.cheapest))) : "-",
        a.cheapest ? format_usd(a.cheapest->usd_per_epoch) : "-", r.warnings.size());
  }
  h += "</tbody></table></div>";
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const BatchItem& item = batch[i];
    h += fmt::format(R"(<section class="trace" id="trace-{}"><h2><code>{}</code></h2>)", i + 1,
                     html_escape(base_name(item.trace)));
    if (!item.report) {
      h += fmt::format(R"(<p class="no-prediction">Not read: {}</p></section>)", html_escape(item.error));
      continue;
    }
    const PredictReport& r = *item.report;
    const Answer answer = answer_of(r);
    h += answer_html(answer, "");  // with no prediction it says why: no empty chart follows
    if (!r.predictions.empty()) {
      h += fmt::format(R"(<p class="muted">Recorded on {} ({}). Detected: {}.</p>)", html_escape(r.source.gpu_name),
                       html_escape(r.source.gpu), html_escape(detection_line(r.source.detected)));
      h += R"(<div class="scroll">)" + prediction_chart(r, "") + "</div>";
      h += cost_table(r, "", kBatchCostRows);
    }
    if (!r.warnings.empty()) {
      h += R"(<details><summary>)" + fmt::format("{} warnings", r.warnings.size()) + R"(</summary><ul class="warnings">)";
      for (const auto& w : r.warnings) h += fmt::format("<li>{}</li>", html_escape(w));
      h += "</ul></details>";
    }
    h += "</section>";
  }
  if (!batch.empty() && batch.front().report) {
    h += fmt::format(R"(<p class="muted">Model: {}; {}. epochcast {}.</p>)", html_escape(batch.front().report->model),
                     html_escape(validation_line(batch.front().report->validation)), EPOCHCAST_VERSION);
  }
  h += "</body></html>\n";
  return h;
}

void write_batch_html_report(const std::string& path, const std::vector<BatchItem>& batch) {
  write_text_file(path, render_batch_html(batch));
}

}  // namespace epochcast
