// The counter-based generator: reproducible, keyed by (seed, tensor, index), uniform.
#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.hpp"
#include "core/synthetic_data.hpp"

using minictx::CounterRng;

TEST(CounterRng, SameKeySameValue) {
  const CounterRng a(7, 3), b(7, 3);
  for (uint64_t i = 0; i < 1000; i += 37) EXPECT_EQ(a.uniform(i), b.uniform(i));
}

TEST(CounterRng, SeedTensorAndIndexAllMatter) {
  const CounterRng base(7, 3);
  EXPECT_NE(base.uniform(5), CounterRng(8, 3).uniform(5));
  EXPECT_NE(base.uniform(5), CounterRng(7, 4).uniform(5));
  EXPECT_NE(base.uniform(5), base.uniform(6));
  // High bits of the index and tensor id are part of the counter too.
  EXPECT_NE(base.uniform(5), base.uniform(5 + (uint64_t(1) << 40)));
  EXPECT_NE(base.uniform(5), CounterRng(7, 3 + (uint64_t(1) << 40)).uniform(5));
}

TEST(CounterRng, UniformInRangeWithExpectedMoments) {
  const CounterRng r(1234, 1);
  const int n = 200000;
  double sum = 0, sq = 0, lo = 1, hi = -1;
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform(uint64_t(i));
    ASSERT_GE(u, -1.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sq += u * u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  // U(-1,1): mean 0, variance 1/3; 5-sigma bounds for n samples.
  EXPECT_NEAR(sum / n, 0.0, 5 * std::sqrt(1.0 / 3 / n));
  EXPECT_NEAR(sq / n, 1.0 / 3, 5 * std::sqrt(4.0 / 45 / n));
  EXPECT_LT(lo, -0.999);
  EXPECT_GT(hi, 0.999);
}

TEST(SyntheticData, WeightScalesAndGains) {
  using minictx::Weight;
  for (uint64_t i = 0; i < 100; ++i) {
    EXPECT_LE(std::fabs(minictx::weight_value(1, 0, Weight::wq, 64, i)), 1.0 / 8);
    const double g = minictx::weight_value(1, 0, Weight::g_attn, 64, i);
    EXPECT_GE(g, 0.9);
    EXPECT_LT(g, 1.1);
  }
  EXPECT_NE(minictx::weight_value(1, 0, Weight::wq, 64, 3), minictx::weight_value(1, 1, Weight::wq, 64, 3));
}
