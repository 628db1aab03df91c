#include "comm/watchdog.hpp"

#include <algorithm>
#include <cstdio>

namespace minictx::watchdog {
namespace {

struct State {
  double configured = -1;
  double slowest_step = 0;
  std::string point;
};

State& state() {
  static State s;
  return s;
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g s", s);
  return text;
}

}  // namespace

void configure(double seconds) { state().configured = seconds; }

void set_point(const std::string& what) { state().point = what; }

void step_completed(double seconds) { state().slowest_step = std::max(state().slowest_step, seconds); }

double limit_seconds() {
  const State& s = state();
  if (s.configured >= 0) return s.configured;
  return std::max(kMinAutomaticSeconds, 10 * s.slowest_step);
}

std::string limit_description() {
  const State& s = state();
  if (s.configured >= 0) return "run.watchdog_seconds = " + seconds_text(s.configured);
  return "automatic: ten times the slowest step (" + seconds_text(s.slowest_step) + "), at least " +
         seconds_text(kMinAutomaticSeconds);
}

const std::string& point() { return state().point; }

}  // namespace minictx::watchdog
