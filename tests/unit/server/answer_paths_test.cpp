// What `serve` answers names no file of the server by its path (issue 22): the validation note
// of a model that the bundled figures do not describe (it carried model-validation.json's full
// path), the catalog in an unknown-GPU error, the --model file, a bad upload's error. Driven
// through HttpApi::answer, with no socket.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "epochcast/core/data_dir.hpp"
#include "epochcast/model/dataset.hpp"
#include "epochcast/model/stacked_model.hpp"
#include "epochcast/service/service.hpp"
#include "http_api.hpp"

namespace epochcast::server {
namespace {

namespace fs = std::filesystem;

// A small model (few rounds, a ninth of the bundled dataset): fitted in seconds, and not the
// model the bundled validation figures describe, so its note says why and names that file.
std::string fit_small_model(const fs::path& out) {
  const GpuCatalog catalog = load_gpu_catalog(data_dir() + "/gpus.csv");
  const Dataset d = load_dataset(data_dir() + "/nvidiasmi_devicequery_all.csv", catalog);
  Dataset small = d;
  small.rows.clear();
  for (std::size_t i = 0; i < d.rows.size(); i += 9) small.rows.push_back(d.rows[i]);
  FitOptions o;
  o.xgb_rounds = 3;
  o.xgb_max_depth = 2;
  o.trees = 2;
  o.folds = 3;
  o.knn_k = 3;
  std::ofstream(out) << model_to_json(fit_model(small, catalog, o));
  return out.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string post(std::string_view target, std::string_view body) {
  return "POST " + std::string(target) + " HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

class AnswerPaths : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("epochcast-answer-paths-" + std::to_string(::getpid())) /
                        "secret-dir");
    fs::create_directories(*dir_);
    ServiceConfig config;
    config.model_path = fit_small_model(*dir_ / "my-model.json");
    config.hide_paths = true;  // as serve
    service_ = new Service(std::move(config));
    service_->load();
    ServeOptions options;
    options.listen = "127.0.0.1:0";
    api_ = new HttpApi(*service_, options);
  }
  static void TearDownTestSuite() {
    delete api_;
    delete service_;
    std::error_code ec;
    fs::remove_all(dir_->parent_path(), ec);
    delete dir_;
  }

  // No folder of this machine in `answer`: the data directory, the source tree, the model's.
  static void expect_no_server_path(const std::string& answer) {
    EXPECT_EQ(answer.find(data_dir()), std::string::npos) << answer.substr(0, 600);
    EXPECT_EQ(answer.find(EPOCHCAST_SOURCE_DIR), std::string::npos) << answer.substr(0, 600);
    EXPECT_EQ(answer.find(dir_->string()), std::string::npos) << answer.substr(0, 600);
    EXPECT_EQ(answer.find("secret-dir"), std::string::npos) << answer.substr(0, 600);
  }

  static std::string trace() {
    return read_file(std::string(EPOCHCAST_TEST_DATA) + "/h200/resnet50_224_bs256_bf16.smi.csv");
  }

  static inline fs::path* dir_ = nullptr;
  static inline Service* service_ = nullptr;
  static inline HttpApi* api_ = nullptr;
};

TEST_F(AnswerPaths, ModelNotDescribedByTheBundledFigures) {
  // The note says which file lacks figures for this model, by its name only.
  const std::string model = api_->answer("GET /v1/model HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(model.rfind("HTTP/1.1 200 ", 0), 0U) << model.substr(0, 300);
  EXPECT_NE(model.find("model-validation.json"), std::string::npos) << model;
  EXPECT_NE(model.find("my-model.json"), std::string::npos) << model;
  expect_no_server_path(model);
  const std::string t = trace();
  const std::string predicted = api_->answer(post("/v1/predict?gpus=t4", t));
  ASSERT_EQ(predicted.rfind("HTTP/1.1 200 ", 0), 0U) << predicted.substr(0, 600);
  expect_no_server_path(predicted);
  const std::string report = api_->answer(post("/v1/report?gpus=t4", t));
  ASSERT_EQ(report.rfind("HTTP/1.1 200 ", 0), 0U) << report.substr(0, 600);
  expect_no_server_path(report);
}

TEST_F(AnswerPaths, UnknownGpu) {
  const std::string a = api_->answer(post("/v1/predict?gpus=nosuch", trace()));
  ASSERT_EQ(a.rfind("HTTP/1.1 404 ", 0), 0U) << a.substr(0, 600);
  EXPECT_NE(a.find("gpus.csv"), std::string::npos) << a;
  expect_no_server_path(a);
}

TEST_F(AnswerPaths, BadUploads) {
  for (const std::string& body : {std::string("not,a\ntrace\n"), std::string("\x1f\x8b\x08garbage", 11),
                                  std::string("timestamp, utilization.gpu [%]\n2024/01/01 00:00:00.000, 50 %\n")}) {
    for (const char* target : {"/v1/predict?gpus=t4", "/v1/detect", "/v1/report", "/v1/predict?format=dcgmi"}) {
      const std::string a = api_->answer(post(target, body));
      // A one-sample trace is a valid upload to detect (found: false, "trace too short").
      const bool valid = body.starts_with("timestamp") && std::string_view(target) == "/v1/detect";
      EXPECT_EQ(a.rfind(valid ? "HTTP/1.1 200 " : "HTTP/1.1 4", 0), 0U) << target << ": " << a.substr(0, 600);
      expect_no_server_path(a);
    }
  }
  // Whole connections too: framing refusals and routes after them.
  const std::string conn = api_->answer_connection(post("/v1/detect", "x") + "GET /nope HTTP/1.1\r\n\r\n" +
                                                   "POST / HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n");
  EXPECT_NE(conn.find("HTTP/1.1 404 "), std::string::npos) << conn;
  EXPECT_NE(conn.find("HTTP/1.1 413 "), std::string::npos) << conn;
  expect_no_server_path(conn);
}

}  // namespace
}  // namespace epochcast::server
