// `watch --job-key`: a template over a job's labels ("{namespace}/{job_name}") whose value is
// the job's key in the job store, so that runs of one workload on different GPU types become
// measured pairs (docs/watch.md "Job store").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "epochcast/service/request.hpp"
#include "promql_client.hpp"

namespace epochcast::fleet {

struct JobKeyTemplate {
  struct Part {
    bool label = false;  // true: the value of the label `text`; false: `text` itself
    std::string text;
    bool workload = false;  // {label|workload}: the value less Kubernetes' generated suffixes
  };
  std::vector<Part> parts;
  std::vector<std::string> labels;  // the label names it reads, each once, in order
  [[nodiscard]] bool empty() const { return parts.empty(); }
};

// "" → an empty template (no keys). `{label|workload}` takes the value less the suffixes
// Kubernetes generates for a pod of a workload (kubernetes_workload()). FieldError("job_key_template", ...) for an unbalanced brace, a name
// that is not a Prometheus label name, no label at all, or a label that names the scrape
// target or the GPU rather than the workload (job, instance, UUID, Hostname, gpu, ...: the key
// would differ between the two GPUs of every pair, or be shared by every job).
[[nodiscard]] JobKeyTemplate parse_job_key_template(std::string_view text);

// A pod name less the suffixes Kubernetes generates, so that every run of one workload has one
// name: first a trailing "-" and 5 characters of the alphabet generated names use
// (bcdfghjklmnpqrstvwxz2456789: a Job's or ReplicaSet's pod), then one trailing "-" and digits
// (a CronJob's scheduled minute, an indexed Job's index, a StatefulSet's ordinal) or "-" and 6 to
// 10 of those characters (a Deployment's pod-template hash). "retrain-29012345-x7k2p" →
// "retrain", "bert-7d4b9c8f6d-q2w5z" → "bert", "r50-x7k2p" → "r50", "trainer" → "trainer".
[[nodiscard]] std::string kubernetes_workload(std::string_view pod);

struct JobKey {
  std::string key;      // "" when there is none
  std::string problem;  // why not: a label missing or empty, a value too long or with control bytes
};
// The key of a job with these labels. Values come from the scraped series (not trusted): a key
// over kMaxJobKeyBytes or holding a control character is not used and says why.
[[nodiscard]] JobKey render_job_key(const JobKeyTemplate& tmpl, const Labels& labels);

}  // namespace epochcast::fleet
