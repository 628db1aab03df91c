#include "app/progress.hpp"

#include <cmath>
#include <cstdio>

namespace minictx {

std::string Progress::line(std::size_t index, const std::string& what, double elapsed_seconds) const {
  std::string eta = "n/a";
  if (done_ > 0) {
    const std::size_t left = to_run_ > done_ ? to_run_ - done_ : 0;
    eta = format_duration(seconds_ / double(done_) * double(left));
  }
  return "[" + std::to_string(index + 1) + "/" + std::to_string(total_) + "] " + what + " | elapsed " +
         format_duration(elapsed_seconds) + " | ETA " + eta;
}

void Progress::finished(double seconds) {
  ++done_;
  seconds_ += seconds;
}

std::string format_duration(double seconds) {
  char text[32];
  if (seconds < 60) {
    std::snprintf(text, sizeof text, "%.1f s", seconds);
    return text;
  }
  const long whole = std::lround(seconds);
  if (whole < 3600)
    std::snprintf(text, sizeof text, "%ldm%02lds", whole / 60, whole % 60);
  else
    std::snprintf(text, sizeof text, "%ldh%02ldm", whole / 3600, (whole % 3600) / 60);
  return text;
}

}  // namespace minictx
