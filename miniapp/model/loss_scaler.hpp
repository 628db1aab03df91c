#pragma once
#include <cstdint>

#include "config/run_config.hpp"

namespace minictx {

// The loss scale of the layer stack's steps, kept as AMP's GradScaler keeps it. Where the
// loss is scaled (RunConfig::checks_gradients) each step's summed weight gradients are
// checked for Inf and NaN. On an overflow a dynamic scale is halved and the step run
// again: GradScaler skips the optimiser's step instead, and the next batch runs at the
// halved scale; minictx's batch is the same every step, so it redoes the step at once,
// and every step it times or verifies ends in finite gradients. After kGrowthInterval
// clean steps in a row the scale doubles (GradScaler's backoff 0.5, growth 2, interval
// 2000). An overflow that halving cannot cure refuses the point (PointRefused): at a fixed
// scale, at the smallest scale (1, Megatron's min_loss_scale, below which unscaling would
// no longer be exact), or when the loss itself is not finite, which no scale changes.
class LossScaler {
 public:
  static constexpr int64_t kGrowthInterval = 2000;

  explicit LossScaler(const RunConfig& cfg);

  double scale() const { return scale_; }
  bool checks() const { return checks_; }
  // The outcome of a checked step: true if it stands, false if the scale was halved and
  // the step is to be run again. Throws PointRefused where halving cannot help.
  bool accept(bool gradients_finite, double loss);
  // Steps run again after an overflow (each halved the scale).
  int64_t overflows() const { return overflows_; }

 private:
  DType dtype_;
  double initial_;
  double scale_;
  bool dynamic_, checks_;
  int64_t overflows_ = 0;
  int64_t clean_ = 0;  // checked steps since the last overflow or growth
};

}  // namespace minictx
