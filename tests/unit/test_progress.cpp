// The progress line of `minictx run`: position, elapsed time and the ETA from the points
// that ran so far.
#include <gtest/gtest.h>

#include "app/progress.hpp"

namespace minictx {
namespace {

TEST(Progress, FormatsDurations) {
  EXPECT_EQ(format_duration(0), "0.0 s");
  EXPECT_EQ(format_duration(12.34), "12.3 s");
  EXPECT_EQ(format_duration(65), "1m05s");
  EXPECT_EQ(format_duration(3599.4), "59m59s");
  EXPECT_EQ(format_duration(7500), "2h05m");
}

TEST(Progress, EtaIsTheMeanPointTimeTimesThePointsLeftToRun) {
  // 10 points, of which 4 run (the others were resumed or skipped).
  Progress p(10, 4);
  EXPECT_EQ(p.line(0, "point_0000 sequence.length=4096", 0.5),
            "[1/10] point_0000 sequence.length=4096 | elapsed 0.5 s | ETA n/a");
  p.finished(10);
  EXPECT_EQ(p.line(5, "point_0005", 10.5), "[6/10] point_0005 | elapsed 10.5 s | ETA 30.0 s");
  p.finished(30);
  EXPECT_EQ(p.line(6, "point_0006", 40.5), "[7/10] point_0006 | elapsed 40.5 s | ETA 40.0 s");
  p.finished(20);
  p.finished(20);
  EXPECT_EQ(p.line(9, "point_0009", 80), "[10/10] point_0009 | elapsed 1m20s | ETA 0.0 s");
}

}  // namespace
}  // namespace minictx
