// verify's checks can fail: one step of the app against the fp64 reference on one rank,
// VALID as it comes, then the app's arrays mutated before the comparison. A loss of zero,
// a loss off by 1 %, a gradient moved by as many ulps of the dtype as its tolerance allows
// and one more, and, for every tensor verify compares in either mode, its largest element
// moved by twice its tolerance (the negative control of that comparison) are INVALID.
// tests/mpi/failsafe.cmake launches one mutation end to end (MINICTX_INJECT_FAULT zero_loss).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "comm/mpi_comm.hpp"
#include "device/kokkos_device.hpp"
#include "driver/verification.hpp"

using namespace minictx;

namespace {

KokkosDevice& device() {
  static KokkosDevice dev;
  return dev;
}

RunConfig small(Mode mode, DType dtype) {
  RunConfig c;
  c.run.mode = mode;
  c.run.dtype = dtype;
  c.model = {"custom", 2, 64, 4, 2, 16, 96};  // layers, d_model, heads, kv_heads, head_dim, ffn_hidden
  c.sequence.length = 128;
  c.sequence.batch = 2;
  c.attention.block_q = 8;
  c.attention.block_k = 16;
  c.run.seed = 3;
  return c;
}

const DumpArray& named(const std::vector<DumpArray>& arrays, const std::string& name) {
  for (const DumpArray& a : arrays)
    if (a.name == name) return a;
  throw std::runtime_error("verify compares no " + name);
}

struct Compared {
  RunConfig cfg;
  std::vector<DumpArray> got, ref;
  bool valid() const { return all_pass(compare_arrays(cfg, got, ref)); }
  DumpArray& tensor(const std::string& name) {
    for (DumpArray& a : got)
      if (a.name == name) return a;
    throw std::runtime_error("verify compares no " + name);
  }
};

Compared run(Mode mode, DType dtype) {
  Compared c{small(mode, dtype), {}, {}};
  device().configure({dtype});
  auto world = MpiComm::world(1);
  c.got = run_point(c.cfg, *world, device());
  c.ref = fp64_arrays(c.cfg, fp64_result(c.cfg), c.got);
  return c;
}

// The spacing of the dtype's numbers at |x|: 2^floor(log2 |x|) times its epsilon.
double ulp(double x, DType dtype) {
  const int mantissa = dtype == DType::f32 ? 23 : dtype == DType::bf16 ? 7 : 10;
  return std::ldexp(1.0, std::ilogb(x) - mantissa);
}

// The fewest ulps that move every element by more than `tolerance` of itself: an ulp is
// at least half the epsilon of |x|.
int ulps_beyond(double tolerance, DType dtype) {
  const int mantissa = dtype == DType::f32 ? 23 : dtype == DType::bf16 ? 7 : 10;
  return int(std::floor(2 * tolerance * std::ldexp(1.0, mantissa))) + 1;
}

const std::vector<std::pair<Mode, DType>> kRuns = {{Mode::model, DType::f32},
                                                   {Mode::model, DType::bf16},
                                                   {Mode::model, DType::f16},
                                                   {Mode::attention, DType::f32}};

}  // namespace

TEST(VerifyControls, TheRunAsItComesIsValid) {
  for (auto [mode, dtype] : kRuns)
    EXPECT_TRUE(run(mode, dtype).valid()) << to_string(mode) << " " << to_string(dtype);
}

TEST(VerifyControls, AZeroLossIsInvalid) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    Compared c = run(Mode::model, dtype);
    c.tensor(kLossTensor).data = {0.0};
    EXPECT_FALSE(c.valid()) << to_string(dtype);
  }
}

// 1 % of the loss is below bf16's and fp16's tolerance on the loss's scale (the scale its
// terms' rounding errors add up to): an fp32 run is where it shows.
TEST(VerifyControls, ALossOffByOnePercentIsInvalid) {
  Compared c = run(Mode::model, DType::f32);
  c.tensor(kLossTensor).data[0] *= 1.01;
  EXPECT_FALSE(c.valid());
}

TEST(VerifyControls, AGradientOffByUlpsBeyondItsToleranceIsInvalid) {
  for (auto [mode, dtype] : kRuns) {
    Compared c = run(mode, dtype);
    const double tol = verify_tolerance(c.cfg);
    const int n = ulps_beyond(tol, dtype);
    for (const char* name : {"grads/x", "grads/layer1/wk", "grads/k"}) {
      Compared m = c;
      bool present = false;
      for (DumpArray& a : m.got)
        if (a.name == name) {
          present = true;
          for (double& x : a.data) x += x == 0 ? 0 : std::copysign(n * ulp(x, dtype), x);
        }
      if (present) {
        EXPECT_FALSE(m.valid()) << name << " " << to_string(dtype) << " " << n << " ulps";
      }
    }
  }
}

// Every comparison can fail, and only through what it compares: the largest element of a
// tensor moved by twice the tolerance on its row's scale (max |ref|; the loss's scale of
// terms) fails that tensor's row and, for the loss, the check of the loss against its own
// y; moved by half of it, every row passes. Every row of the table fails under one of them.
TEST(VerifyControls, EveryComparisonHasANegativeControl) {
  for (Mode mode : {Mode::attention, Mode::model}) {
    const Compared c = run(mode, DType::f32);
    const double tol = verify_tolerance(c.cfg);
    std::set<std::string> failed;
    for (size_t i = 0; i < c.got.size(); ++i) {
      const std::string& name = c.got[i].name;
      const std::vector<double>& ref = c.ref[i].data;
      const size_t largest =
          size_t(std::max_element(ref.begin(), ref.end(),
                                  [](double a, double b) { return std::fabs(a) < std::fabs(b); }) -
                 ref.begin());
      const double scale = name == kLossTensor ? loss_scale_of_terms(c.cfg, named(c.ref, kOutputTensor).data)
                                               : std::fabs(ref[largest]);
      for (double factor : {2.0, 0.5}) {
        Compared m = c;
        m.got[i].data[largest] = ref[largest] + factor * tol * scale;
        for (const VerifyRow& row : compare_arrays(m.cfg, m.got, m.ref)) {
          const bool own = row.tensor == name || (name == kLossTensor && row.tensor == kLossOfYCheck);
          EXPECT_EQ(row.pass, !own || factor < 1)
              << name << " moved by " << factor << " tolerances, row " << row.tensor;
          if (!row.pass) failed.insert(row.tensor);
        }
      }
    }
    for (const VerifyRow& row : compare_arrays(c.cfg, c.got, c.ref))
      EXPECT_EQ(failed.count(row.tensor), 1u) << row.tensor << " has no negative control";
  }
}

// Beside a 16-bit run verify compares its one-device run with the same reference, in rows of
// their own (the baseline of the error study's ratio); they fail like any other.
TEST(VerifyControls, TheOneDeviceRunHasRowsOfItsOwn) {
  Compared c = run(Mode::model, DType::bf16);
  std::vector<DumpArray> single = c.got;
  auto rows = compare_arrays(c.cfg, c.got, c.ref, &single);
  size_t own = 0;
  for (const VerifyRow& row : rows)
    if (row.tensor.rfind(kOneDevicePrefix, 0) == 0) {
      ++own;
      EXPECT_TRUE(row.pass) << row.tensor;
    }
  EXPECT_EQ(own, c.got.size());
  for (DumpArray& a : single)
    if (a.name == kOutputTensor)
      for (double& x : a.data) x *= 1.5;
  rows = compare_arrays(c.cfg, c.got, c.ref, &single);
  EXPECT_FALSE(all_pass(rows));
  for (const VerifyRow& row : rows)
    EXPECT_EQ(row.pass, row.tensor != std::string(kOneDevicePrefix) + kOutputTensor) << row.tensor;
}
