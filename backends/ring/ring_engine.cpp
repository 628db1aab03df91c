// Ring attention (ALGORITHMS.md, "Ring attention, three layouts") over P ring ranks.
//
// Bytes each rank sends, n = B·L·Hkv·D elements of its K (L = layout.outer_len()),
// 4 bytes an element, all of it to ring rank r+1:
//   forward:  (P−1) shifts of K and V               = 8·(P−1)·n
//   backward: step 0 sends K,V; steps 1..P−2 send K,V and the dK,dV accumulator of the
//             previous step's source; step P−1 sends that accumulator only; a last hop
//             takes every accumulator home          = 4·(4P−2)·n = (16P−8)·n   (P ≥ 2)
//   P = 1 sends nothing.

#include "backends/ring/ring_engine.hpp"

#include <memory>

#include "backends/ring/ring_blocks.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

// `count` tensors shaped like `like`, back to back in one allocation, so any run of
// consecutive ones travels as one message.
class Packed {
 public:
  Packed(Device& dev, const Tensor& like, int count) : n_(like.numel()) {
    whole_ = std::make_shared<Tensor>(dev.alloc({count * n_}));
    for (int i = 0; i < count; ++i)
      // Aliasing pointer: the part shares ownership of the whole allocation.
      parts_.emplace_back(std::shared_ptr<float>(whole_, whole_->data() + i * n_), like.shape());
  }
  Tensor& operator[](int i) { return parts_[size_t(i)]; }
  float* data(int first) { return whole_->data() + first * n_; }
  int64_t count(int parts) const { return parts * n_; }

 private:
  int64_t n_;
  std::shared_ptr<Tensor> whole_;
  std::vector<Tensor> parts_;
};

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

RingEngine::RingEngine(Comm& ring, Device& device, const SequenceLayout& layout)
    : ring_(ring), dev_(device), layout_(layout) {
  require(layout.outer_len() * ring.size() == layout.padded_len(),
          "ring engine: the layout's outer parts must be the ring's ranks");
  for (int j = 0; j < ring.size(); ++j) positions_.push_back(layout.outer_positions(j));
}

void RingEngine::forward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                         Tensor& lse) {
  const int P = ring_.size(), r = ring_.rank();
  require_share(s, k, layout_);
  dev_.attn_init(o, lse);
  // Double buffer: the K,V being computed on (sent on meanwhile) and the next ones.
  Packed kv[2] = {Packed(dev_, k, 2), Packed(dev_, k, 2)};
  dev_.copy(kv[0][0], k);
  dev_.copy(kv[0][1], v);
  for (int step = 0; step < P; ++step) {
    Packed& cur = kv[step % 2];
    Packed& next = kv[(step + 1) % 2];
    const bool shift = step + 1 < P;  // nobody needs the last source's K,V next
    ShiftHandle h;
    if (shift) h = ring_.shift_start(cur.data(0), next.data(0), cur.count(2), (r + 1) % P, (r + P - 1) % P);
    const int j = (r - step + P) % P;
    const ActiveRows a = active_rows(layout_.kind(), s.causal, r, j, layout_.outer_len());
    if (!a.empty())
      dev_.attn_fwd(s, {block_rows(q, positions_[r], a.q), block_rows(cur[0], positions_[j], a.k),
                        block_rows(cur[1], positions_[j], a.k), &o, &lse});
    if (shift) ring_.wait(h);
  }
}

// Each packed buffer is [K, V, dK, dV]: at step s it holds the K,V of source j_s = r−s
// and, in its dK,dV half, the accumulator of j_{s−1} (what the ranks before have added
// to it, and this rank at step s−1). The accumulator of j_s arrives from rank r−1 while
// this rank computes j_s's block gradients into a scratch pair, which it then adds: so
// every transfer but the last hop home overlaps a block's compute.
void RingEngine::backward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                          const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) {
  const int P = ring_.size(), r = ring_.rank();
  const int right = (r + 1) % P, left = (r + P - 1) % P;
  require_share(s, k, layout_);
  Tensor delta = dev_.alloc(lse.shape());
  dev_.attn_bwd_delta(s, o, dout, delta);
  dev_.fill(dq, 0.0f);
  Packed buf[2] = {Packed(dev_, k, 4), Packed(dev_, k, 4)};
  dev_.copy(buf[0][0], k);
  dev_.copy(buf[0][1], v);
  dev_.fill(buf[1][2], 0.0f);  // step 0's source starts its accumulator here
  dev_.fill(buf[1][3], 0.0f);
  Tensor gk = dev_.alloc(k.shape()), gv = dev_.alloc(v.shape());
  for (int step = 0; step < P; ++step) {
    Packed& cur = buf[step % 2];
    Packed& next = buf[(step + 1) % 2];
    const int first = step + 1 < P ? 0 : 2;  // K,V go on until the last step
    const int end = step > 0 ? 4 : 2;        // there is an accumulator from step 1 on
    const bool shift = first < end;
    ShiftHandle h;
    if (shift) h = ring_.shift_start(cur.data(first), next.data(first), cur.count(end - first), right, left);
    const int j = (r - step + P) % P;
    const ActiveRows a = active_rows(layout_.kind(), s.causal, r, j, layout_.outer_len());
    if (!a.empty()) {
      dev_.fill(gk, 0.0f);
      dev_.fill(gv, 0.0f);
      dev_.attn_bwd(s, {block_rows(q, positions_[r], a.q), block_rows(cur[0], positions_[j], a.k),
                        block_rows(cur[1], positions_[j], a.k), &dout, &lse, &delta, &dq, &gk, &gv});
    }
    if (shift) ring_.wait(h);
    if (!a.empty()) {
      dev_.add(next[2], gk);
      dev_.add(next[3], gv);
    }
  }
  // The last step's source is r+1: its accumulator makes one more hop, and r's own
  // arrives from r−1. With one rank it is already home.
  Packed* home = &buf[P % 2];
  if (P > 1) {
    Packed& there = buf[(P + 1) % 2];
    ShiftHandle h = ring_.shift_start(home->data(2), there.data(2), home->count(2), right, left);
    ring_.wait(h);
    home = &there;
  }
  dev_.copy(dk, (*home)[2]);
  dev_.copy(dv, (*home)[3]);
}

}  // namespace minictx
