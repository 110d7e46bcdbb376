// adopt_calibrated_scaling_prior: a cached default model's prior stands in for the computation,
// never replacing a prior the process has already computed or adopted.
#include <gtest/gtest.h>

#include "epochcast/model/scaling_prior.hpp"

namespace epochcast {
namespace {

TEST(PriorAdoption, AnAdoptedPriorNeverReplacesTheProcessPrior) {
  const ScalingPrior& computed = calibrated_scaling_prior();
  const double exp = computed.fp32_code.compute_exp;
  ScalingPrior other = computed;
  other.fp32_code.compute_exp = exp + 1;
  other.fitted_on = "another table";
  adopt_calibrated_scaling_prior(other);
  const ScalingPrior& after = calibrated_scaling_prior();
  EXPECT_EQ(&after, &computed);  // the same object: references handed out stay valid
  EXPECT_EQ(after.fp32_code.compute_exp, exp);
  EXPECT_NE(after.fitted_on, "another table");
}

}  // namespace
}  // namespace epochcast
