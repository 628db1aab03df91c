#include "driver/comparison.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "driver/verification.hpp"
#include "reference/reference.hpp"

namespace minictx {

namespace {
constexpr double kFp32Tolerance = 1e-4;
}  // namespace

double verify_tolerance(const RunConfig& cfg) {
  switch (cfg.run.dtype) {
    case DType::f32:
      return kFp32Tolerance;
    case DType::bf16:
      return cfg.model.kv_heads < cfg.model.heads ? 3.5e-2 : 2.5e-2;
    case DType::f16:
      return 5e-3;
  }
  return 0;
}

double row_tolerance(const RunConfig& cfg, const std::string& tensor) {
  return tensor == kLossOfYCheck ? kFp32Tolerance : verify_tolerance(cfg);
}

namespace {

// Σ f(c_i y_i) / (B·S) over the loss's terms.
template <class Term>
double over_terms(const RunConfig& cfg, const std::vector<double>& y, Term f) {
  const std::vector<double> c = reference::make_loss_weights(reference_problem(cfg));
  double sum = 0;
  for (size_t i = 0; i < c.size() && i < y.size(); ++i) sum += f(c[i] * y[i]);
  return sum / (double(cfg.sequence.batch) * double(cfg.sequence.length));
}

}  // namespace

double loss_scale_of_terms(const RunConfig& cfg, const std::vector<double>& y) {
  if (cfg.model.vocab > 0) return 0;  // cross-entropy terms are all positive: no cancellation
  const double tokens = double(cfg.sequence.batch) * double(cfg.sequence.length);
  return std::sqrt(over_terms(cfg, y, [](double t) { return t * t; }) * tokens) / tokens;
}

double loss_of(const RunConfig& cfg, const std::vector<double>& y) {
  return over_terms(cfg, y, [](double t) { return t; });
}

VerifyRow compare_tensor(const std::string& name, const std::vector<double>& got,
                         const std::vector<double>& ref, double tolerance, double scale) {
  VerifyRow row;
  row.tensor = name;
  row.tolerance = tolerance;
  bool finite = got.size() == ref.size();
  double max_ref = 0, sq = 0, ref_sq = 0;
  for (size_t i = 0; finite && i < got.size(); ++i) {
    finite = std::isfinite(got[i]);
    const double err = std::fabs(got[i] - ref[i]);
    row.max_abs_err = std::max(row.max_abs_err, err);
    max_ref = std::max(max_ref, std::fabs(ref[i]));
    sq += err * err;
    ref_sq += ref[i] * ref[i];
  }
  if (!finite) {
    row.max_abs_err = row.max_rel_err = row.rmse = NAN;
    row.pass = false;
    return row;
  }
  row.rmse = got.empty() ? 0 : std::sqrt(sq / double(got.size()));
  if (scale > 0) {
    row.max_rel_err = row.max_abs_err / scale;
    row.rms_rel_err = row.rmse / scale;
  } else {
    row.max_rel_err = max_ref > 0 ? row.max_abs_err / max_ref : row.max_abs_err;
    row.rms_rel_err = ref_sq > 0 ? std::sqrt(sq / ref_sq) : row.rmse;
  }
  row.pass = row.max_rel_err <= tolerance;
  return row;
}

namespace {

const DumpArray& named(const std::vector<DumpArray>& arrays, const std::string& name) {
  for (const auto& a : arrays)
    if (a.name == name) return a;
  fail("verify: the reference has no " + name);
}

}  // namespace

std::vector<VerifyRow> compare_arrays(const RunConfig& cfg, const std::vector<DumpArray>& got,
                                      const std::vector<DumpArray>& ref,
                                      const std::vector<DumpArray>* single) {
  const double tol = verify_tolerance(cfg);
  // The loss's error against the scale of its terms, in either reference's y.
  auto scale_of = [&](const std::string& name, const std::vector<DumpArray>& against) {
    return name == kLossTensor ? loss_scale_of_terms(cfg, named(against, kOutputTensor).data) : 0.0;
  };
  std::vector<VerifyRow> rows;
  for (const DumpArray& a : got) {
    rows.push_back(compare_tensor(a.name, a.data, named(ref, a.name).data, tol, scale_of(a.name, ref)));
    if (!single) continue;
    const VerifyRow s =
        compare_tensor(a.name, a.data, named(*single, a.name).data, tol, scale_of(a.name, *single));
    rows.back().single_max_rel_err = s.max_rel_err;
    rows.back().single_rms_rel_err = s.rms_rel_err;
  }
  // The one-device run against the same reference: the baseline of the run's own errors.
  if (single)
    for (const DumpArray& a : *single)
      rows.push_back(compare_tensor(kOneDevicePrefix + a.name, a.data, named(ref, a.name).data, tol,
                                    scale_of(a.name, ref)));
  for (const DumpArray& a : got)
    if (a.name == kLossTensor && cfg.model.vocab == 0) {
      const std::vector<double>& y = named(got, kOutputTensor).data;
      rows.push_back(compare_tensor(kLossOfYCheck, a.data, {loss_of(cfg, y)},
                                    row_tolerance(cfg, kLossOfYCheck), loss_scale_of_terms(cfg, y)));
    }
  return rows;
}

bool all_pass(const std::vector<VerifyRow>& rows) {
  return std::all_of(rows.begin(), rows.end(), [](const VerifyRow& r) { return r.pass; });
}

}  // namespace minictx
