// The model file: versioned JSON written atomically, read back with every field checked.
#include "epochcast/model/stacked_model.hpp"

#include <fcntl.h>   // open: O_EXCL
#include <sys/stat.h>  // mkdir
#include <unistd.h>  // write, close

#include <Eigen/Dense>
#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "epochcast/core/error.hpp"
#include "epochcast/core/read_file.hpp"
#include "learners.hpp"
#include "pair_features.hpp"
#include "stacked_internal.hpp"

namespace epochcast {

using namespace stacked;

namespace {

constexpr const char* kFormatName = "epochcast-model";

nlohmann::json scaling_params_json(const ScalingParams& p) {
  return {{"compute_exp", p.compute_exp},     {"bandwidth_exp", p.bandwidth_exp}, {"power_exp", p.power_exp},
          {"memory_share", p.memory_share}, {"fixed_share", p.fixed_share}, {"legacy_tensor_eff", p.legacy_tensor_eff},
          {"power_min_w", p.power_min_w},   {"power_max_w", p.power_max_w},     {"interval_q_log", p.interval_q_log}};
}
ScalingParams scaling_params_from_json(const nlohmann::json& j) {
  // A format-7 file written before the legacy tensor share had none: its prior is the share 1.
  const double legacy = j.value("legacy_tensor_eff", 1.0);
  if (!(legacy > 0 && legacy <= 1))
    throw Error(ErrorCode::kParse, "scaling_prior legacy_tensor_eff must lie in (0, 1], got " + std::to_string(legacy));
  return {.compute_exp = j.at("compute_exp").get<double>(),
          .bandwidth_exp = j.at("bandwidth_exp").get<double>(),
          .power_exp = j.at("power_exp").get<double>(),
          .memory_share = j.at("memory_share").get<double>(),
          .fixed_share = j.at("fixed_share").get<double>(),
          .legacy_tensor_eff = legacy,
          .power_min_w = j.at("power_min_w").get<double>(),
          .power_max_w = j.at("power_max_w").get<double>(),
          .interval_q_log = j.at("interval_q_log").get<double>()};
}

// The scaling prior's reference GPU: the figures busy_level_log reads.
nlohmann::json reference_to_json(const GpuSpec& g) {
  return {{"id", g.id},
          {"fp32_tflops", g.fp32_tflops},
          {"tensor_fp16_tflops", g.tensor_fp16_tflops},
          {"tensor_tf32_tflops", g.tensor_tf32_tflops},
          {"tensor_bf16_tflops", g.tensor_bf16_tflops},
          {"memory_bandwidth_gbs", g.memory_bandwidth_gbs},
          {"max_sm_clock_mhz", g.max_sm_clock_mhz},
          {"tdp_w", g.tdp_w}};
}
GpuSpec reference_from_json(const nlohmann::json& j) {
  GpuSpec g;
  g.id = j.at("id").get<std::string>();
  g.fp32_tflops = j.at("fp32_tflops").get<double>();
  g.tensor_fp16_tflops = j.at("tensor_fp16_tflops").get<double>();
  g.tensor_tf32_tflops = j.at("tensor_tf32_tflops").get<double>();
  g.tensor_bf16_tflops = j.at("tensor_bf16_tflops").get<double>();
  g.memory_bandwidth_gbs = j.at("memory_bandwidth_gbs").get<double>();
  g.max_sm_clock_mhz = j.at("max_sm_clock_mhz").get<double>();
  g.tdp_w = j.at("tdp_w").get<double>();
  return g;
}

// NaN is not JSON: write null, read null back as NaN.
nlohmann::json doubles_to_json(const std::vector<double>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : v) a.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
  return a;
}
std::vector<double> doubles_from_json(const nlohmann::json& j) {
  std::vector<double> v;
  for (const auto& x : j.get_ref<const nlohmann::json::array_t&>())
    v.push_back(x.is_null() ? kNaN : x.get<double>());
  return v;
}

std::size_t line_of(std::string_view text, std::size_t byte, std::uint32_t& column) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  column = static_cast<std::uint32_t>(col);
  return line;
}

// The key path to a number no double holds ("interval.half_width_log", "meta_weights[2]") and
// its byte offset: a second pass over the text with a SAX handler, on that error path only
// (nlohmann reports out_of_range.406 without either).
class OverflowLocator : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::string path;       // filled at the error
  std::size_t byte = 0;   // offset just past the number
  bool found = false;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    value();
    frames_.push_back({false, {}, 0});
    return true;
  }
  bool key(string_t& k) override {
    frames_.back().key = k;
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    value();
    frames_.push_back({true, {}, 0});
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    if (e.id == 406) {
      found = true;
      byte = position;
      for (std::size_t i = 0; i < frames_.size(); ++i) {
        const Frame& f = frames_[i];
        // An array's element being read: the top frame's has not been counted yet.
        const std::size_t index = i + 1 == frames_.size() ? f.count : f.count - 1;
        path += f.array ? "[" + std::to_string(index) + "]" : (path.empty() ? "" : ".") + f.key;
      }
    }
    return false;
  }

 private:
  struct Frame {
    bool array;
    std::string key;
    std::size_t count;  // elements started (arrays)
  };
  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().count;
    return true;
  }
  std::vector<Frame> frames_;
};

}  // namespace

// ---- model file ----

std::string model_to_json(const StackedModel& m) {
  nlohmann::json learners = nlohmann::json::array();
  for (const auto& l : m.learners_) learners.push_back({{"name", l->name()}, {"state", l->to_json()}});
  nlohmann::json j = {
      {"format", kFormatName},
      {"version", kModelFormatVersion},
      {"schema_hash", m.schema_hash()},
      {"target", "log(target_epoch_s/source_epoch_s)"},
      {"pair_features", pair_feature_names(m.options_.include_memory_features)},
      {"options", options_to_json(m.options_)},
      {"learners", learners},
      {"meta_weights", m.meta_weights_},
      {"meta_weights_unseen_gpu", m.meta_weights_unseen_},
      {"prior", !m.options_.residual_over_prior ? "none"
                : m.options_.calibrated_prior   ? "scaling_prior"
                                                : "amdahl.memory_clock_split"},
      {"scaling_prior",
       {{"fitted_on", m.scaling_prior_.fitted_on},
        {"reference", reference_to_json(m.scaling_prior_.reference)},
        {"fp32_code", scaling_params_json(m.scaling_prior_.fp32_code)},
        {"mixed", scaling_params_json(m.scaling_prior_.mixed)}}},
      {"interval",
       {{"level", m.options_.interval_level},
        {"half_width_log", m.interval_q_log_},
        {"unseen_gpu_half_width_log", m.interval_unseen_q_log_}}},
      {"log_ratio_clamp", {m.log_ratio_lo_, m.log_ratio_hi_}},
      {"training",
       {{"dataset", m.dataset_source_},
        {"data_fingerprint", m.data_fingerprint_},
        {"pairs", m.training_pairs_},
        {"source_gpus", m.source_gpus_},
        {"target_gpus", m.target_gpus_},
        {"spec_log_lo", m.spec_log_lo_},
        {"spec_log_hi", m.spec_log_hi_},
        {"trusted_excess_log", m.trusted_excess_log_},
        {"feature_names", feature_names()},
        {"feature_min", doubles_to_json(m.feature_min_)},
        {"feature_max", doubles_to_json(m.feature_max_)}}}};
  return j.dump();
}

void save_model(const StackedModel& m, const std::string& path) {
  const std::string text = model_to_json(m) + "\n";
  // A fresh temporary beside the file, created with O_EXCL under an unguessable name: never an
  // existing file or a symlink planted at a predictable PATH.tmp.PID; renamed into place whole.
  std::random_device entropy;
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = fmt::format("{}.tmp.{:08x}{:08x}", path, entropy(), entropy());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) throw Error(ErrorCode::kIo, "cannot write model file '" + path + "': " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  const bool ok = done == text.size() && ::close(fd) == 0;
  if (!ok) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error(ErrorCode::kIo, "write failed for model file '" + path + "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error(ErrorCode::kIo, "cannot move model file into place at '" + path + "': " + ec.message());
  }
}

StackedModel model_from_json(std::string_view text, const std::string& name) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::uint32_t col = 0;
    const std::size_t line = line_of(text, e.byte == 0 ? 0 : e.byte - 1, col);
    throw Error(ErrorCode::kParse,
                std::string("not a valid model file (corrupt or truncated JSON): ") + e.what(),
                {name, line, col, ""});
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error but a number no double holds ("1e400": out_of_range.406), reported
    // without a byte offset or key: a second pass finds both.
    const std::string what = e.what();
    const std::size_t q1 = what.find('\''), q2 = what.rfind('\'');
    const std::string number = q1 != std::string::npos && q2 > q1 + 1 ? what.substr(q1 + 1, q2 - q1 - 1) : "";
    OverflowLocator locator;
    if (e.id == 406) nlohmann::json::sax_parse(text, &locator);
    std::size_t at = std::string_view::npos;
    if (locator.found) at = locator.byte > number.size() ? locator.byte - number.size() : 0;
    else if (!number.empty()) at = text.find(number);
    std::uint32_t col = 0;
    const std::size_t line = at == std::string_view::npos ? 0 : line_of(text, at, col);
    if (e.id == 406 && !number.empty())
      throw Error(ErrorCode::kParse, "not a valid model file: out of range of a double: '" + number + "' (beyond ±1.8e308)",
                  {name, line, col, locator.path});
    throw Error(ErrorCode::kParse, std::string("not a valid model file: ") + what, {name, line, col, ""});
  }
  try {
    if (!j.is_object() || j.value("format", "") != kFormatName)
      throw Error(ErrorCode::kParse, "not an epochcast model file (no \"format\": \"" +
                                         std::string(kFormatName) + "\")", {name, 1, 1, "format"});
    const int version = json_integer<int>(j.at("version"));
    if (version != kModelFormatVersion)
      throw Error(ErrorCode::kSchemaMismatch,
                  "model file '" + name + "' has format version " + std::to_string(version) +
                      "; this epochcast reads version " + std::to_string(kModelFormatVersion) +
                      ": refit it with `epochcast fit`");
    StackedModel m;
    m.options_ = options_from_json(j.at("options"));
    const std::string file_hash = j.at("schema_hash").get<std::string>();
    if (file_hash != m.schema_hash())
      throw Error(ErrorCode::kSchemaMismatch,
                  "model file '" + name + "' has feature schema " + file_hash +
                      ", the running epochcast has schema " + m.schema_hash() +
                      ": refit it with `epochcast fit`");
    if (j.at("pair_features").get<std::vector<std::string>>() !=
        pair_feature_names(m.options_.include_memory_features))
      throw Error(ErrorCode::kSchemaMismatch,
                  "model file '" + name + "' lists other features than schema " + m.schema_hash());
    const LearnerConfig config = learner_config(m.options_);
    for (const auto& lj : j.at("learners")) {
      auto l = make_learner(lj.at("name").get<std::string>(), config);
      l->from_json(lj.at("state"));
      // A state that reads past the schema's row would read out of bounds at predict.
      if (const std::size_t width = pair_feature_names(m.options_.include_memory_features).size();
          l->columns_read() > width)
        throw Error(ErrorCode::kParse,
                    "learner '" + l->name() + "' reads " + std::to_string(l->columns_read()) +
                        " feature columns, the schema has " + std::to_string(width),
                    {name, 0, 0, "learners"});
      m.learners_.push_back(std::move(l));
    }
    m.meta_weights_ = j.at("meta_weights").get<std::vector<double>>();
    m.meta_weights_unseen_ = j.at("meta_weights_unseen_gpu").get<std::vector<double>>();
    if (m.learners_.empty() || m.meta_weights_.size() != m.learners_.size() ||
        m.meta_weights_unseen_.size() != m.learners_.size() || m.learners_.size() > 16)
      throw Error(ErrorCode::kParse, "learner count and meta weights disagree", {name, 0, 0, "meta_weights"});
    for (const auto* ws : {&m.meta_weights_, &m.meta_weights_unseen_})
      for (double w : *ws)
        if (!std::isfinite(w) || w < 0)
          throw Error(ErrorCode::kParse, "meta weight is not a non-negative number", {name, 0, 0, "meta_weights"});
    m.interval_q_log_ = j.at("interval").at("half_width_log").get<double>();
    m.interval_unseen_q_log_ = j.at("interval").at("unseen_gpu_half_width_log").get<double>();
    const auto clamp = j.at("log_ratio_clamp").get<std::vector<double>>();
    if (clamp.size() != 2 || !std::isfinite(clamp[0]) || !std::isfinite(clamp[1]) || clamp[0] > clamp[1])
      throw Error(ErrorCode::kParse, "bad log_ratio_clamp", {name, 0, 0, "log_ratio_clamp"});
    m.log_ratio_lo_ = clamp[0];
    m.log_ratio_hi_ = clamp[1];
    // An interval wider than x/÷ 1000 says nothing, and exp() of a huge half-width is inf: a
    // null bound in every answer (1e308 was accepted).
    const double max_half_width_log = std::log(1e3);
    if (!std::isfinite(m.interval_q_log_) || m.interval_q_log_ < 0 || !std::isfinite(m.interval_unseen_q_log_) ||
        m.interval_unseen_q_log_ < 0 || m.interval_q_log_ > max_half_width_log ||
        m.interval_unseen_q_log_ > max_half_width_log)
      throw Error(ErrorCode::kParse,
                  fmt::format("bad interval half width (expected 0 to {:.3g} in log units, a factor of 1000)",
                              max_half_width_log),
                  {name, 0, 0, "interval"});
    // fit refuses a level outside (0, 1); a file must not bring one in (2 was accepted).
    if (!(m.options_.interval_level > 0 && m.options_.interval_level < 1))
      throw Error(ErrorCode::kParse,
                  fmt::format("interval level {} is not between 0 and 1", m.options_.interval_level),
                  {name, 0, 0, "options.interval_level"});
    const auto& t = j.at("training");
    m.dataset_source_ = t.at("dataset").get<std::string>();
    m.training_pairs_ = json_integer<std::size_t>(t.at("pairs"));
    // Optional: files written before 2026-12-01 lack it (the data is then unknown, no error).
    if (const auto it = t.find("data_fingerprint"); it != t.end()) {
      if (!it->is_string())
        throw Error(ErrorCode::kParse, "training.data_fingerprint is not a string", {name, 0, 0, "data_fingerprint"});
      m.data_fingerprint_ = it->get<std::string>();
      const bool empty = m.data_fingerprint_.empty();
      const bool well_formed = m.data_fingerprint_.size() == 24 && m.data_fingerprint_.starts_with("fnv1a64:") &&
                               m.data_fingerprint_.find_first_not_of("0123456789abcdef", 8) == std::string::npos;
      if (!empty && !well_formed)
        throw Error(ErrorCode::kParse, "training.data_fingerprint is not \"fnv1a64:\" and 16 hex digits",
                    {name, 0, 0, "data_fingerprint"});
    }
    m.source_gpus_ = t.at("source_gpus").get<std::vector<std::string>>();
    m.target_gpus_ = t.at("target_gpus").get<std::vector<std::string>>();
    m.spec_log_lo_ = t.at("spec_log_lo").get<std::vector<double>>();
    m.spec_log_hi_ = t.at("spec_log_hi").get<std::vector<double>>();
    if (m.spec_log_lo_.size() != 2 || m.spec_log_hi_.size() != 2)
      throw Error(ErrorCode::kParse, "training.spec_log_lo/hi must hold 2 numbers", {name, 0, 0, "spec_log_lo"});
    m.trusted_excess_log_ = t.at("trusted_excess_log").get<double>();
    if (!(m.trusted_excess_log_ >= 0))
      throw Error(ErrorCode::kParse, "training.trusted_excess_log must be a number >= 0", {name, 0, 0, "trusted_excess_log"});
    const auto& sp = j.at("scaling_prior");
    m.scaling_prior_.fitted_on = sp.at("fitted_on").get<std::string>();
    m.scaling_prior_.reference = reference_from_json(sp.at("reference"));
    m.scaling_prior_.fp32_code = scaling_params_from_json(sp.at("fp32_code"));
    m.scaling_prior_.mixed = scaling_params_from_json(sp.at("mixed"));
    m.feature_min_ = doubles_from_json(t.at("feature_min"));
    m.feature_max_ = doubles_from_json(t.at("feature_max"));
    if (t.at("feature_names").get<std::vector<std::string>>() != feature_names() ||
        m.feature_min_.size() != feature_count() || m.feature_max_.size() != feature_count())
      throw Error(ErrorCode::kSchemaMismatch,
                  "model file '" + name + "' was trained on other run statistics than this epochcast computes");
    return m;
  } catch (const Error& e) {
    if (!e.where().file.empty()) throw;
    throw Error(e.code(), e.detail(), {name, 0, 0, ""});  // name the file a learner refused
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kParse, std::string("model file is missing or has a malformed field: ") + e.what(),
                {name, 0, 0, ""});
  }
}

constexpr std::uint64_t kMaxModelFileBytes = std::uint64_t{256} << 20;

StackedModel load_model(const std::string& path) {
  // A default-options model is a few MB; the cap stops /dev/zero or a wrong huge file.
  return model_from_json(read_file_capped(path, kMaxModelFileBytes, "model file"), path);
}

}  // namespace epochcast
