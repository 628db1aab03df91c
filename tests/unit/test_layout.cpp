// Sequence layouts and sharded data: every layout deals each global token to exactly one
// rank, and a rank's generated shard equals its slice of the global tensor.
#include <gtest/gtest.h>

#include <set>

#include "backends/engine/sequence_layout.hpp"
#include "core/error.hpp"
#include "core/synthetic_data.hpp"
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

}  // namespace

TEST(SequenceLayout, EveryPositionExactlyOnceAndIncreasingPerShard) {
  for (const Case& c : cases()) {
    const SequenceLayout layout(c.kind, c.len, c.outer, c.inner);
    ASSERT_EQ(layout.padded_len() % layout.parts(), 0);
    ASSERT_GE(layout.padded_len(), c.len);
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
    EXPECT_EQ(real, c.len) << "padding must never count as a token";
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
