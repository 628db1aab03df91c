#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/enum_names.hpp"
#include "core/step_clock.hpp"

namespace minictx {

// Which pass of the model a ring walk serves. The walk itself only knows forward or
// backward; a forward walk run again by checkpointing's recompute is the model's to name.
enum class WalkPass { forward, backward, recompute };
const char* to_string(WalkPass pass);
constexpr int enum_size(WalkPass) { return 3; }  // for parse_enum (core/enum_names.hpp)

// One ring step of one rank: the visit of one source's block (compute) and the inner-ring
// transfer posted just before it and waited for just after it. Times are seconds after the
// start of the recorded iteration on this rank's clock; a step that moves nothing (the last
// of a forward round) has NaN transfer times.
struct RingStep {
  int rank = 0;  // world rank that ran the step (filled when the ranks' records are gathered)
  int layer = 0;
  WalkPass pass = WalkPass::forward;
  int round = 0;   // outer-ring round (0 on a plain ring)
  int step = 0;    // inner-ring step within the round
  int source = 0;  // world rank whose block was visited
  double compute_start = 0, compute_end = 0;
  double transfer_posted = 0, transfer_done = 0;
};

// What an outer-ring transfer of a two-level ring carries: the block a window began its
// round with, on to the next window; or, in the backward, a round's gradient sums.
enum class OuterCarries { block, sums };
const char* to_string(OuterCarries carries);
constexpr int enum_size(OuterCarries) { return 2; }  // for parse_enum (core/enum_names.hpp)

// One outer-ring transfer of one rank. It belongs to no ring step: a block's spans its
// round, a round's sums are waited for a round later (or after the walk's last round).
// Times as in RingStep.
struct OuterTransfer {
  int rank = 0;  // world rank that posted it (filled when the ranks' records are gathered)
  int layer = 0;
  WalkPass pass = WalkPass::forward;
  int round = 0;  // the round that carried the block, or whose sums it carries
  OuterCarries carries = OuterCarries::block;
  double transfer_posted = 0, transfer_done = 0;
};

// Records the ring steps and outer-ring transfers of one iteration, as RingWalk runs
// them, between start() and stop(); outside them every hook is one branch, so it may stay
// attached to the walks. The model names the walk (layer, pass) before it calls the
// attention; the walk adds a step's or a transfer's marks. Nothing here communicates: the
// records are gathered after the timed loop.
class RingTimeline {
 public:
  explicit RingTimeline(std::unique_ptr<StepClock> clock);

  void start();
  // Ends the recording and turns its marks into times (after the device has drained).
  void stop();
  bool recording() const { return recording_; }
  const char* clock_name() const { return clock_->name(); }

  void set_walk(int layer, WalkPass pass) {
    layer_ = layer;
    pass_ = pass;
  }
  // What the walk marks at each step; kNoMark where it did not happen (no transfer).
  static constexpr StepClock::Mark kNoMark = -1;
  struct StepMarks {
    StepClock::Mark transfer_posted = kNoMark, compute_start = kNoMark, compute_end = kNoMark,
                    transfer_done = kNoMark;
  };
  StepClock::Mark mark() { return recording_ ? clock_->mark() : kNoMark; }
  void add_step(int round, int step, int source, const StepMarks& marks);
  // An outer transfer, once it is done.
  void add_outer(int round, OuterCarries carries, StepClock::Mark posted, StepClock::Mark done);

  // The steps of the last recording, in the order they ran.
  const std::vector<RingStep>& steps() const { return steps_; }
  // Its outer transfers, in the order they completed.
  const std::vector<OuterTransfer>& outer() const { return outer_; }

 private:
  std::unique_ptr<StepClock> clock_;
  bool recording_ = false;
  int layer_ = 0;
  WalkPass pass_ = WalkPass::forward;
  std::vector<RingStep> steps_;
  std::vector<StepMarks> marks_;  // steps_[i]'s marks until stop() resolves them
  std::vector<OuterTransfer> outer_;
  std::vector<std::pair<StepClock::Mark, StepClock::Mark>> outer_marks_;  // outer_[i]'s (posted, done)
};

}  // namespace minictx
