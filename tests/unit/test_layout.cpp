// Sequence layouts and sharded data: every layout deals each global token to exactly one
// rank, and a rank's generated shard equals its slice of the global tensor. ring_type
// balanced: a causal sequence of one document gets the zigzag layout, long-tailed packings
// get their pairs balanced where zigzag's are not, the per-rank pair counts add up to the
// mask's, and a ring step's chunk sub-blocks miss no visible pair (every backend runs it
// against fp64 under mpiexec: tests/mpi/documents.cmake).
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <set>

#include "backends/engine/balanced_layout.hpp"
#include "backends/engine/layout_work.hpp"
#include "backends/engine/ring_blocks.hpp"
#include "backends/engine/sequence_layout.hpp"
#include "core/error.hpp"
#include "core/synthetic_data.hpp"
#include "device/document_bounds.hpp"
#include "device/kokkos_device.hpp"
#include "model/shard_data.hpp"

using namespace minictx;

namespace {

struct Case {
  LayoutKind kind;
  int64_t len;
  int outer, inner;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  for (LayoutKind k : {LayoutKind::contiguous, LayoutKind::zigzag, LayoutKind::stripe})
    for (int64_t len : {1, 7, 64, 97, 1000})
      for (int outer : {1, 2, 3, 4, 8})
        for (int inner : {1, 2}) c.push_back({k, len, outer, inner});
  return c;
}

void expect_every_position_once(const SequenceLayout& layout, int64_t len) {
  ASSERT_EQ(layout.padded_len() % layout.parts(), 0);
  ASSERT_GE(layout.padded_len(), len);
  std::set<int64_t> seen;
  int64_t real = 0;
  for (int p = 0; p < layout.parts(); ++p) {
    const auto pos = layout.positions(p);
    for (size_t i = 0; i < pos.size(); ++i) {
      EXPECT_TRUE(seen.insert(pos[i]).second) << "position dealt twice";
      if (i > 0) {
        EXPECT_LT(pos[i - 1], pos[i]) << "positions must increase along a shard";
      }
    }
    real += layout.real_tokens(p);
  }
  EXPECT_EQ(int64_t(seen.size()), layout.padded_len());
  EXPECT_EQ(*seen.rbegin(), layout.padded_len() - 1);
  EXPECT_EQ(real, len) << "padding must never count as a token";
}

}  // namespace

TEST(SequenceLayout, EveryPositionExactlyOnceAndIncreasingPerShard) {
  for (const Case& c : cases()) {
    const SequenceLayout layout(c.kind, c.len, c.outer, c.inner);
    expect_every_position_once(layout, c.len);
  }
}

TEST(SequenceLayout, KnownPlacements) {
  const SequenceLayout zig(LayoutKind::zigzag, 16, 4);
  EXPECT_EQ(zig.positions(0), (std::vector<int64_t>{0, 1, 14, 15}));
  EXPECT_EQ(zig.positions(3), (std::vector<int64_t>{6, 7, 8, 9}));
  const SequenceLayout stripe(LayoutKind::stripe, 8, 4);
  EXPECT_EQ(stripe.positions(1), (std::vector<int64_t>{1, 5}));
  // USP: ring rank 1 of 2 holds zigzag chunks 1 and 2 of 4; its Ulysses rank 1 of 2 takes
  // the second half of that share.
  const SequenceLayout usp(LayoutKind::zigzag, 16, 2, 2);
  EXPECT_EQ(usp.outer_positions(1), (std::vector<int64_t>{4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(usp.positions(3), (std::vector<int64_t>{8, 9, 10, 11}));
  // Padding goes to the end of the sequence: 10 tokens on 4 zigzag ranks pad to 16.
  const SequenceLayout padded(LayoutKind::zigzag, 10, 4);
  EXPECT_EQ(padded.padded_len(), 16);
  EXPECT_EQ(padded.real_tokens(0), 2);  // chunks 0 and 7: positions 0,1 real; 14,15 padding
}

// Padding a length near 2^63 to the parts would wrap: refused, not wrapped.
TEST(SequenceLayout, PaddingThatWouldOverflowIsRefused) {
  const int64_t most = INT64_MAX;
  EXPECT_EQ(SequenceLayout(LayoutKind::contiguous, most, 1).padded_len(), most);
  EXPECT_THROW(SequenceLayout(LayoutKind::zigzag, most, 3), InputError);
  EXPECT_THROW(SequenceLayout(LayoutKind::stripe, most, 1 << 30, 2), InputError);
}

TEST(ShardData, ShardsEqualSlicesOfTheGlobalTensor) {
  KokkosDevice dev;
  const int batch = 2, width = 3;
  const uint64_t seed = 99;
  for (const Case& c : cases()) {
    const SequenceLayout layout(c.kind, c.len, c.outer, c.inner);
    for (int p = 0; p < layout.parts(); ++p) {
      Tensor shard = dev.alloc({batch * layout.local_len(), width});
      fill_shard(dev, shard, layout, p, batch, seed, tensor_id::input_x, 1.0);
      std::vector<float> host(size_t(shard.numel()));
      dev.download(shard, host.data());
      for (int b = 0; b < batch; ++b)
        for (int64_t r = 0; r < layout.local_len(); ++r) {
          const int64_t pos = layout.global_position(p, r);
          for (int j = 0; j < width; ++j) {
            const float got = host[size_t((b * layout.local_len() + r) * width + j)];
            const float want =
                pos < c.len
                    ? float(data_value(seed, tensor_id::input_x, uint64_t((b * c.len + pos) * width + j)))
                    : 0.0f;
            ASSERT_EQ(got, want);
          }
        }
    }
  }
}

namespace {

RunConfig packed(int64_t len, int batch, const std::string& documents, bool causal = true) {
  RunConfig c;
  c.sequence.length = len;
  c.sequence.batch = batch;
  c.sequence.documents = packing_from_text(documents, "test");
  c.attention.causal = causal;
  return c;
}

SequenceLayout balanced(const RunConfig& c, int outer, int inner = 1) {
  return balanced_layout(c.sequence.length, outer, inner, visible_keys(c));
}

// The visible (query, key) pairs of every batch row, counted one by one.
double brute_pairs(const RunConfig& c) {
  const auto rows = document_lengths(c.sequence.documents, c.sequence.length, c.sequence.batch);
  const DocumentBounds bounds(
      rows.empty() ? std::vector<std::vector<int64_t>>(size_t(c.sequence.batch), {c.sequence.length}) : rows,
      c.sequence.length);
  double n = 0;
  for (int b = 0; b < c.sequence.batch; ++b)
    for (int64_t q = 0; q < c.sequence.length; ++q) {
      const auto [first, end] = bounds.keys(b, q, c.attention.causal);
      n += double(end - first);
    }
  return n;
}

}  // namespace

TEST(BalancedLayout, EveryPositionOnceAscendingPerShare) {
  for (const char* docs : {"none", "[37, 1, 100, 63, 1, 99]", "{pareto: [2, 301], alpha: 1, seed: 4}"})
    for (int outer : {1, 2, 3, 4, 8})
      for (int inner : {1, 2}) {
        const RunConfig c = packed(301, 2, docs);
        const SequenceLayout layout = balanced(c, outer, inner);
        ASSERT_EQ(layout.kind(), LayoutKind::balanced);
        ASSERT_EQ(layout.parts(), outer * inner);
        SCOPED_TRACE(std::string(docs) + " outer " + std::to_string(outer) + " inner " +
                     std::to_string(inner));
        expect_every_position_once(layout, 301);
      }
}

TEST(BalancedLayout, OneCausalDocumentIsTheZigzagLayout) {
  for (int outer : {2, 3, 4, 8}) {
    const RunConfig c = packed(64 * outer, 1, "none");
    const SequenceLayout b = balanced(c, outer, 2), z(LayoutKind::zigzag, 64 * outer, outer, 2);
    for (int p = 0; p < b.parts(); ++p) EXPECT_EQ(b.positions(p), z.positions(p)) << "outer " << outer;
  }
}

// Long-tailed packings, where zigzag's imbalance is large: the balanced layout's busiest
// rank does at most 10 % more than the mean (the documented acceptance), and the pairs of
// every rank add up to the mask's, counted one by one.
TEST(BalancedLayout, LongTailedPackingsBalancedWhereZigzagIsNot) {
  int zigzag_worse = 0;
  for (uint64_t seed : {1, 2, 3, 4, 5})
    for (int outer : {4, 8, 16}) {
      const RunConfig c =
          packed(8192, 1, "{pareto: [32, 8192], alpha: 1, seed: " + std::to_string(seed) + "}");
      const std::vector<double> keys = visible_keys(c);
      const std::vector<double> mine = pairs_per_part(balanced(c, outer), keys);
      const std::vector<double> zig = pairs_per_part(SequenceLayout(LayoutKind::zigzag, 8192, outer), keys);
      EXPECT_DOUBLE_EQ(std::accumulate(mine.begin(), mine.end(), 0.0), brute_pairs(c));
      EXPECT_DOUBLE_EQ(std::accumulate(zig.begin(), zig.end(), 0.0), brute_pairs(c));
      EXPECT_LE(imbalance(mine), 1.1) << "seed " << seed << " outer " << outer;
      zigzag_worse += imbalance(zig) > 1.5;
    }
  EXPECT_GE(zigzag_worse, 12) << "the packings should load zigzag's ranks unevenly";
}

// A Ulysses group's ranks split their share's heads: each counts its share's pairs over
// the group's size, and the group's ranks count alike.
TEST(LayoutWork, InnerPartsShareTheirShareAndBatchRowsAdd) {
  const RunConfig c = packed(96, 2, "{rows: [[10, 86], [96]]}", false);
  EXPECT_DOUBLE_EQ(brute_pairs(c), 10.0 * 10 + 86.0 * 86 + 96.0 * 96);
  const SequenceLayout layout(LayoutKind::contiguous, 96, 2, 3);
  const std::vector<double> pairs = pairs_per_part(layout, visible_keys(c));
  EXPECT_DOUBLE_EQ(pairs[0], pairs[2]);
  EXPECT_DOUBLE_EQ(pairs[0] * 3, 10.0 * 10 + 38.0 * 86 + 48.0 * 96);
  EXPECT_DOUBLE_EQ(std::accumulate(pairs.begin(), pairs.end(), 0.0), brute_pairs(c));
  EXPECT_DOUBLE_EQ(imbalance({1, 1, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(imbalance({3, 1, 1, 1}), 2.0);
}

// Heaviest first to the least loaded part with room: 8 chunks of weight 7..0 on 4 parts
// of 2 pair up as zigzag does, each part's chunks ascending.
TEST(BalancedLayout, DealsHeaviestFirstToTheLeastLoadedPartWithRoom) {
  const auto dealt = deal_chunks({0, 1, 2, 3, 4, 5, 6, 7}, 4, 2);
  EXPECT_EQ(dealt, (std::vector<std::vector<int64_t>>{{0, 7}, {1, 6}, {2, 5}, {3, 4}}));
  const auto uneven = deal_chunks({9, 1, 1, 1, 1, 1}, 2, 3);
  EXPECT_EQ(uneven, (std::vector<std::vector<int64_t>>{{0, 4, 5}, {1, 2, 3}}));
}

// A ring step of the balanced layout runs each query chunk against the key rows it can
// see: every visible pair of the block lies in exactly one sub-block.
TEST(BalancedLayout, ChunkSubBlocksHoldEveryVisiblePairOnce) {
  for (const char* docs : {"none", "[37, 1, 100, 63, 1, 99]", "{rows: [[120, 181], [1, 299, 1]]}"})
    for (bool causal : {true, false}) {
      const RunConfig c = packed(301, 2, docs, causal);
      const SequenceLayout layout = balanced(c, 4);
      AttnShape s;
      s.batch = 2;
      s.causal = causal;
      s.real_len = 301;
      const auto rows = document_lengths(c.sequence.documents, 301, 2);
      if (!rows.empty()) s.documents = std::make_shared<const DocumentBounds>(rows, 301);
      const DocumentBounds all(rows.empty() ? std::vector<std::vector<int64_t>>(2, {301}) : rows, 301);
      for (int r = 0; r < 4; ++r)
        for (int j = 0; j < 4; ++j) {
          const auto qpos = layout.outer_positions(r), kpos = layout.outer_positions(j);
          const int64_t n = layout.outer_len();
          const auto parts =
              block_parts(s, LayoutKind::balanced, layout.chunk_len(), r, j, qpos.data(), n, kpos.data(), n);
          for (int64_t i = 0; i < n; ++i)
            for (int64_t m = 0; m < n; ++m) {
              bool seen = false;
              for (int b = 0; b < 2; ++b) {
                const auto [first, end] = all.keys(b, qpos[size_t(i)], causal);
                seen = seen || (kpos[size_t(m)] >= first && kpos[size_t(m)] < end);
              }
              if (!seen) continue;
              int holders = 0;
              for (const ActiveRows& a : parts)
                holders +=
                    i >= a.q.begin && i < a.q.begin + a.q.len && m >= a.k.begin && m < a.k.begin + a.k.len;
              ASSERT_EQ(holders, 1) << docs << " r " << r << " j " << j << " q " << i << " k " << m;
            }
        }
    }
}
