#pragma once
// verify's comparison of a run's tensors with a reference's: one table row per tensor, and
// the tolerance each is held to (docs/numerics.md, "What verify measures").
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "io/array_dump.hpp"
#include "io/results.hpp"

namespace minictx {

// The model's outputs by their names in the table and the dumps.
inline const char* const kLossTensor = "outputs/loss";
inline const char* const kOutputTensor = "outputs/y";
// The prefix of the rows that hold the one-device run against the reference.
inline const char* const kOneDevicePrefix = "one-device/";
// The table's row for the run's loss against the loss of the run's own y.
inline const char* const kLossOfYCheck = "checks/loss_of_y";

// Error-bound on max |x − ref| / max |ref| for a run's precision (DESIGN: fp32 ~1e-4,
// bf16 2.5e-2 as TransformerEngine, 3.5e-2 with GQA, fp16 5e-3).
double verify_tolerance(const RunConfig& cfg);

// The tolerance of a table's row: kLossOfYCheck's is fp32's whatever the dtype, every
// other row's the dtype's.
double row_tolerance(const RunConfig& cfg, const std::string& tensor);

// One table row from a tensor and its reference. Relative errors are relative to `scale`
// where it is given (> 0), else to max |ref| (max_rel_err) and rms(ref) (rms_rel_err).
VerifyRow compare_tensor(const std::string& name, const std::vector<double>& got,
                         const std::vector<double>& ref, double tolerance, double scale = 0);

// The scale of the loss's error: the root-sum-square of the terms it sums, sqrt(Σ (c∘y)²)
// / (B·S) over a reference's y. The loss is a sum of terms of both signs that can cancel
// to near zero, so its error relative to itself would measure the cancellation; errors of
// the terms that are independent add up to their root-sum-square times the terms' own
// relative error, the error the dtype's tolerance bounds, while a loss that is zero or
// off by a fraction of itself lands a fraction of that scale away. 0 (the loss relative to
// itself) for the LM head's cross-entropy (model.vocab), whose terms are all positive.
double loss_scale_of_terms(const RunConfig& cfg, const std::vector<double>& y);

// The loss of a y: Σ c∘y / (B·S), summed in fp64.
double loss_of(const RunConfig& cfg, const std::vector<double>& y);

// The table: each array of `got` against the array of the same name in `ref`, and where
// `single` is given against its array too (the single_* columns, outside the verdict);
// with `single`, its own arrays against `ref` as well, in rows named kOneDevicePrefix +
// the tensor: the one-device run's error, which a distributed run's is measured against
// (docs/numerics.md, "The error study").
// The loss is measured on the scale of its terms in the y of the reference it meets. In
// model mode without an LM head one more row, kLossOfYCheck, holds the run's loss against loss_of(its own y)
// on the same scale, at fp32's tolerance whatever the dtype (the loss is summed in fp32 or
// wider from the y the run stores): where a 16-bit tolerance on the loss's scale cannot
// tell a loss near zero from a wrong one, this row can.
std::vector<VerifyRow> compare_arrays(const RunConfig& cfg, const std::vector<DumpArray>& got,
                                      const std::vector<DumpArray>& ref,
                                      const std::vector<DumpArray>* single = nullptr);

// The verdict: every row within its tolerance (a NaN or Inf fails its row).
bool all_pass(const std::vector<VerifyRow>& rows);

}  // namespace minictx
