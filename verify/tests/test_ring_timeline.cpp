// The ring timeline recorder: records only between start() and stop(), labels each step
// with the walk the model named, and resolves the clock's marks (NaN where none was taken).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "core/ring_timeline.hpp"

using minictx::RingTimeline;
using minictx::StepClock;
using minictx::WalkPass;

namespace {

// Mark i is at i + 1 seconds; counts its starts, so a test sees the clock restarted.
class CountingClock final : public StepClock {
 public:
  explicit CountingClock(int* starts) : starts_(starts) {}
  void start() override {
    ++*starts_;
    marks_ = 0;
  }
  Mark mark() override { return marks_++; }
  std::vector<double> seconds() override {
    std::vector<double> s;
    for (int i = 0; i < marks_; ++i) s.push_back(i + 1.0);
    return s;
  }
  const char* name() const override { return "counting"; }

 private:
  int* starts_;
  int marks_ = 0;
};

}  // namespace

TEST(RingTimeline, RecordsOnlyWhileStarted) {
  int starts = 0;
  RingTimeline t(std::make_unique<CountingClock>(&starts));
  EXPECT_EQ(t.mark(), RingTimeline::kNoMark);
  t.add_step(0, 0, 1, {});
  EXPECT_TRUE(t.steps().empty());

  t.start();
  t.set_walk(3, WalkPass::recompute);
  RingTimeline::StepMarks m;
  m.transfer_posted = t.mark();
  m.compute_start = t.mark();
  m.compute_end = t.mark();
  m.transfer_done = t.mark();
  t.add_step(1, 2, 5, m);
  t.set_walk(3, WalkPass::backward);
  RingTimeline::StepMarks last;  // a step that moves nothing
  last.compute_start = t.mark();
  last.compute_end = t.mark();
  t.add_step(1, 3, 6, last);
  t.stop();
  t.add_step(0, 0, 0, m);  // after stop(): ignored

  ASSERT_EQ(t.steps().size(), 2u);
  const auto& a = t.steps()[0];
  EXPECT_EQ(a.layer, 3);
  EXPECT_EQ(a.pass, WalkPass::recompute);
  EXPECT_EQ(a.round, 1);
  EXPECT_EQ(a.step, 2);
  EXPECT_EQ(a.source, 5);
  EXPECT_EQ(a.transfer_posted, 1.0);
  EXPECT_EQ(a.compute_start, 2.0);
  EXPECT_EQ(a.compute_end, 3.0);
  EXPECT_EQ(a.transfer_done, 4.0);
  const auto& b = t.steps()[1];
  EXPECT_EQ(b.pass, WalkPass::backward);
  EXPECT_EQ(b.compute_start, 5.0);
  EXPECT_TRUE(std::isnan(b.transfer_posted) && std::isnan(b.transfer_done));

  t.start();  // a new recording forgets the last one
  EXPECT_EQ(starts, 2);
  t.stop();
  EXPECT_TRUE(t.steps().empty());
}

TEST(RingTimeline, PassNamesRoundTrip) {
  for (WalkPass p : {WalkPass::forward, WalkPass::backward, WalkPass::recompute}) {
    WalkPass back = WalkPass::forward;
    ASSERT_TRUE(minictx::parse_walk_pass(minictx::to_string(p), back));
    EXPECT_EQ(back, p);
  }
  WalkPass unused = WalkPass::forward;
  EXPECT_FALSE(minictx::parse_walk_pass("sideways", unused));
}
