// What a ring step computes, without MPI: the active-block rules miss no visible pair
// and compute no row without one. The messages and their bytes are checked under
// mpiexec (tests/mpi/*.cmake, bytes_* tests).
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/engine/ring_blocks.hpp"

using namespace minictx;

namespace {

bool visible(bool causal, int64_t q, int64_t k) { return !causal || k <= q; }
bool inside(RowRange r, int64_t row) { return row >= r.begin && row < r.begin + r.len; }

}  // namespace

TEST(RingBlocks, CoverEveryVisiblePairAndOnlyUsefulRows) {
  for (LayoutKind kind : {LayoutKind::contiguous, LayoutKind::zigzag, LayoutKind::stripe})
    for (int P : {1, 2, 3, 4, 5, 8})
      for (int64_t share : {2, 4, 6}) {
        const SequenceLayout layout(kind, share * P, P);  // no padding: every pair is real
        for (bool causal : {true, false})
          for (int r = 0; r < P; ++r)
            for (int j = 0; j < P; ++j) {
              const auto qpos = layout.outer_positions(r), kpos = layout.outer_positions(j);
              const ActiveRows a = active_rows(kind, causal, r, j, share, share);
              std::vector<bool> q_used(static_cast<size_t>(share), false), k_used(q_used);
              for (int64_t i = 0; i < share; ++i)
                for (int64_t m = 0; m < share; ++m) {
                  if (!visible(causal, qpos[size_t(i)], kpos[size_t(m)])) continue;
                  ASSERT_TRUE(inside(a.q, i) && inside(a.k, m)) << "visible pair left out: kind " << int(kind)
                                                                << " P " << P << " r " << r << " j " << j;
                  if (inside(a.k, m)) q_used[size_t(i)] = true;
                  if (inside(a.q, i)) k_used[size_t(m)] = true;
                }
              for (int64_t i = a.q.begin; i < a.q.begin + a.q.len; ++i)
                EXPECT_TRUE(q_used[size_t(i)])
                    << "query row " << i << " computed for nothing, r " << r << " j " << j;
              for (int64_t m = a.k.begin; m < a.k.begin + a.k.len; ++m)
                EXPECT_TRUE(k_used[size_t(m)])
                    << "key row " << m << " computed for nothing, r " << r << " j " << j;
            }
      }
}

// The half recompute of checkpointing: selective_half runs the ring over the first n rows
// of every share; with stripe those rows are the sequence's first n·P tokens, so a query
// among them sees only keys among them (RingEngine::forward_query_prefix).
TEST(RingBlocks, StripeFirstRowsOfEveryShareAreTheSequenceStart) {
  for (int P : {1, 2, 3, 5})
    for (int64_t share : {2, 5, 8}) {
      const SequenceLayout layout(LayoutKind::stripe, share * P, P);
      for (int64_t n = 1; n <= share; ++n) {
        std::vector<int64_t> first;
        for (int j = 0; j < P; ++j) {
          const auto pos = layout.outer_positions(j);
          first.insert(first.end(), pos.begin(), pos.begin() + n);
        }
        std::sort(first.begin(), first.end());
        for (int64_t t = 0; t < n * P; ++t)
          ASSERT_EQ(first[size_t(t)], t) << "P " << P << " share " << share << " n " << n;
      }
    }
}

TEST(RingBlocks, WithoutAMaskEveryQueryRowMeetsEveryKeyRow) {
  const ActiveRows a = active_rows(LayoutKind::stripe, false, 2, 1, 3, 7);
  EXPECT_EQ(a.q.begin, 0);
  EXPECT_EQ(a.q.len, 3);
  EXPECT_EQ(a.k.begin, 0);
  EXPECT_EQ(a.k.len, 7);
}
