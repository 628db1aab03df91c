#pragma once
// Timing an operation on every rank of a communicator at once, as the ranks of a run load
// the machine: one rule for the kernel bench and the comm bench.
#include <algorithm>
#include <functional>
#include <vector>

#include "bench/bench_clock.hpp"
#include "comm/comm.hpp"

namespace minictx {

// Best time of `op`, repeated at least `min_reps` times and until min_seconds were spent.
// Every repetition starts on all ranks together (a barrier) and counts as its slowest
// rank's time, which every rank learns, so all stop after the same repetition: long
// operations run once, short ones often enough that a first call's page faults do not
// count. `prepare` runs before each repetition, untimed.
template <class Op>
double lockstep_best_seconds(Comm& c, double min_seconds, int min_reps, BenchClock clock, const Op& op,
                             const std::function<void()>& prepare = {}) {
  double best = 1e300, spent = 0;
  std::vector<double> times(size_t(c.size()));
  for (int reps = 0; reps < min_reps || spent < min_seconds; ++reps) {
    if (prepare) prepare();
    c.barrier();
    const double t0 = bench_now(clock);
    op();
    double mine = bench_now(clock) - t0;
    c.gather_doubles(&mine, times.data(), 1);
    const double t = *std::max_element(times.begin(), times.end());
    best = std::min(best, t);
    spent += t;
  }
  return best;
}

}  // namespace minictx
