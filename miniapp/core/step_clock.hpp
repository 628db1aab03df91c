#pragma once
#include <cstdint>
#include <vector>

namespace minictx {

// Timestamps of one rank's work within one step. The host takes them from a steady clock
// when asked; a device that queues its work asynchronously cannot (the host only knows when
// work was queued), so it records events on its queue and resolves them once the step's
// work has drained. Hence the two halves: mark() during the step, seconds() after it.
class StepClock {
 public:
  using Mark = int32_t;  // an index into seconds()

  virtual ~StepClock() = default;
  // The zero of the marks that follow; earlier marks are forgotten.
  virtual void start() = 0;
  // A timestamp of this point in the rank's work.
  virtual Mark mark() = 0;
  // Every mark since start(), in seconds after it, in mark order. Called after the step
  // (a device clock may wait here for its queue).
  virtual std::vector<double> seconds() = 0;
  // What the times are, for the results file ("host steady_clock").
  virtual const char* name() const = 0;
};

}  // namespace minictx
