#pragma once
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "backends/engine/ring_blocks.hpp"
#include "backends/engine/ring_walk.hpp"
#include "backends/engine/sequence_layout.hpp"
#include "comm/comm.hpp"
#include "device/device.hpp"

namespace minictx {

// What goes round the ring in the backward pass.
enum class BackwardTraffic {
  kv,  // ring attention: K, V and the dK, dV accumulators travel, dQ stays
  q,   // BurstAttention: Q, dO, LSE, D = rowsum(O∘dO) and the dQ accumulator travel, K, V, dK, dV stay
};

// Elements per row of the attention's tensors on a rank: q (and dq) H·D, k (dk) Hkv·D,
// v (dv) Hkv·Dv, o (dout) H·Dv.
struct RowWidths {
  int64_t q = 0, k = 0, v = 0, o = 0;
};

// Exact attention over a sequence-parallel group that every ring-based backend shares:
// blocks go round the group by RingWalk (one ring, or windows of an inner ring joined by
// an outer ring), each rank merges every source's block into its own (O, LSE), and the
// backward pass sends either the K/V side or the Q side round with its gradient.
// Through Comm and Device only.
class RingEngine {
 public:
  // group: rank order is the ring order. window: ranks per inner ring (group.size() for
  // a plain ring). layout: its OUTER parts are the group's ranks — layout.outer_positions(j)
  // are the global positions of the rows group rank j holds, outer_len() rows per batch.
  RingEngine(Comm& group, int window, Device& device, const SequenceLayout& layout,
             BackwardTraffic traffic = BackwardTraffic::kv);
  // Bytes the engine allocates at its peak beyond its arguments, for `rows` rows of these
  // widths and `heads` query heads, with tensor data travelling in `wire`: the memory estimate.
  static int64_t buffer_bytes(int64_t rows, const RowWidths& widths, int heads, int windows,
                              BackwardTraffic traffic, DType wire);

  // Reports every ring step of the walks to `timeline` (nullptr: none).
  void set_timeline(RingTimeline* timeline) { walk_.set_timeline(timeline); }

  void forward(const AttnShape&, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o, Tensor& lse);
  void backward(const AttnShape&, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv);
  // forward() for the queries in the first n rows of each batch of the share only (q, o:
  // B·n rows; lse: [B, H, n]); k and v whole. Needs the stripe layout or a group of one:
  // those rows are then the sequence's first n·C tokens, so under a causal mask they see
  // only keys in the first n rows of every share, and only those travel.
  void forward_query_prefix(const AttnShape&, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                            Tensor& lse);

 private:
  // The forward over the first rows of every share: as many as q (and o, lse) and k, v hold.
  void forward_rows(const AttnShape&, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                    Tensor& lse);
  // How far blocks travel under the shape's sliding window (window_hops) with the first
  // q_rows and k_rows of each share taking part, worked out once per window and kept;
  // empty (all the way round) without a window or on a two-level ring.
  const RingWalk::Hops& hops(const AttnShape&, int64_t q_rows, int64_t k_rows, bool q_side);

  // What a step computes of ring rank qr's first q_rows queries against kr's first k_rows
  // keys (block_parts).
  std::vector<ActiveRows> parts(const AttnShape&, int qr, int kr, int64_t q_rows, int64_t k_rows) const;

  RingWalk walk_;
  Device& dev_;
  SequenceLayout layout_;
  BackwardTraffic traffic_;
  std::vector<std::vector<int64_t>> positions_;  // [group rank] → global positions of its rows
  // hops() by (window, causal, q_rows, k_rows, q_side): the layers of a model repeat a few.
  std::map<std::tuple<int64_t, bool, int64_t, int64_t, bool>, RingWalk::Hops> hops_;
};

}  // namespace minictx
