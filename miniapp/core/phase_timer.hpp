#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/host_step_clock.hpp"
#include "core/profiler_region.hpp"
#include "core/step_clock.hpp"

namespace minictx {

// Time accumulated per named phase (forward, attention_fwd, grad_allreduce, ...). Phases
// may nest; each accumulates its own inclusive time. A scope's ends are marks of a
// StepClock: the host's steady clock, or the device's (CUDA events on its queue), so an
// asynchronous device is timed without draining its queue at every phase boundary. The
// marks become seconds in settle(), after the step. A scope is also a profiler region of
// the phase's name (core/profiler_region.hpp), so a profiler sees the phases the results
// file times.
class PhaseTimer {
 public:
  class Scope {
   public:
    Scope(PhaseTimer& t, const char* phase)
        : timer_(t), phase_(phase), region_(phase), begin_(t.clock_->mark()) {}
    ~Scope() { timer_.pending_.push_back({phase_, begin_, timer_.clock_->mark()}); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseTimer& timer_;
    const char* phase_;
    ProfilerRegion region_;  // closes after the end mark
    StepClock::Mark begin_;
  };

  // One closed scope: seconds after the clock's zero (the settle before it).
  struct Span {
    const char* phase;
    double start, end;
  };

  explicit PhaseTimer(std::unique_ptr<StepClock> clock = std::make_unique<HostStepClock>())
      : clock_(std::move(clock)) {
    clock_->start();
  }

  Scope scope(const char* phase) { return Scope(*this, phase); }
  // Adds the scopes closed since the last settle to their phases (a device clock waits for
  // its queue here) and makes this the zero of the next scopes' times. Call it after a
  // step, outside every scope.
  void settle() {
    const std::vector<double> at = clock_->seconds();
    settled_.clear();
    for (const Closed& c : pending_) {
      const double start = at[size_t(c.begin)], end = at[size_t(c.end)];
      seconds_[c.phase] += end - start;
      settled_.push_back({c.phase, start, end});
    }
    pending_.clear();
    clock_->start();
  }
  // The scopes the last settle added, in the order they closed.
  const std::vector<Span>& settled() const { return settled_; }
  const std::map<std::string, double>& seconds() {
    settle();
    return seconds_;
  }
  void clear() {
    settle();
    seconds_.clear();
  }

 private:
  struct Closed {
    const char* phase;
    StepClock::Mark begin, end;
  };
  std::unique_ptr<StepClock> clock_;
  std::vector<Closed> pending_;
  std::vector<Span> settled_;
  std::map<std::string, double> seconds_;
};

}  // namespace minictx
