#include "model/loss_scaler.hpp"

#include <charconv>
#include <cmath>

#include "core/error.hpp"

namespace minictx {
namespace {

// The shortest text that reads back to x: a scale of 2^40 prints all its digits.
std::string number(double x) {
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof text, x).ptr);
}

}  // namespace

LossScaler::LossScaler(const RunConfig& cfg)
    : dtype_(cfg.run.dtype),
      initial_(cfg.loss_scale()),
      scale_(initial_),
      dynamic_(cfg.dynamic_loss_scale()),
      checks_(cfg.checks_gradients()) {}

bool LossScaler::accept(bool gradients_finite, double loss) {
  if (!std::isfinite(loss))
    throw PointRefused(
        "the loss is " + number(loss) + ": the forward overflows " + to_string(dtype_) +
        ", which no loss scale changes (a smaller run.input_scale keeps the activations in range)");
  if (gradients_finite) {
    if (dynamic_ && ++clean_ == kGrowthInterval) {
      scale_ *= 2;
      clean_ = 0;
    }
    return true;
  }
  const std::string overflow =
      "the weight gradients overflow " + std::string(to_string(dtype_)) + " (Inf or NaN) ";
  if (!dynamic_)
    throw PointRefused(overflow + "at the fixed run.loss_scale " + number(scale_) +
                       ": set run.loss_scale to dynamic, or to a smaller power of two");
  if (scale_ <= 1)
    throw PointRefused(overflow + "even at loss scale 1, after " + std::to_string(overflows_) +
                       " halvings from run.initial_loss_scale " + number(initial_) +
                       ": this point's backward exceeds fp16's range unscaled");
  scale_ /= 2;
  clean_ = 0;
  ++overflows_;
  return false;
}

}  // namespace minictx
