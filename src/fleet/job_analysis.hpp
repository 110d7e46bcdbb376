// A job's trace -> its detection and predictions, through the Service (the one door).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "epochcast/service/service.hpp"
#include "job_key.hpp"
#include "job_split.hpp"

namespace epochcast::fleet {

// Fewer rows than this: not analysed yet (three epochs of the detector's shortest period, 8
// samples, need 24; the busy-region search needs a few more).
inline constexpr std::size_t kMinRowsToAnalyse = 32;
// Re-analyse a running job when its rows grew by this share since the last analysis (as the
// live Detector does), and by at least kMinNewRows.
inline constexpr double kReanalyseGrowth = 0.05;
inline constexpr std::size_t kMinNewRows = 16;

struct AnalysisConfig {
  std::vector<std::string> targets;  // catalog ids; empty: all
  double min_confidence = 0.5;
  std::optional<std::string> catalog_id;  // the job's GPU; none: detection only
  std::string model_name;
  // The Service records runs in a job store: a job is recorded once, at its analysis after it
  // ended (a running job's answers are not its last), under its key when the template makes one.
  bool record = false;
  const JobKeyTemplate* key_template = nullptr;
};

// Whether the job has grown (or ended) enough to be analysed again.
[[nodiscard]] bool analysis_due(const JobState& job);
// Fills job.view from the Service's answer (and records an ended job, config.record); errors
// become `why`, never exceptions.
void analyse(JobState& job, const Service& service, const AnalysisConfig& config);

}  // namespace epochcast::fleet
