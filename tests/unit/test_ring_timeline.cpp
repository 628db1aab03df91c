// The users of a StepClock: the ring timeline recorder (records only between start() and
// stop(), labels each step and outer transfer with the walk the model named, resolves the
// clock's marks, NaN where none was taken) and the PhaseTimer (nested scopes, settled after
// each step).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "core/phase_timer.hpp"
#include "core/ring_timeline.hpp"

using minictx::OuterCarries;
using minictx::PhaseTimer;
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

// An outer transfer is posted in one step and done in a later one: its marks are the
// clock's at those two points, whatever was marked in between.
TEST(RingTimeline, RecordsOuterTransfers) {
  int starts = 0;
  RingTimeline t(std::make_unique<CountingClock>(&starts));
  t.add_outer(0, OuterCarries::block, 0, 1);
  EXPECT_TRUE(t.outer().empty());

  t.start();
  t.set_walk(2, WalkPass::backward);
  const StepClock::Mark block_posted = t.mark();  // 1 s
  t.mark();
  const StepClock::Mark sums_posted = t.mark();  // 3 s
  t.add_outer(0, OuterCarries::block, block_posted, t.mark());
  t.add_outer(0, OuterCarries::sums, sums_posted, t.mark());
  t.stop();
  t.add_outer(1, OuterCarries::sums, 0, 1);  // after stop(): ignored

  ASSERT_EQ(t.outer().size(), 2u);
  const auto& block = t.outer()[0];
  EXPECT_EQ(block.layer, 2);
  EXPECT_EQ(block.pass, WalkPass::backward);
  EXPECT_EQ(block.round, 0);
  EXPECT_EQ(block.carries, OuterCarries::block);
  EXPECT_EQ(block.transfer_posted, 1.0);
  EXPECT_EQ(block.transfer_done, 4.0);
  const auto& sums = t.outer()[1];
  EXPECT_EQ(sums.carries, OuterCarries::sums);
  EXPECT_EQ(sums.transfer_posted, 3.0);
  EXPECT_EQ(sums.transfer_done, 5.0);

  t.start();  // a new recording forgets the last one
  t.stop();
  EXPECT_TRUE(t.outer().empty());
}

TEST(RingTimeline, NamesRoundTrip) {
  for (WalkPass p : {WalkPass::forward, WalkPass::backward, WalkPass::recompute}) {
    WalkPass back = WalkPass::forward;
    ASSERT_TRUE(minictx::parse_enum(minictx::to_string(p), back));
    EXPECT_EQ(back, p);
  }
  WalkPass unused = WalkPass::forward;
  EXPECT_FALSE(minictx::parse_enum("sideways", unused));
  for (OuterCarries c : {OuterCarries::block, OuterCarries::sums}) {
    OuterCarries back = OuterCarries::block;
    ASSERT_TRUE(minictx::parse_enum(minictx::to_string(c), back));
    EXPECT_EQ(back, c);
  }
}

// Mark i at i + 1 seconds: a scope's time is its number of marks in between, plus one.
TEST(PhaseTimer, NestedScopesAccumulateAcrossSettles) {
  int starts = 0;
  PhaseTimer timer(std::make_unique<CountingClock>(&starts));
  EXPECT_EQ(starts, 1);
  for (int step = 0; step < 2; ++step) {
    {
      auto outer = timer.scope("forward");        // mark 0
      { auto inner = timer.scope("attention"); }  // marks 1, 2
    }                                             // mark 3
    timer.settle();                               // the clock starts again from mark 0
  }
  EXPECT_EQ(starts, 3);
  EXPECT_EQ(timer.seconds().at("forward"), 2 * 3.0);
  EXPECT_EQ(timer.seconds().at("attention"), 2 * 1.0);
  timer.clear();
  EXPECT_TRUE(timer.seconds().empty());
}
