// What a ring step costs, without MPI: the rows it computes (the active-block rules miss
// no visible pair and compute no row without one) and the messages it sends (to r+1,
// from r−1, the same sizes on every rank so the ring cannot deadlock on a mismatch, and
// bytes equal to the formula at the top of backends/ring/ring_engine.cpp).
#include <gtest/gtest.h>

#include <cstring>

#include "backends/ring/ring_blocks.hpp"
#include "backends/ring/ring_engine.hpp"
#include "core/error.hpp"
#include "device/kokkos_device.hpp"

using namespace minictx;

namespace {

bool visible(bool causal, int64_t q, int64_t k) { return !causal || k <= q; }
bool inside(RowRange r, int64_t row) { return row >= r.begin && row < r.begin + r.len; }

// Rank r of a P-rank ring whose neighbours send exactly what r sends: the data is
// meaningless, the message pattern is r's own.
class LoopbackComm final : public Comm {
 public:
  struct Shift {
    int64_t count;
    int dst, src;
  };
  LoopbackComm(int rank, int size) : Comm({size, 1}, std::make_shared<ByteCounter>()), rank_(rank), size_(size) {}
  std::string name() const override { return "loopback"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int world_rank_of(int rank) const override { return rank; }
  ShiftHandle shift_start(const float* send, float* recv, int64_t count, int dst, int src) override {
    std::memcpy(recv, send, size_t(count) * sizeof(float));
    count_sent(dst, double(count) * sizeof(float));
    shifts.push_back({count, dst, src});
    return {0};
  }
  void wait(ShiftHandle& h) override { h.slot = -1; }
  void all_to_all(const float*, float*, int64_t) override { fail("unused"); }
  void all_gather(const float*, float*, int64_t) override { fail("unused"); }
  void all_reduce_sum(float*, int64_t) override { fail("unused"); }
  void all_reduce_sum(double*, int64_t) override { fail("unused"); }
  void reduce_scatter_sum(const float*, float*, int64_t) override { fail("unused"); }
  void gather_doubles(const double*, double*, int64_t) override { fail("unused"); }
  void barrier() override {}
  std::unique_ptr<Comm> split(int, int) override { fail("unused"); }

  std::vector<Shift> shifts;

 private:
  int rank_, size_;
};

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
              const ActiveRows a = active_rows(kind, causal, r, j, share);
              std::vector<bool> q_used(static_cast<size_t>(share), false), k_used(q_used);
              for (int64_t i = 0; i < share; ++i)
                for (int64_t m = 0; m < share; ++m) {
                  if (!visible(causal, qpos[size_t(i)], kpos[size_t(m)])) continue;
                  ASSERT_TRUE(inside(a.q, i) && inside(a.k, m))
                      << "visible pair left out: kind " << int(kind) << " P " << P << " r " << r << " j " << j;
                  if (inside(a.k, m)) q_used[size_t(i)] = true;
                  if (inside(a.q, i)) k_used[size_t(m)] = true;
                }
              for (int64_t i = a.q.begin; i < a.q.begin + a.q.len; ++i)
                EXPECT_TRUE(q_used[size_t(i)]) << "query row " << i << " computed for nothing, r " << r << " j " << j;
              for (int64_t m = a.k.begin; m < a.k.begin + a.k.len; ++m)
                EXPECT_TRUE(k_used[size_t(m)]) << "key row " << m << " computed for nothing, r " << r << " j " << j;
            }
      }
}

TEST(RingEngine, MessagesGoRoundAndMatchTheByteFormula) {
  KokkosDevice dev;
  AttnShape s;
  s.batch = 2, s.heads = 4, s.kv_heads = 2, s.head_dim = 8;
  for (LayoutKind kind : {LayoutKind::contiguous, LayoutKind::zigzag, LayoutKind::stripe})
    for (int P : {1, 2, 3, 4, 7, 8}) {
      const SequenceLayout layout(kind, 5 * P + 1, P);
      s.real_len = layout.real_len();
      const int64_t rows = s.batch * layout.outer_len();
      const int64_t n = rows * s.kv_heads * s.head_dim;  // elements of K
      std::vector<int64_t> first_rank_counts;
      for (int r = 0; r < P; ++r) {
        LoopbackComm comm(r, P);
        RingEngine engine(comm, dev, layout);
        Tensor q = dev.zeros({rows, s.heads * s.head_dim}), o = dev.alloc(q.shape()), dq = dev.alloc(q.shape());
        Tensor k = dev.zeros({rows, s.kv_heads * s.head_dim}), v = dev.zeros(k.shape());
        Tensor dk = dev.alloc(k.shape()), dv = dev.alloc(k.shape());
        Tensor lse = dev.alloc({s.batch, s.heads, layout.outer_len()});
        engine.forward(s, q, k, v, o, lse);
        EXPECT_EQ(comm.bytes().inter, 8.0 * (P - 1) * n);
        engine.backward(s, q, k, v, o, lse, q, dq, dk, dv);
        EXPECT_EQ(comm.bytes().inter, 8.0 * (P - 1) * n + (P > 1 ? (16.0 * P - 8) * n : 0.0));
        std::vector<int64_t> counts;
        for (const auto& m : comm.shifts) {
          EXPECT_EQ(m.dst, (r + 1) % P);
          EXPECT_EQ(m.src, (r + P - 1) % P);
          counts.push_back(m.count);
        }
        if (r == 0) first_rank_counts = counts;
        EXPECT_EQ(counts, first_rank_counts) << "rank " << r << " of " << P << " sends other sizes than rank 0";
      }
    }
}
