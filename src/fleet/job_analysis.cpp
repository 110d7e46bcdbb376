#include "job_analysis.hpp"

#include <fmt/format.h>

#include "epochcast/core/error.hpp"

namespace epochcast::fleet {

bool analysis_due(const JobState& job) {
  if (job.final_analysis_done) return false;
  const std::size_t rows = job.trace.size();
  if (rows < kMinRowsToAnalyse) return job.ended;  // an ended short job still gets its reason
  if (job.ended) return true;
  const std::size_t grown = rows > job.rows_at_analysis ? rows - job.rows_at_analysis : 0;
  return job.rows_at_analysis == 0 ||
         (grown >= kMinNewRows && static_cast<double>(grown) >= kReanalyseGrowth * static_cast<double>(job.rows_at_analysis));
}

void analyse(JobState& job, const Service& service, const AnalysisConfig& config) {
  JobView& v = job.view;
  job.rows_at_analysis = job.trace.size();
  if (job.ended) job.final_analysis_done = true;
  v.analysed = true;
  v.predictions.clear();
  v.found = false;
  v.epoch_s = 0;
  v.confidence = 0;
  std::string key_problem;
  if (config.key_template && !config.key_template->empty()) {
    JobKey key = render_job_key(*config.key_template, v.labels);
    v.job_key = std::move(key.key);
    key_problem = std::move(key.problem);
  }
  if (job.trace.size() < kMinRowsToAnalyse) {
    v.why = fmt::format("{} samples, fewer than the {} detection needs", job.trace.size(), kMinRowsToAnalyse);
  } else {
    try {
      if (!config.catalog_id) {
        DetectRequest request;
        request.min_confidence = config.min_confidence;
        const Segmentation seg = service.detect(job.trace, request);
        v.found = seg.found;
        v.epoch_s = seg.found ? seg.period_s : 0;
        v.confidence = seg.confidence;
        v.why = fmt::format("{}modelName '{}' is not in the GPU catalog: no predictions",
                            seg.found ? "" : seg.reason + "; ", config.model_name);
      } else {
        PredictRequest request;
        request.source_gpu = *config.catalog_id;
        request.gpus = config.targets;
        request.min_detection_confidence = config.min_confidence;
        // Once per job, at its end; a restarted watcher reading it again finds it recorded
        // (the trace is named after the job: job_split.cpp).
        using Record = PredictRequest::StoreRecord;
        request.store_record = config.record && job.ended ? Record::kOnce : Record::kNo;
        if (request.store_record != Record::kNo) request.job_key = v.job_key;
        const PredictReport report = service.predict(job.trace, request);
        if (request.store_record != Record::kNo) v.store_run_id = report.store_run_id;
        const Segmentation& seg = report.source.detected;
        v.found = seg.found;
        v.confidence = seg.confidence;
        v.epoch_s = seg.found ? report.source.measured_epoch_s : 0;
        v.why = seg.found ? (report.warnings.empty() ? std::string() : report.warnings.front()) : seg.reason;
        if (seg.found)
          for (const GpuPrediction& p : report.predictions) {
            JobPrediction& out = v.predictions.emplace_back();
            out.target_gpu = p.gpu;
            out.epoch_s = p.epoch_s;
            out.lo_s = p.interval_lo_s;
            out.hi_s = p.interval_hi_s;
            for (const InstanceCost& c : p.instances) out.usd_per_epoch.push_back({c.provider, c.instance, c.usd_per_epoch});
          }
      }
    } catch (const Error& e) {
      v.why = e.what();
    }
  }
  if (!key_problem.empty()) v.why = v.why.empty() ? key_problem : v.why + "; " + key_problem;
  // An ended job's rows are not needed again: its answer stays, its memory goes.
  if (job.ended) {
    job.trace.time_s = {};
    job.trace.channels = {};
  }
}

}  // namespace epochcast::fleet
