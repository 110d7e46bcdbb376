// What `predict` answers: the source run, a ranked prediction per GPU type, costs, warnings.
// Plain values: the CLI renders them as a table or JSON, the HTML writer as a page.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "epochcast/epoch/segmentation.hpp"

namespace epochcast {

struct InstanceCost {
  std::string provider;
  std::string instance;
  std::string region;
  int gpu_count = 1;
  double gpu_share_usd_h = 0;          // on-demand price of one GPU's share of the instance
  double usd_per_epoch = 0;            // on demand
  double usd_total = 0;                // on demand, for PredictReport::epochs epochs
  std::optional<double> spot_usd_per_epoch;
  std::string as_of;                   // date of the price
};

struct GpuPrediction {
  std::string gpu;                     // catalog id
  std::string gpu_name;                // display name, "NVIDIA A10G"
  double epoch_s = 0;                  // measured (source) or predicted
  double interval_lo_s = 0;            // nominal 90 % interval after widening
  double interval_hi_s = 0;
  bool measured = false;               // the source GPU's own, measured epoch time
  bool in_training_data = false;       // this GPU appears in the model's training data
  // The job store's calibration for (source GPU, this GPU), already in epoch_s and the
  // interval: log factor and the measured pairs behind it (0, 0: none).
  double store_calibration_log = 0;
  std::size_t store_calibration_pairs = 0;
  std::vector<InstanceCost> instances; // cheapest first
  [[nodiscard]] const InstanceCost* cheapest() const {
    return instances.empty() ? nullptr : &instances.front();
  }
};

struct SourceRun {
  std::string gpu;                     // catalog id of the GPU the trace was recorded on
  std::string gpu_name;                // display name from the catalog
  std::string gpu_name_in_trace;       // as the trace spelled it ("" when --source-gpu)
  std::string trace;                   // path as given
  Segmentation detected;
  double measured_epoch_s = 0;         // from the detected epochs, or as given
  std::string epoch_time_from;         // "detected", "given" (--epoch-s), "markers", "" when unknown
  // The job's own epoch ends from a tracker export (W&B, MLflow): median spacing, 0 when none.
  double marker_epoch_s = 0;
  std::size_t markers = 0;
  double window_start_s = 0;           // features window: first epoch start .. last epoch end
  double window_end_s = 0;
  bool in_training_data = false;       // the GPU is a source in the model's training data
};

// One evaluation protocol's held-out scores (epochcast eval --json).
struct ProtocolScores {
  std::string protocol;                // "lomo", "kfold", "logo"
  int pairs = 0;
  double mape_pct = 0;
  double median_ape_pct = 0;
  double p90_ape_pct = 0;
  std::optional<double> interval_coverage_pct;  // of the nominal 90 % interval
  std::map<std::string, double> per_target_gpu_mape_pct;
};

// The model's held-out accuracy, shown next to predictions so they can be judged.
struct ModelValidation {
  bool available = false;
  std::vector<ProtocolScores> protocols;  // lomo first when present
  std::string note;                    // where the figures come from
  [[nodiscard]] const ProtocolScores* find(const std::string& protocol) const {
    for (const auto& p : protocols)
      if (p.protocol == protocol) return &p;
    return nullptr;
  }
};

// Why an interval was widened: each reason adds a log-space half width in quadrature.
struct UncertaintyTerm {
  std::string reason;                  // "source GPU H200 is not a source in the training data"
  double log_half_width = 0;           // ln(hi/epoch) contributed at the nominal 90 % level
};

struct PredictReport {
  SourceRun source;
  std::vector<GpuPrediction> predictions;  // ranked fastest first
  std::vector<std::string> warnings;
  std::vector<UncertaintyTerm> uncertainty;  // terms applied to every predicted interval
  int epochs = 10;                     // N for usd_total
  ModelValidation validation;
  std::string model;                   // "default (bundled dataset)" or the model file
  std::string job_key;                 // PredictRequest::job_key
  std::int64_t store_run_id = 0;       // row id in the job store when recorded (0: not recorded)
  std::string precision = "auto";      // the job precision the predictions assume
  std::string precision_rule;          // what it means: kAutoPrecisionRule or the named path

  [[nodiscard]] const GpuPrediction* find(const std::string& gpu) const {
    for (const auto& p : predictions)
      if (p.gpu == gpu) return &p;
    return nullptr;
  }
};

// One line of a batch: a report, or the error that stopped that trace.
struct BatchItem {
  std::string trace;
  std::optional<PredictReport> report;
  std::string error;                   // empty when report is set
  std::string error_code;              // epochcast::to_string(ErrorCode)
};

// Ranks by epoch time (fastest first; ties by id), the order every renderer shows.
void rank_by_time(std::vector<GpuPrediction>& predictions);
// Cost rows of all GPUs, cheapest per epoch first: (prediction, instance) pairs.
struct CostRow {
  const GpuPrediction* prediction;
  const InstanceCost* instance;
};
[[nodiscard]] std::vector<CostRow> rank_by_cost(const PredictReport& report);

}  // namespace epochcast
