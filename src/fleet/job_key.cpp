#include "job_key.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>


namespace epochcast::fleet {
namespace {

// Labels of the scrape target or of the GPU: the same for every job an exporter serves, or
// different on each GPU of a pair by definition. A key over them pairs nothing, or everything.
constexpr std::array<std::string_view, 13> kNotWorkloadLabels = {
    "job", "instance", "exported_job", "exported_instance", "UUID", "Hostname", "gpu", "modelName", "device", "pci_bus_id", "DCGM_FI_DRIVER_VERSION",
    "GPU_I_ID", "GPU_I_PROFILE"};

// Labels watch's own /metrics adds to a job's series (fleet_metrics.cpp): a job label of the same
// name would be written twice.
constexpr std::array<std::string_view, 4> kOwnLabels = {"epochcast_job", "target_gpu", "bound", "provider"};

bool label_name(std::string_view s) {
  if (s.empty()) return false;
  const auto head = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!head(s[0])) return false;
  return std::all_of(s.begin() + 1, s.end(), [&](char c) { return head(c) || (c >= '0' && c <= '9'); });
}

// The characters Kubernetes' generated name suffixes are drawn from (apimachinery's
// util/rand: no vowels, no 0 1 3, so that no word is spelled).
constexpr std::string_view kGeneratedAlphabet = "bcdfghjklmnpqrstvwxz2456789";

// The length of a trailing "-" + run of characters that `ok` accepts, min..max long; 0: none.
template <class Ok>
std::size_t trailing_part(std::string_view s, std::size_t min, std::size_t max, Ok ok) {
  std::size_t n = 0;
  while (n < s.size() && ok(s[s.size() - 1 - n])) ++n;
  if (n < min || n > max || n + 1 >= s.size() || s[s.size() - 1 - n] != '-') return 0;
  return n + 1;
}

}  // namespace

std::string kubernetes_workload(std::string_view pod) {
  const auto generated = [](char c) { return kGeneratedAlphabet.find(c) != std::string_view::npos; };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::string_view s = pod;
  if (const std::size_t n = trailing_part(s, 5, 5, generated)) s.remove_suffix(n);
  else return std::string(pod);  // not a generated pod name
  if (const std::size_t n = trailing_part(s, 1, 12, digit)) s.remove_suffix(n);
  else if (const std::size_t m = trailing_part(s, 6, 10, generated)) s.remove_suffix(m);
  return std::string(s);
}

JobKeyTemplate parse_job_key_template(std::string_view text) {
  JobKeyTemplate t;
  if (text.empty()) return t;
  std::string literal;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '}') throw FieldError("job_key_template", fmt::format("'}}' without '{{' at character {}", i + 1));
    if (c != '{') {
      literal += c;
      ++i;
      continue;
    }
    const std::size_t close = text.find('}', i);
    if (close == std::string_view::npos) throw FieldError("job_key_template", fmt::format("'{{' at character {} is not closed", i + 1));
    std::string_view name = text.substr(i + 1, close - i - 1);
    bool workload = false;
    if (const std::size_t bar = name.find('|'); bar != std::string_view::npos) {
      if (name.substr(bar + 1) != "workload")
        throw FieldError("job_key_template",
                         fmt::format("'{{{}}}': the only modifier is |workload (the pod name less Kubernetes' "
                                     "generated suffixes)",
                                     name));
      name = name.substr(0, bar);
      workload = true;
    }
    if (!label_name(name))
      throw FieldError("job_key_template", fmt::format("'{{{}}}' is not a label name (letters, digits, '_')", name));
    if (name.starts_with("__") || std::find(kOwnLabels.begin(), kOwnLabels.end(), name) != kOwnLabels.end())
      throw FieldError("job_key_template", fmt::format("'{{{}}}' is reserved (Prometheus' __* or a label of watch's own /metrics)", name));
    if (std::find(kNotWorkloadLabels.begin(), kNotWorkloadLabels.end(), name) != kNotWorkloadLabels.end())
      throw FieldError("job_key_template", fmt::format("'{{{}}}' names the scrape target or the GPU, not the workload: a key "
                                              "must be the same for one workload on any GPU (e.g. {{namespace}}/{{job_name}})",
                                              name));
    if (!literal.empty()) t.parts.push_back({false, std::move(literal)}), literal.clear();
    t.parts.push_back({true, std::string(name), workload});
    if (std::find(t.labels.begin(), t.labels.end(), name) == t.labels.end()) t.labels.emplace_back(name);
    i = close + 1;
  }
  if (!literal.empty()) t.parts.push_back({false, std::move(literal)});
  if (t.labels.empty())
    throw FieldError("job_key_template", fmt::format("'{}' names no label: every job would share one key", text));
  return t;
}

JobKey render_job_key(const JobKeyTemplate& tmpl, const Labels& labels) {
  JobKey out;
  std::string key;
  for (const auto& p : tmpl.parts) {
    if (!p.label) {
      key += p.text;
      continue;
    }
    const auto it = labels.find(p.text);
    if (it == labels.end() || it->second.empty()) {
      out.problem = fmt::format("no job key: the job has no '{}' label", p.text);
      return out;
    }
    key += p.workload ? kubernetes_workload(it->second) : it->second;
  }
  if (key.size() > kMaxJobKeyBytes) {
    out.problem = fmt::format("no job key: its labels make {} bytes, more than {}", key.size(), kMaxJobKeyBytes);
    return out;
  }
  if (std::any_of(key.begin(), key.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    out.problem = "no job key: a label value holds a control character";
    return out;
  }
  out.key = std::move(key);
  return out;
}

}  // namespace epochcast::fleet
