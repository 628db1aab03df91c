#pragma once
// Timing an operation on every rank of a communicator at once, as the ranks of a run load
// the machine: one rule for the kernel bench, the device bench and the comm bench.
#include <algorithm>
#include <functional>
#include <vector>

#include "bench/bench_clock.hpp"
#include "bench/calibration.hpp"
#include "comm/comm.hpp"
#include "device/device.hpp"

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

// The ranks of a bench, all measuring the same rows at once, each on its own core or GPU,
// as the ranks of a run load the machine. With one rank, a bench of one core (one GPU).
class Lockstep {
 public:
  explicit Lockstep(Comm& world) : world_(world) {}

  // Best time of `f`, the slowest rank's of each repetition.
  template <class F>
  double best_seconds(double min_seconds, BenchClock clock, F&& f, const std::function<void()>& prepare = {},
                      int min_reps = 1) {
    return lockstep_best_seconds(world_, min_seconds, min_reps, clock, f, prepare);
  }

  // The slowest rank's GEMM calibration (square, side n, best of `repeats`), all ranks
  // measuring at once.
  double calibration_gflops(Device& device, BenchClock clock, int n = 1024, int repeats = 5) {
    world_.barrier();
    return smallest(measure_gemm_tflops(device, n, repeats, clock) * 1e3);
  }

  double largest(double mine) {
    std::vector<double> all(size_t(world_.size()));
    world_.gather_doubles(&mine, all.data(), 1);
    return *std::max_element(all.begin(), all.end());
  }
  double smallest(double mine) { return -largest(-mine); }

 private:
  Comm& world_;
};

}  // namespace minictx
