// Request structs check themselves and name the field, never a front end's flag or parameter.
#include "epochcast/service/request.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

namespace epochcast {
namespace {

using ::testing::HasSubstr;

// The field a request's validate() names, or "" when it passes.
std::string refused_field(const std::function<void()>& validate) {
  try {
    validate();
  } catch (const FieldError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()), e.field() + " " + e.problem());
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("--")));  // no flag inside the library
    return e.field();
  }
  return "";
}

TEST(PredictRequest, DefaultsPassAndEachBadFieldIsNamed) {
  EXPECT_EQ(refused_field([] { PredictRequest{}.validate(); }), "");
  PredictRequest r;
  r.epochs = 0;
  EXPECT_EQ(refused_field([&] { r.validate(); }), "epochs");
  r = {};
  r.source_epoch_s = 1e-9;  // was taken once, and predicted 1.3e-300 s on an H100
  EXPECT_EQ(refused_field([&] { r.validate(); }), "source_epoch_s");
  r.source_epoch_s = NAN;
  EXPECT_EQ(refused_field([&] { r.validate(); }), "source_epoch_s");
  r = {};
  r.min_detection_confidence = 1.5;
  EXPECT_EQ(refused_field([&] { r.validate(); }), "min_detection_confidence");
  r = {};
  r.precision = "fp64";  // an unknown precision word lists the choices
  EXPECT_EQ(refused_field([&] { r.validate(); }), "precision");
  try {
    r.validate();
  } catch (const FieldError& e) {
    EXPECT_THAT(e.problem(), HasSubstr("auto, fp32, tf32, fp16, bf16"));
  }
}

TEST(DetectRequest, BoundsAndConfidenceAreChecked) {
  EXPECT_EQ(refused_field([] { DetectRequest{}.validate(); }), "");
  DetectRequest d;
  d.min_period_s = 10;
  d.max_period_s = 5;
  EXPECT_EQ(refused_field([&] { d.validate(); }), "min_period_s");
  d = {};
  d.max_period_s = -1;
  EXPECT_EQ(refused_field([&] { d.validate(); }), "max_period_s");
  d = {};
  d.min_confidence = NAN;
  EXPECT_EQ(refused_field([&] { d.validate(); }), "min_confidence");
  d = {};
  d.min_epochs = 1;
  EXPECT_EQ(refused_field([&] { d.validate(); }), "min_epochs");
}

TEST(TraceRequest, FormatIntervalAndFieldsAreChecked) {
  EXPECT_EQ(refused_field([] { TraceRequest{}.validate(); }), "");
  TraceRequest t;
  t.format = "parquet";
  EXPECT_EQ(refused_field([&] { t.validate(); }), "format");
  t = {};
  t.interval_s = 1e-6;
  EXPECT_EQ(refused_field([&] { t.validate(); }), "interval_s");
  t = {};
  t.fields = {"timestamp", "utilization.gpu", "timestamp"};
  EXPECT_EQ(refused_field([&] { t.validate(); }), "fields");
  t = {};
  t.fields = {"timestamp"};
  t.format = "dcgmi";
  EXPECT_EQ(refused_field([&] { t.validate(); }), "fields");
  t = {};
  t.prometheus.url = "http://127.0.0.1:9090";
  EXPECT_EQ(refused_field([&] { t.validate(); }), "prometheus.start");
  t.prometheus.start = "now-15m";
  EXPECT_EQ(refused_field([&] { t.validate(); }), "");
}

TEST(EvaluateRequest, ProtocolIsChecked) {
  EvaluateRequest e;
  EXPECT_EQ(refused_field([&] { e.validate(); }), "");
  e.protocol = "loocv";
  EXPECT_EQ(refused_field([&] { e.validate(); }), "protocol");
  e.test_path = "test.csv";  // a test file needs no protocol
  EXPECT_EQ(refused_field([&] { e.validate(); }), "");
}

// Fit settings are checked against the one table (fit_parameters()), named by parameter.
TEST(FitRequest, ParametersAreCheckedByName) {
  FitRequest r;
  EXPECT_EQ(refused_field([&] { r.validate(); }), "");
  r.parameters = {{"xgb_rounds", "80"}, {"kernel_ridge", "false"}, {"xgb_eta", "0.1"}, {"seed", "18446744073709551615"}};
  EXPECT_EQ(refused_field([&] { r.validate(); }), "");
  r.parameters = {{"xgb_rounds", "0"}};
  EXPECT_EQ(refused_field([&] { r.validate(); }), "parameters.xgb_rounds");
  r.parameters = {{"trees", "1.5"}};
  EXPECT_EQ(refused_field([&] { r.validate(); }), "parameters.trees");
  r.parameters = {{"xgb_eta", "nan"}};
  EXPECT_EQ(refused_field([&] { r.validate(); }), "parameters.xgb_eta");
  r.parameters = {{"seed", "-1"}};
  EXPECT_EQ(refused_field([&] { r.validate(); }), "parameters.seed");
  r.parameters = {{"kernel_ridge", "maybe"}};
  EXPECT_EQ(refused_field([&] { r.validate(); }), "parameters.kernel_ridge");
  r.parameters = {{"rounds", "5"}};
  EXPECT_EQ(refused_field([&] { r.validate(); }), "parameters");
  try {
    r.validate();
  } catch (const FieldError& e) {
    EXPECT_THAT(e.problem(), HasSubstr("xgb_rounds"));  // the choices are listed
  }
}

// The one GPU-list reader of `predict --gpus` and the server's `gpus=` parameter.
TEST(ParseGpuList, TrimsSplitsAndRefusesAnEmptyList) {
  EXPECT_TRUE(parse_gpu_list("all", "gpus").empty());
  EXPECT_TRUE(parse_gpu_list("", "gpus").empty());
  EXPECT_EQ(parse_gpu_list(" t4, a10g ,,v100", "gpus"), (std::vector<std::string>{"t4", "a10g", "v100"}));
  try {
    (void)parse_gpu_list(" , ,", "gpus");
    FAIL() << "an empty list was accepted";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "gpus");
    EXPECT_EQ(e.problem(), "' , ,' names no GPU");
  }
}

}  // namespace
}  // namespace epochcast
