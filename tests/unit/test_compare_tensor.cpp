// compare_tensor: the error columns of verify's table, and the loss's error measured against
// the root-sum-square of the terms it sums rather than against itself.
#include <gtest/gtest.h>

#include <cmath>

#include "driver/verification.hpp"
#include "reference/reference.hpp"

namespace minictx {
namespace {

TEST(CompareTensor, RelativeErrorsAgainstTheLargestAndTheRmsReference) {
  const VerifyRow r = compare_tensor("t", {1.0, -2.5, 4.0}, {1.0, -2.0, 4.0}, 0.1);
  EXPECT_DOUBLE_EQ(r.max_abs_err, 0.5);
  EXPECT_DOUBLE_EQ(r.max_rel_err, 0.5 / 4.0);
  EXPECT_DOUBLE_EQ(r.rmse, std::sqrt(0.25 / 3));
  EXPECT_DOUBLE_EQ(r.rms_rel_err, std::sqrt(0.25 / (1 + 4 + 16)));
  EXPECT_FALSE(r.pass);  // 0.125 > 0.1
  EXPECT_TRUE(std::isnan(r.single_max_rel_err));
}

TEST(CompareTensor, ANonFiniteValueFailsWithNanErrors) {
  const VerifyRow r = compare_tensor("t", {1.0, INFINITY}, {1.0, 2.0}, 1.0);
  EXPECT_FALSE(r.pass);
  EXPECT_TRUE(std::isnan(r.max_rel_err) && std::isnan(r.max_abs_err));
}

// A loss of 0.01 summed from terms of magnitude 10: an error of 1e-3 is 10 % of the loss
// and 1e-4 of its terms; the given scale decides which the row reports.
TEST(CompareTensor, AScaleReplacesTheReferenceMagnitude) {
  EXPECT_NEAR(compare_tensor("outputs/loss", {0.011}, {0.01}, 0.035).max_rel_err, 0.1, 1e-12);
  const VerifyRow r = compare_tensor("outputs/loss", {0.011}, {0.01}, 0.035, 10.0);
  EXPECT_NEAR(r.max_rel_err, 1e-4, 1e-15);
  EXPECT_NEAR(r.rms_rel_err, 1e-4, 1e-15);
  EXPECT_TRUE(r.pass);
}

TEST(CompareTensor, TheLossScaleIsTheRootSumSquareOfItsTerms) {
  RunConfig cfg;
  cfg.sequence.length = 5;
  cfg.sequence.batch = 2;
  cfg.model.d_model = 8;
  reference::Problem p;
  p.batch = 2;
  p.seq_len = 5;
  p.d_model = 8;
  p.seed = cfg.run.seed;
  const std::vector<double> c = reference::make_loss_weights(p);
  std::vector<double> y(c.size());
  double sum = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] = (i % 3 == 0 ? -1.0 : 2.0) * double(i + 1);
    sum += (c[i] * y[i]) * (c[i] * y[i]);
  }
  EXPECT_NEAR(loss_scale_of_terms(cfg, y), std::sqrt(sum) / 10, 1e-12 * std::sqrt(sum));
}

}  // namespace
}  // namespace minictx
