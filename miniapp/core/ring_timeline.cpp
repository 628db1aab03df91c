#include "core/ring_timeline.hpp"

#include <limits>
#include <utility>

#include "core/error.hpp"

namespace minictx {

const char* to_string(WalkPass pass) {
  switch (pass) {
    case WalkPass::forward:
      return "forward";
    case WalkPass::backward:
      return "backward";
    case WalkPass::recompute:
      return "recompute";
  }
  return "?";
}

const char* to_string(OuterCarries carries) {
  switch (carries) {
    case OuterCarries::block:
      return "block";
    case OuterCarries::sums:
      return "sums";
  }
  return "?";
}

RingTimeline::RingTimeline(std::unique_ptr<StepClock> clock) : clock_(std::move(clock)) {
  require(clock_ != nullptr, "ring timeline: no clock");
}

void RingTimeline::start() {
  steps_.clear();
  marks_.clear();
  outer_.clear();
  outer_marks_.clear();
  clock_->start();
  recording_ = true;
}

void RingTimeline::stop() {
  recording_ = false;
  const std::vector<double> seconds = clock_->seconds();
  const auto at = [&](StepClock::Mark m) {
    if (m == kNoMark) return std::numeric_limits<double>::quiet_NaN();
    require(m >= 0 && size_t(m) < seconds.size(), "ring timeline: a mark the clock did not take");
    return seconds[size_t(m)];
  };
  for (size_t i = 0; i < steps_.size(); ++i) {
    steps_[i].compute_start = at(marks_[i].compute_start);
    steps_[i].compute_end = at(marks_[i].compute_end);
    steps_[i].transfer_posted = at(marks_[i].transfer_posted);
    steps_[i].transfer_done = at(marks_[i].transfer_done);
  }
  marks_.clear();
  for (size_t i = 0; i < outer_.size(); ++i) {
    outer_[i].transfer_posted = at(outer_marks_[i].first);
    outer_[i].transfer_done = at(outer_marks_[i].second);
  }
  outer_marks_.clear();
}

void RingTimeline::add_step(int round, int step, int source, const StepMarks& marks) {
  if (!recording_) return;
  // The rank is the gather's to fill, the times stop()'s.
  steps_.push_back(RingStep{0, layer_, pass_, round, step, source, 0, 0, 0, 0});
  marks_.push_back(marks);
}

void RingTimeline::add_outer(int round, OuterCarries carries, StepClock::Mark posted, StepClock::Mark done) {
  if (!recording_) return;
  outer_.push_back(OuterTransfer{0, layer_, pass_, round, carries, 0, 0});
  outer_marks_.emplace_back(posted, done);
}

}  // namespace minictx
