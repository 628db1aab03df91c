// The projection's closed forms (project/rank_geometry) against walks over every rank and
// every step, as the projection computed them before: equal node-boundary counts and peer
// splits, and the same walk cost, at every small world, node size, Ulysses degree and
// window that fits 64 ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "project/rank_geometry.hpp"

namespace minictx {
namespace {

PeerSplit walked_peers(int first, int count, const Topology& t) {
  PeerSplit s;
  for (int a = first; a < first + count; ++a)
    for (int b = first; b < first + count; ++b) {
      if (a == b) continue;
      const bool same = t.node_of(a) == t.node_of(b);
      (same ? s.intra : s.inter) += 1;
      s.any_inter = s.any_inter || !same;
    }
  s.intra /= count;
  s.inter /= count;
  return s;
}

void expect_near(double walked, double closed, const char* what) {
  EXPECT_NEAR(walked, closed, 1e-12 * std::max(1.0, std::abs(walked))) << what;
}

TEST(RankGeometry, PeerSplitsMatchAWalkOverPairs) {
  for (int rpn = 1; rpn <= 9; ++rpn)
    for (int world = 1; world <= 64; ++world) {
      const Topology t{world, rpn};
      for (int first = 0; first < world; first += 3) {
        const PeerSplit w = walked_peers(first, world - first, t),
                        c = consecutive_peers(first, world - first, t);
        expect_near(w.intra, c.intra, "intra");
        expect_near(w.inter, c.inter, "inter");
        EXPECT_EQ(w.any_inter, c.any_inter);
      }
      for (int u = 2; u <= world; ++u) {
        if (world % u) continue;
        PeerSplit walked;
        for (int q = 0; q < world / u; ++q) {
          const PeerSplit s = walked_peers(q * u, u, t);
          walked.intra += s.intra / (world / u);
          walked.inter += s.inter / (world / u);
          walked.any_inter = walked.any_inter || s.any_inter;
        }
        const PeerSplit closed = ulysses_peers(u, t);
        expect_near(walked.intra, closed.intra, "ulysses intra");
        expect_near(walked.inter, closed.inter, "ulysses inter");
        EXPECT_EQ(walked.any_inter, closed.any_inter) << world << " " << u << " " << rpn;
      }
    }
}

// The old walk: every ring rank's block at every step, every step's transfer in turn.
Cost walked_cost(const RingWalkModel& m, double payload, double accumulator, const double kinds[3],
                 const LinkRate& intra, const LinkRate& inter) {
  const int c = m.ranks(), w = m.window(), windows = m.windows();
  auto step_seconds = [&](int o, int i) {
    double worst = 0;
    for (int j = 0; j < c; ++j) {
      const int src = m.source(j, o, i);
      worst = std::max(worst, kinds[src == j ? 0 : src < j ? 1 : 2]);
    }
    return worst;
  };
  const LinkRate& in_link = m.inner_inter() > 0 ? inter : intra;
  const LinkRate& out_link = m.outer_inter() > 0 ? inter : intra;
  const Bound in_bound = m.inner_inter() > 0 ? Bound::inter : Bound::intra;
  const Bound out_bound = m.outer_inter() > 0 ? Bound::inter : Bound::intra;
  Cost total;
  for (int o = 0; o < windows; ++o) {
    const double outer_bytes = (o < windows - 1 ? payload : 0) + (o > 0 ? accumulator : 0);
    const double t_outer = windows > 1 ? out_link.seconds(outer_bytes) : 0;
    Cost round;
    for (int i = 0; i < w; ++i) {
      const double bytes = (i < w - 1 ? payload : 0) + (i > 0 ? accumulator : 0);
      round += overlapped(step_seconds(o, i), w > 1 ? in_link.seconds(bytes) : 0, in_bound, in_link.overlap);
    }
    if (w > 1 && accumulator > 0) round += cost_of(in_bound, in_link.seconds(accumulator));
    const double under = out_link.overlap * t_outer;
    if (under > round.seconds()) round = cost_of(out_bound, under);
    round += cost_of(out_bound, t_outer - under);
    total += round;
  }
  if (windows > 1 && accumulator > 0) total += cost_of(out_bound, out_link.seconds(accumulator));
  return total;
}

TEST(RankGeometry, RingWalkMatchesTheWalkOverRanksAndSteps) {
  const LinkRate intra{100, 2, 0.5}, inter{12.5, 5, 0.25};
  const double kinds[3] = {3e-4, 7e-4, 5e-4};  // own block, an earlier rank's, a later rank's
  int cases = 0;
  for (int rpn = 1; rpn <= 9; ++rpn)
    for (int u = 1; u <= 4; ++u)
      for (int c = 1; c * u <= 64; ++c)
        for (int w = 1; w <= c; ++w) {
          if (c % w) continue;
          const Topology t{c * u, rpn};
          const RingWalkModel m(u, c, w, t);
          // Edges that cross a node, counted one by one.
          int inner = 0, outer = 0;
          for (int g = 0; g < u; ++g)
            for (int j = 0; j < c; ++j) {
              const int x = j / w, k = j % w, windows = c / w;
              const int in = x * w + (k + 1) % w, out = ((x + 1) % windows) * w + k;
              inner += t.node_of(j * u + g) != t.node_of(in * u + g);
              outer += t.node_of(j * u + g) != t.node_of(out * u + g);
            }
          EXPECT_EQ(m.inner_inter(), double(inner) / (u * c)) << rpn << " " << u << " " << c << " " << w;
          EXPECT_EQ(m.outer_inter(), double(outer) / (u * c)) << rpn << " " << u << " " << c << " " << w;
          for (const double accumulator : {0.0, 3e6}) {
            const Cost walked = walked_cost(m, 8e6, accumulator, kinds, intra, inter);
            const Cost closed =
                m.walk(8e6, accumulator, {kinds[0], std::max(kinds[1], kinds[2])}, intra, inter);
            expect_near(walked.compute, closed.compute, "compute");
            expect_near(walked.intra, closed.intra, "intra");
            expect_near(walked.inter, closed.inter, "inter");
            ++cases;
          }
        }
  EXPECT_GT(cases, 1000);
}

TEST(RankGeometry, CrossingsAtABillionRanksAreCounted) {
  // A plain ring of 10⁹ ranks, 8 per node: one edge in 8 leaves its node (the wrap-around
  // edge from the last rank back to 0 crosses too).
  const Topology t{1000000000, 8};
  const RingWalkModel m(1, 1000000000, 1000000000, t);
  EXPECT_EQ(m.inner_inter(), double(1000000000 / 8) / 1e9);
  EXPECT_EQ(m.outer_inter(), 0.0);
  EXPECT_EQ(crossing_edges(0, 999999999, 1, 1, 1, 8), 1000000000 / 8 - 1);
}

TEST(RankGeometry, AWalksMeanRingStepAddsUpToTheWalk) {
  // A plain ring of 4 ranks on one node, no accumulators: every step but the last posts a
  // block; the walk is its steps, each the kernel and the wait it did not hide.
  const Topology t{4, 4};
  const RingWalkModel m(1, 4, 4, t);
  const LinkRate overlapping{1.0, 10, 1}, serial{1.0, 10, 0};
  const double block = 2e6, moved = overlapping.seconds(block);  // 2.01 ms on the link
  for (const double other : {1e-3, 5e-3}) {  // a step shorter, then longer, than its transfer
    RingWalkModel::StepTimes s;
    const Cost walk = m.walk(block, 0, {4e-3, other}, overlapping, overlapping, &s);
    EXPECT_DOUBLE_EQ(s.compute, (4e-3 + 3 * other) / 4);
    EXPECT_DOUBLE_EQ(s.transfer, 3 * moved / 4);  // the last step moves nothing
    // Overlapped: a step waits only as long as its transfer outlasts its kernel.
    EXPECT_NEAR(s.exposed, (std::max(0.0, moved - 4e-3) + 2 * std::max(0.0, moved - other)) / 4, 1e-15);
    EXPECT_NEAR(4 * (s.compute + s.exposed), walk.seconds(), 1e-15);
    // Without overlap every transfer is waited for after the kernel.
    m.walk(block, 0, {4e-3, other}, serial, serial, &s);
    EXPECT_NEAR(s.exposed, s.transfer, 1e-15);
  }
}

}  // namespace
}  // namespace minictx
