// The `--json` contract of every command, held to golden files (tests/data/golden/): the CLI's
// bytes must equal the file (floats within kGoldenFloatRelTol), and where the server has the same endpoint its body must equal the
// same object (compact, one line: nlohmann sorts keys, so re-dumping the golden is exact).
// Scripts parse these objects; a change to one must show up here as a diff of its golden file.
//
// Regenerate after an intended change:  EPOCHCAST_UPDATE_GOLDEN=1 build/tests/test_integration
// --gtest_filter='JsonContract*'  (then read the diff before committing it).
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "collect_process.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;

const fs::path kGolden = fs::path(EPOCHCAST_TEST_DATA) / "golden";

bool updating() {
  const char* v = std::getenv("EPOCHCAST_UPDATE_GOLDEN");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

// Keys whose values are wall-clock measurements: zeroed before comparing, everything else exact.
const std::vector<std::string> kTimingKeys = {"fit_seconds", "fit_cpu_seconds"};

std::string without_timings(const std::string& text, int indent) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return text;
  for (const auto& key : kTimingKeys)
    if (j.contains(key)) j[key] = 0;
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// The checkout's own path (the bundled data's, in messages naming a catalog or the validation
// file) as a placeholder: the goldens hold no machine's folder.
std::string without_checkout_path(std::string text) {
  const std::string dir = EPOCHCAST_SOURCE_DIR, placeholder = "<source-dir>";
  for (std::size_t at = text.find(dir); at != std::string::npos; at = text.find(dir, at + placeholder.size()))
    text.replace(at, dir.size(), placeholder);
  return text;
}

// Fitted figures (the fit summary's interval width, eval's scores) differ between x86 CPUs in
// their last digits: on an Intel Xeon the goldens made on an AMD Zen 5 differed by at most
// 8.8e-9 relative (eval_small_lomo.json; fit_small.json 9.8e-11), same build and data
// (2026-12-02). Floats in a golden object may differ by 1e-6 relative, two orders above that
// spread and far below a change a script would notice; integers, strings, keys and structure
// stay exact. Guarded by GoldenTolerance.OnlyLastDigitFloatDifferencesPass.
constexpr double kGoldenFloatRelTol = 1e-6;

bool same_within_tolerance(const nlohmann::json& a, const nlohmann::json& e) {
  if (a.is_number_float() || e.is_number_float()) {
    if (!a.is_number() || !e.is_number()) return false;
    const double x = a.get<double>(), y = e.get<double>();
    return std::abs(x - y) <= kGoldenFloatRelTol * std::max(std::abs(x), std::abs(y));
  }
  if (a.type() != e.type()) return false;
  if (a.is_object()) {
    if (a.size() != e.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it)
      if (!e.contains(it.key()) || !same_within_tolerance(it.value(), e.at(it.key()))) return false;
    return true;
  }
  if (a.is_array()) {
    if (a.size() != e.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_within_tolerance(a[i], e[i])) return false;
    return true;
  }
  return a == e;
}

// Compares `actual` with the golden file `name` (floats within kGoldenFloatRelTol when both are
// JSON), or writes it under EPOCHCAST_UPDATE_GOLDEN.
void expect_golden(const std::string& name, const std::string& output) {
  const fs::path path = kGolden / name;
  const std::string actual = without_checkout_path(output);
  if (updating()) {
    fs::create_directories(kGolden);
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(fs::exists(path)) << path << " missing; run with EPOCHCAST_UPDATE_GOLDEN=1 to create it";
  const std::string expected = testing::read_file(path);
  if (actual == expected) return;
  const auto ja = nlohmann::json::parse(actual, nullptr, false), je = nlohmann::json::parse(expected, nullptr, false);
  if (!ja.is_discarded() && !je.is_discarded() && same_within_tolerance(ja, je)) return;
  // The first line that differs, not two pages of JSON.
  std::istringstream a(actual), e(expected);
  std::string la, le;
  int line = 1;
  while (std::getline(a, la) && std::getline(e, le) && la == le) ++line;
  ADD_FAILURE() << path << " differs at line " << line << "\n  golden: " << le << "\n  actual: " << la
                << "\n(" << expected.size() << " vs " << actual.size() << " bytes)";
}

TEST(GoldenTolerance, OnlyLastDigitFloatDifferencesPass) {
  using nlohmann::json;
  EXPECT_TRUE(same_within_tolerance(json{{"w", 36.18230245961037}}, json{{"w", 36.18230245845781}}));
  EXPECT_TRUE(same_within_tolerance(json{{"w", 9.66818003733463}}, json{{"w", 9.668180122366818}}));
  EXPECT_FALSE(same_within_tolerance(json{{"w", 36.1823}}, json{{"w", 36.1824}}));
  EXPECT_FALSE(same_within_tolerance(json{{"n", 3}}, json{{"n", 4}}));
  EXPECT_FALSE(same_within_tolerance(json{{"w", 1.0}}, json{{"v", 1.0}}));
  EXPECT_FALSE(same_within_tolerance(json{{"w", json::array({1.0, 2.0})}}, json{{"w", json::array({1.0})}}));
  EXPECT_FALSE(same_within_tolerance(json{{"s", "a"}}, json{{"s", 1.0}}));
}

// The golden's object as the server writes it: compact, one line.
std::string compact(const std::string& golden_text) {
  return nlohmann::json::parse(golden_text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The CLI run from `dir` (so the paths it prints are the relative ones given), stdout only.
testing::CommandResult cli_in(const fs::path& dir, const std::string& args) {
  return testing::run_command("cd " + shell_quote(dir.string()) + " && " + EPOCHCAST_CLI + " " + args +
                              " 2>/dev/null");
}

struct Upload {
  std::string trace;  // file name in the case's folder
  std::string host;   // "" = none
};

// One command whose --json object the CLI prints and, when `route` is set, the server answers.
struct Case {
  std::string name;       // golden file: <name>.json
  std::string dir;        // folder under tests/data the CLI runs in
  std::string cli_args;   // after `epochcast`
  int cli_status = 0;
  std::string route;      // "" = CLI only; else path with query, e.g. "/v1/detect?gpu=1"
  Upload upload;
  int http_status = 200;
  bool http_has_own_golden = false;  // error wording differs by front end: <name>.http.json
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // detect: found, with the host log beside the trace (the CLI merges it; HTTP gets it as a part)
      {"detect_resnet50", "h200", "detect resnet50_224_bs256_bf16.smi.csv --json", 0, "/v1/detect",
       {"resnet50_224_bs256_bf16.smi.csv", "resnet50_224_bs256_bf16.host.csv"}},
      {"detect_resnet18_host", "h200", "detect resnet18_32_bs128_cpuloader.smi.csv --json", 0, "/v1/detect",
       {"resnet18_32_bs128_cpuloader.smi.csv", "resnet18_32_bs128_cpuloader.host.csv"}},
      {"detect_vgg16_options", "h200", "detect vgg16_224_bs32_fp32.smi.csv --json --min-confidence 0.3 --min-epochs 3",
       0, "/v1/detect?min_confidence=0.3&min_epochs=3",
       {"vgg16_224_bs32_fp32.smi.csv", "vgg16_224_bs32_fp32.host.csv"}},
      {"detect_dcgmi_gpu1", "dcgmi", "detect two_gpus_100ms.dmon.log --gpu 1 --json", 0, "/v1/detect?gpu=1",
       {"two_gpus_100ms.dmon.log", ""}},
      {"detect_prometheus_scrape", "prometheus", "detect resnet50_replay1x_scraped.csv --json", 0, "/v1/detect",
       {"resnet50_replay1x_scraped.csv", ""}},
      {"detect_lenient_bad_rows", "bad", "detect wrong_column_count.smi.csv --lenient --json", 0, "/v1/detect?lenient=1",
       {"wrong_column_count.smi.csv", ""}},
      {"detect_parse_error", "bad", "detect text_in_number.smi.csv --json", 4, "/v1/detect",
       {"text_in_number.smi.csv", ""}, 422},
      {"detect_follow", "h200", "detect lenet5_28_bs64_fp32.smi.csv --follow --idle-timeout 0.3 --poll-ms 10 --json"},
      // predict: one trace, targets, given epoch time, several traces
      {"predict_vgg16_three_gpus", "h200", "predict vgg16_224_bs32_fp32.smi.csv --gpus t4,v100,a10g --epochs 5 --json", 0,
       "/v1/predict?gpus=t4,v100,a10g&epochs=5", {"vgg16_224_bs32_fp32.smi.csv", "vgg16_224_bs32_fp32.host.csv"}},
      {"predict_resnet50_all", "h200", "predict resnet50_224_bs256_bf16.smi.csv --json", 0, "/v1/predict",
       {"resnet50_224_bs256_bf16.smi.csv", "resnet50_224_bs256_bf16.host.csv"}},
      {"predict_effnet_confidence", "h200",
       "predict effnetb0_224_bs64_ckpt_500ms.smi.csv --min-confidence 0.3 --gpus a100-80gb,t4 --json", 0,
       "/v1/predict?min_confidence=0.3&gpus=a100-80gb,t4",
       {"effnetb0_224_bs64_ckpt_500ms.smi.csv", "effnetb0_224_bs64_ckpt_500ms.host.csv"}},
      {"predict_lenet_epoch_s", "h200",
       "predict lenet5_28_bs64_fp32.smi.csv --epoch-s 30 --source-gpu h200 --gpus v100 --json", 0,
       "/v1/predict?epoch_s=30&source_gpu=h200&gpus=v100",
       {"lenet5_28_bs64_fp32.smi.csv", "lenet5_28_bs64_fp32.host.csv"}},
      {"predict_prometheus_no_epochs", "prometheus", "predict resnet50_replay1.5x_scraped.csv --source-gpu h200 --gpus t4 --json",
       0, "/v1/predict?source_gpu=h200&gpus=t4", {"resnet50_replay1.5x_scraped.csv", ""}},
      {"predict_batch_folder", "h200", "predict . --gpus t4,a10g --json"},
      // predict errors: the library's checks, worded by each front end
      {"predict_unnamed_gpu", "dcgmi", "predict two_gpus_100ms.dmon.log --json", 2, "/v1/predict",
       {"two_gpus_100ms.dmon.log", ""}, 400, true},
      {"predict_unknown_gpu", "h200", "predict vgg16_224_bs32_fp32.smi.csv --gpus t4,nope --json", 6,
       "/v1/predict?gpus=t4,nope", {"vgg16_224_bs32_fp32.smi.csv", "vgg16_224_bs32_fp32.host.csv"}, 404, true},
      {"predict_bad_epochs", "h200", "predict vgg16_224_bs32_fp32.smi.csv --epochs 0 --json", 2, "/v1/predict?epochs=0",
       {"vgg16_224_bs32_fp32.smi.csv", "vgg16_224_bs32_fp32.host.csv"}, 400, true},
      {"predict_bad_epoch_s", "h200", "predict vgg16_224_bs32_fp32.smi.csv --epoch-s 1e-9 --json", 2,
       "/v1/predict?epoch_s=1e-9", {"vgg16_224_bs32_fp32.smi.csv", "vgg16_224_bs32_fp32.host.csv"}, 400, true},
      // info (CLI only)
      {"info_effnet", "h200", "info effnetb0_224_bs64_ckpt_500ms.smi.csv --json"},
      {"info_dcgmi", "dcgmi", "info two_gpus_100ms.dmon.log --json"},
  };
  return all;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class JsonContract : public ::testing::TestWithParam<Case> {};

TEST_P(JsonContract, CliPrintsTheGoldenObject) {
  const Case& c = GetParam();
  const auto r = cli_in(fs::path(EPOCHCAST_TEST_DATA) / c.dir, c.cli_args);
  EXPECT_EQ(r.status, c.cli_status) << r.out;
  expect_golden(c.name + ".json", r.out);
}

// One server for every HTTP case (the model loads once).
class JsonContractHttp : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir("golden-serve");
    server_ = new testing::Process({EPOCHCAST_CLI, "serve", "--listen", "127.0.0.1:0", "--quiet"}, {}, dir_->path());
    port_ = server_->serving_port(120);
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  static testing::TempDir* dir_;
  static testing::Process* server_;
  static int port_;
};
testing::TempDir* JsonContractHttp::dir_ = nullptr;
testing::Process* JsonContractHttp::server_ = nullptr;
int JsonContractHttp::port_ = -1;

TEST_P(JsonContractHttp, ServerAnswersTheSameObject) {
  const Case& c = GetParam();
  if (c.route.empty()) GTEST_SKIP() << "CLI only";
  ASSERT_GT(port_, 0) << server_->err();
  const fs::path dir = fs::path(EPOCHCAST_TEST_DATA) / c.dir;
  httplib::Client client("127.0.0.1", port_);
  client.set_read_timeout(120, 0);
  // A multipart upload whose parts carry the file names, so the report names the trace as the
  // CLI run from its folder does.
  httplib::MultipartFormDataItems items = {
      {"trace", testing::read_file(dir / c.upload.trace), c.upload.trace, "text/csv"}};
  if (!c.upload.host.empty())
    items.push_back({"host", testing::read_file(dir / c.upload.host), c.upload.host, "text/csv"});
  const auto res = client.Post(c.route.c_str(), items);
  ASSERT_TRUE(res) << "no answer";
  EXPECT_EQ(res->status, c.http_status) << res->body;
  if (c.http_has_own_golden) {
    expect_golden(c.name + ".http.json", res->body);
    return;
  }
  if (updating()) return;  // the CLI case writes the shared file
  EXPECT_EQ(without_checkout_path(res->body), compact(testing::read_file(kGolden / (c.name + ".json")))) << c.route;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Golden, JsonContract, ::testing::ValuesIn(cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Golden, JsonContractHttp, ::testing::ValuesIn(cases()), case_name);

// fit and eval fit models: a three-model slice of the bundled dataset keeps them quick, and the
// seconds they took are the only values not compared.
class JsonContractFit : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir("golden-fit");
    std::ifstream in(fs::path(EPOCHCAST_SOURCE_DIR) / "data" / "nvidiasmi_devicequery_all.csv");
    std::ofstream out(dir_->path() / "small.csv");
    std::string line;
    std::getline(in, line);
    out << line << "\n";
    while (std::getline(in, line))
      for (const char* model : {",AlexNet,", ",CIFAR10_CNN,", ",InceptionResNetV2,"})
        if (line.find(model) != std::string::npos) {
          out << line << "\n";
          break;
        }
  }
  static void TearDownTestSuite() { delete dir_; }
  static testing::TempDir* dir_;
};
testing::TempDir* JsonContractFit::dir_ = nullptr;

TEST_F(JsonContractFit, FitPrintsTheGoldenSummary) {
  const auto r = cli_in(dir_->path(), "fit --data small.csv -o small.model.json --json");
  ASSERT_EQ(r.status, 0) << r.out;
  expect_golden("fit_small.json", without_timings(r.out, 2));
}

TEST_F(JsonContractFit, EvalPrintsTheGoldenScores) {
  const auto r = cli_in(dir_->path(), "eval --data small.csv --protocol lomo --json");
  ASSERT_EQ(r.status, 0) << r.out;
  expect_golden("eval_small_lomo.json", without_timings(r.out, 2));
}

TEST_F(JsonContractFit, EvalOnATestFilePrintsTheGoldenScores) {
  const auto r = cli_in(dir_->path(), "eval --data small.csv --test small.csv --json");
  ASSERT_EQ(r.status, 0) << r.out;
  expect_golden("eval_small_test.json", without_timings(r.out, 2));
}

TEST_F(JsonContractFit, FitErrorIsTheGoldenObject) {
  const auto r = cli_in(dir_->path(), "fit --data missing.csv -o m.json --json");
  EXPECT_EQ(r.status, 3) << r.out;
  expect_golden("fit_missing_data.json", r.out);
}


// jobs: a store made by importing a committed export (five runs of three job keys, one key
// reused for another workload), so ids, times and uids are the fixture's.
class JsonContractJobs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir("golden-jobs");
    const auto r = cli_in(dir_->path(), "jobs import " + (fs::path(EPOCHCAST_TEST_DATA) / "store" / "five_runs.jsonl").string() +
                                            " --store jobs.db --json");
    ASSERT_EQ(r.status, 0) << r.out;
    import_out_ = new std::string(r.out);
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete import_out_;
  }
  static testing::TempDir* dir_;
  static std::string* import_out_;
};
testing::TempDir* JsonContractJobs::dir_ = nullptr;
std::string* JsonContractJobs::import_out_ = nullptr;

TEST_F(JsonContractJobs, ImportListShowAndPairsPrintTheGoldenObjects) {
  expect_golden("jobs_import.json", *import_out_);
  const struct {
    const char* golden;
    const char* args;
    int status;
  } runs[] = {{"jobs_list.json", "jobs list --store jobs.db --json", 0},
              {"jobs_list_job.json", "jobs list --job r18 --store jobs.db --json", 0},
              {"jobs_show.json", "jobs show 2 --store jobs.db --json", 0},
              {"jobs_pairs.json", "jobs pairs --store jobs.db --json", 0},
              {"jobs_show_missing.json", "jobs show 99 --store jobs.db --json", 6}};
  for (const auto& run : runs) {
    const auto r = cli_in(dir_->path(), run.args);
    EXPECT_EQ(r.status, run.status) << run.args << "\n" << r.out;
    expect_golden(run.golden, r.out);
  }
}

}  // namespace
}  // namespace epochcast
