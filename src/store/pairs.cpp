#include "epochcast/store/pairs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "epochcast/core/error.hpp"

namespace epochcast {

PairSet measured_pairs(const std::vector<RunRecord>& runs, const EpochPredictor& predict) {
  // Latest run per (job key, GPU) with a measured epoch time; runs are oldest first.
  std::map<std::string, std::map<std::string, const RunRecord*>> latest;
  for (const auto& r : runs)
    if (!r.job_key.empty() && r.epoch_s > 0) latest[r.job_key][r.gpu] = &r;
  PairSet out;
  const double limit = std::log(kReusedKeyFactor);
  for (const auto& [key, by_gpu] : latest) {
    for (auto a = by_gpu.begin(); a != by_gpu.end(); ++a) {
      for (auto b = std::next(a); b != by_gpu.end(); ++b) {
        const RunRecord& s = *a->second;
        const RunRecord& t = *b->second;
        const double pst = predict ? predict(s, t.gpu) : 0;
        const double pts = predict ? predict(t, s.gpu) : 0;
        if (pst > 0 && pts > 0) {
          const double est = std::log(t.epoch_s / pst), ets = std::log(s.epoch_s / pts);
          if (std::abs(est) > limit && std::abs(ets) > limit) {
            out.refused.push_back(
                {key, s.id, t.id,
                 fmt::format("job '{}': run {} on {} ({:.4g} s/epoch) and run {} on {} ({:.4g} s/epoch) are {:.2f}x "
                             "apart where each run's features predict {:.2f}x: more than {}x off both ways, a key "
                             "reused for another workload? pair not used",
                             key, s.id, s.gpu, s.epoch_s, t.id, t.gpu, t.epoch_s, t.epoch_s / s.epoch_s,
                             std::sqrt((pst / s.epoch_s) * (t.epoch_s / pts)), kReusedKeyFactor)});
            continue;
          }
        }
        out.pairs.push_back({key, s.id, t.id, s.gpu, t.gpu, s.epoch_s, t.epoch_s});
        out.pairs.push_back({key, t.id, s.id, t.gpu, s.gpu, t.epoch_s, s.epoch_s});
      }
    }
  }
  return out;
}

std::vector<std::int64_t> append_store_pairs(const std::vector<RunRecord>& runs, const PairSet& set, int weight,
                                             Dataset& dataset, std::vector<RunPair>& pairs, PairWeighting how) {
  if (weight < 1)
    throw Error(ErrorCode::kInvalidArgument, fmt::format("store pair weight {}: it must be at least 1", weight));
  std::map<std::int64_t, const RunRecord*> by_id;
  for (const auto& r : runs) by_id[r.id] = &r;
  std::map<std::int64_t, std::size_t> row_of;
  auto row = [&](std::int64_t id) {
    auto it = row_of.find(id);
    if (it != row_of.end()) return it->second;
    const RunRecord& r = *by_id.at(id);
    DatasetRow d;
    d.line = 0;
    d.gpu_id = r.gpu;
    d.model = "job:" + r.job_key;
    d.workload = d.model;
    d.epoch_s = r.epoch_s;
    d.features = r.features;
    dataset.rows.push_back(std::move(d));
    row_of[id] = dataset.rows.size() - 1;
    return dataset.rows.size() - 1;
  };
  for (const auto& p : set.pairs) {
    if (!by_id.count(p.source_run) || !by_id.count(p.target_run)) continue;
    if (how == PairWeighting::kRowWeight) {
      pairs.push_back({row(p.source_run), row(p.target_run), static_cast<double>(weight)});
    } else {
      const RunPair rp{row(p.source_run), row(p.target_run)};
      for (int i = 0; i < weight; ++i) pairs.push_back(rp);
    }
  }
  std::vector<std::int64_t> ids;
  for (const auto& [id, _] : row_of) ids.push_back(id);
  return ids;
}

std::set<GpuPairKey> held_gpu_pairs(const Dataset& dataset, const std::vector<RunPair>& pairs) {
  std::map<GpuPairKey, std::size_t> count;
  for (const RunPair& p : pairs) ++count[{dataset.rows.at(p.source).gpu_id, dataset.rows.at(p.target).gpu_id}];
  std::set<GpuPairKey> out;
  for (const auto& [k, n] : count)
    if (n >= kHeldGpuPairMinPairs) out.insert(k);
  return out;
}

HeldSplit split_held_pairs(const PairSet& set, const std::set<GpuPairKey>& held) {
  HeldSplit out;
  out.train.refused = set.refused;
  for (const MeasuredPair& p : set.pairs) {
    const GpuPairKey k{p.source_gpu, p.target_gpu};
    if (held.count(k))
      ++out.calibration_only[k];
    else
      out.train.pairs.push_back(p);
  }
  return out;
}

std::string compress_ids(const std::vector<std::int64_t>& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", ids[i]) : fmt::format("{}-{}", ids[i], ids[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace epochcast
