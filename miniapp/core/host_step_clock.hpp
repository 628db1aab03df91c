#pragma once
#include <chrono>
#include <vector>

#include "core/step_clock.hpp"

namespace minictx {

// The host's steady clock: right for a device whose kernels have returned when the call
// returns (the host device), where a mark costs one clock read and one push.
class HostStepClock final : public StepClock {
 public:
  void start() override {
    zero_ = clock::now();
    marks_.clear();
  }
  Mark mark() override {
    marks_.push_back(clock::now());
    return Mark(marks_.size() - 1);
  }
  std::vector<double> seconds() override {
    std::vector<double> s;
    s.reserve(marks_.size());
    for (const auto& t : marks_) s.push_back(std::chrono::duration<double>(t - zero_).count());
    return s;
  }
  const char* name() const override { return "host steady_clock"; }

 private:
  using clock = std::chrono::steady_clock;
  clock::time_point zero_;
  std::vector<clock::time_point> marks_;
};

}  // namespace minictx
