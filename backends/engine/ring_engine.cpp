// Ring attention (docs/algorithms.md, "Ring attention, three layouts", "LoongTrain double
// ring", "BurstAttention") over a group of C = W·w ranks: W windows of w ranks.
//
// Bytes each rank sends, fp32: a block of P elements travelling with accumulators of
// A elements costs, per inner round, (w−1)·P + w·A inside the window (the block w−1
// hops, the accumulators w−1 hops and one home) and, over the outer ring,
// (W−1)·P + W·A (the accumulators cross every window and take one hop home); a level
// of size 1 sends nothing. With B batch, L = layout.outer_len() rows, H query and Hkv KV
// heads, D head dim, n = B·L·Hkv·D, m = B·L·H·D, Λ fp32 planes of the LSE
// (Device::lse_planes: 2 on the host device, 1 on cuda):
//   forward (P = 2n, A = 0):          inner 8·W·(w−1)·n,   outer 8·(W−1)·n
//   backward kv (P = 2n, A = 2n):     inner 4·W·(4w−2)·n,  outer 4·(4W−2)·n
//   backward q (P = 2m + (Λ+1)·B·L·H, A = m):
//                                     inner 4·W·[(w−1)·(2m + (Λ+1)BLH) + w·m],
//                                     outer 4·[(W−1)·(2m + (Λ+1)BLH) + W·m]
// For a plain ring (W = 1, w = P) and MHA, the q backward sends (3P−2)·m + (Λ+1)(P−1)·BLH
// floats against the kv backward's (4P−2)·m: → 3/4 as P grows. With GQA (H > Hkv)
// the Q side is the bigger one and kv is cheaper.
// The query-prefix forward (selective_half's recompute) is the forward with L = the
// first n rows under a causal mask (L/2: half the forward's bytes), L itself without one.
// In bf16/fp16 every element above takes 2 bytes, save the q backward's LSE and D (the
// (Λ+1)·B·L·H): those stay fp32.

#include "backends/engine/ring_engine.hpp"

#include <algorithm>

#include "backends/engine/ring_blocks.hpp"
#include "core/error.hpp"
#include "core/saturating.hpp"
#include "device/sequence_slices.hpp"

namespace minictx {
namespace {

// The kernels find a batch's rows from a tensor's size, so a wrong share length would
// silently read the wrong rows: refuse it.
void require_share(const AttnShape& s, const Tensor& k, const SequenceLayout& layout) {
  require(k.numel() == int64_t(s.batch) * layout.outer_len() * s.kv_heads * s.head_dim,
          "ring engine: k/v must hold batch × layout.outer_len() rows");
}

SeqBlock block_rows(const Tensor& t, const std::vector<int64_t>& positions, RowRange range) {
  return {&t, range.begin, range.len, positions.data() + range.begin};
}

}  // namespace

RingEngine::RingEngine(Comm& group, int window, Device& device, const SequenceLayout& layout,
                       BackwardTraffic traffic)
    : walk_(group, window), dev_(device), layout_(layout), traffic_(traffic) {
  require(layout.outer_len() * group.size() == layout.padded_len(),
          "ring engine: the layout's outer parts must be the group's ranks");
  for (int j = 0; j < group.size(); ++j) positions_.push_back(layout.outer_positions(j));
}

int64_t RingEngine::buffer_bytes(int64_t rows, const RowWidths& widths, int heads, int windows,
                                 BackwardTraffic traffic, DType wire) {
  const int64_t e = element_bytes(wire);
  // The tensor data of a block (K, V; or Q, dO), and the fp32 copies attention widens a
  // 16-bit block into for the duration of a visit.
  auto data = [&](int64_t elements) { return sat_mul(elements, e); };
  auto widened = [&](int64_t elements) { return wire == DType::f32 ? 0 : sat_mul(elements, 4); };
  const int64_t kv = sat_mul(sat_add(widths.k, widths.v), rows), stats = sat_mul(sat_mul(2, heads), rows);
  const int64_t forward = sat_add(RingWalk::buffer_bytes(data(kv), 0, wire, windows), widened(kv));
  const int64_t delta = sat_mul(sat_mul(heads, rows), 4);
  const int64_t qd = sat_mul(sat_add(widths.q, widths.o), rows);  // Q and dO
  const int64_t backward = traffic == BackwardTraffic::kv
                               ? sat_add(RingWalk::buffer_bytes(data(kv), kv, wire, windows), widened(kv))
                               : sat_add(RingWalk::buffer_bytes(sat_add(data(qd), sat_mul(stats, 4)),
                                                                sat_mul(widths.q, rows), wire, windows),
                                         widened(qd));
  return std::max(forward, sat_add(backward, delta));
}

std::vector<ActiveRows> RingEngine::parts(const AttnShape& s, int qr, int kr, int64_t q_rows,
                                          int64_t k_rows) const {
  return block_parts(s, layout_.kind(), layout_.chunk_len(), qr, kr, positions_[size_t(qr)].data(), q_rows,
                     positions_[size_t(kr)].data(), k_rows);
}

void RingEngine::forward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                         Tensor& lse) {
  require_share(s, k, layout_);
  forward_rows(s, q, k, v, o, lse);
}

void RingEngine::forward_query_prefix(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v,
                                      Tensor& o, Tensor& lse) {
  require(layout_.kind() == LayoutKind::stripe || positions_.size() == 1,
          "ring engine: a query prefix needs the stripe layout or a group of one");
  require_share(s, k, layout_);
  if (!s.causal) {
    forward_rows(s, q, k, v, o, lse);
    return;
  }
  const int64_t n = matrix_rows(q) / s.batch;
  const Tensor k_first = slice_rows(dev_, k, s.batch, 0, n, {s.batch * n, matrix_cols(k)});
  const Tensor v_first = slice_rows(dev_, v, s.batch, 0, n, {s.batch * n, matrix_cols(v)});
  forward_rows(s, q, k_first, v_first, o, lse);
}

const RingWalk::Hops& RingEngine::hops(const AttnShape& s, int64_t q_rows, int64_t k_rows, bool q_side) {
  static const RingWalk::Hops all_the_way;
  if (s.window == 0 || !walk_.plain()) return all_the_way;
  auto [at, made] = hops_.try_emplace({s.window, s.causal, q_rows, k_rows, q_side});
  if (made) at->second = window_hops(s, layout_.kind(), positions_, q_rows, k_rows, q_side);
  return at->second;
}

void RingEngine::forward_rows(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v,
                              Tensor& o, Tensor& lse) {
  const int r = walk_.rank();
  const int64_t q_rows = matrix_rows(q) / s.batch, k_rows = matrix_rows(k) / s.batch;
  dev_.attn_init(o, lse);
  const DType wire = dev_.precision();
  walk_.forward(
      dev_, {{&k, wire}, {&v, wire}},
      [&](int j, PackedTensors& kv) {
        for (const ActiveRows& a : parts(s, r, j, q_rows, k_rows))
          dev_.attn_fwd(
              s, {block_rows(q, positions_[size_t(r)], a.q), block_rows(kv[0], positions_[size_t(j)], a.k),
                  block_rows(kv[1], positions_[size_t(j)], a.k), &o, &lse});
      },
      hops(s, q_rows, k_rows, false));
}

void RingEngine::backward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& o, const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk,
                          Tensor& dv) {
  const int r = walk_.rank();
  const std::vector<int64_t>& mine = positions_[size_t(r)];
  require_share(s, k, layout_);
  Tensor delta = dev_.alloc_rows_of_lse(lse);
  dev_.attn_bwd_delta(s, o, dout, delta);
  const DType wire = dev_.precision();
  if (traffic_ == BackwardTraffic::kv) {
    dev_.fill(dq, 0.0f);
    walk_.backward(
        dev_, {{&k, wire}, {&v, wire}}, {&dk, &dv}, wire,
        [&](int j, PackedTensors& kv, PackedTensors& grads) {
          const std::vector<int64_t>& theirs = positions_[size_t(j)];
          const std::vector<ActiveRows> blocks = parts(s, r, j, layout_.outer_len(), layout_.outer_len());
          for (const ActiveRows& a : blocks)
            dev_.attn_bwd(
                s, {block_rows(q, mine, a.q), block_rows(kv[0], theirs, a.k), block_rows(kv[1], theirs, a.k),
                    &dout, &lse, &delta, &dq, &grads[0], &grads[1]});
          return !blocks.empty();
        },
        hops(s, layout_.outer_len(), layout_.outer_len(), false));
    return;
  }
  // The Q side of source j meets this rank's K, V: its dQ travels, dK and dV stay here.
  dev_.fill(dk, 0.0f);
  dev_.fill(dv, 0.0f);
  walk_.backward(
      dev_, {{&q, wire}, {&dout, wire}, {&lse, DType::f32}, {&delta, DType::f32}}, {&dq}, wire,
      [&](int j, PackedTensors& side, PackedTensors& grads) {
        const std::vector<ActiveRows> blocks = parts(s, j, r, layout_.outer_len(), layout_.outer_len());
        for (const ActiveRows& a : blocks)
          dev_.attn_bwd(s, {block_rows(side[0], positions_[size_t(j)], a.q), block_rows(k, mine, a.k),
                            block_rows(v, mine, a.k), &side[1], &side[2], &side[3], &grads[0], &dk, &dv});
        return !blocks.empty();
      },
      hops(s, layout_.outer_len(), layout_.outer_len(), true));
}

}  // namespace minictx
