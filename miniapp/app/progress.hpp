#pragma once
// The per-point progress line of `minictx run` (rank 0): where the sweep is, how long it
// has run, and how long the rest should take.
#include <cstddef>
#include <string>

namespace minictx {

class Progress {
 public:
  // `total` points in the sweep, of which `to_run` will actually run (the others are
  // resumed from the file or skipped, and take no time).
  Progress(std::size_t total, std::size_t to_run) : total_(total), to_run_(to_run) {}

  // "[3/12] point_0002 sequence.length=8192 | elapsed 1m05s | ETA 4m20s": the ETA is the
  // mean time of the points run so far times the points left to run, "n/a" before the
  // first has finished. `index` is 0-based; `what` names the point.
  std::string line(std::size_t index, const std::string& what, double elapsed_seconds) const;

  // A point that ran has finished after `seconds`.
  void finished(double seconds);

 private:
  std::size_t total_;
  std::size_t to_run_;
  std::size_t done_ = 0;
  double seconds_ = 0;
};

// 12.3 s | 5m03s | 2h05m
std::string format_duration(double seconds);

}  // namespace minictx
