#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <string>

namespace minictx {

// Wall time accumulated per named phase (forward, attention_fwd, grad_allreduce, ...).
// Phases may nest; each accumulates its own inclusive time.
class PhaseTimer {
 public:
  class Scope {
   public:
    Scope(PhaseTimer& t, const char* phase) : timer_(t), phase_(phase), start_((t.fence(), clock::now())) {}
    ~Scope() {
      timer_.fence();
      timer_.seconds_[phase_] += std::chrono::duration<double>(clock::now() - start_).count();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseTimer& timer_;
    const char* phase_;
    std::chrono::steady_clock::time_point start_;
  };
  using clock = std::chrono::steady_clock;

  Scope scope(const char* phase) { return Scope(*this, phase); }
  const std::map<std::string, double>& seconds() const { return seconds_; }
  void clear() { seconds_.clear(); }
  // Called at every phase boundary: an asynchronous device drains its queue there, so
  // a phase's time is its work's, not the time to queue it.
  void set_fence(std::function<void()> fence) { fence_ = std::move(fence); }

 private:
  void fence() {
    if (fence_) fence_();
  }
  std::map<std::string, double> seconds_;
  std::function<void()> fence_;
};

}  // namespace minictx
