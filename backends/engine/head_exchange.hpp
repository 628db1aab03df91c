#pragma once
#include <string>

#include "comm/comm.hpp"
#include "device/device.hpp"

namespace minictx {

// Throws a one-line InputError unless a head-parallel group of `degree` ranks can split
// these heads: query heads evenly, KV heads evenly or (fewer KV heads than ranks) each
// replicated degree/kv_heads times. `what` names the degree in the message, e.g.
// "attention.ulysses_degree 3".
void validate_head_split(int heads, int kv_heads, int degree, const std::string& what);

// The Ulysses all-to-all over a group of u ranks: sequence-sharded [B·L, heads·D] rows
// become head-sharded [B·(u·L), share·D] rows (D: the head dim of the tensor, Dv for v, o
// and their gradients), where per batch the sequence is the
// ranks' shards concatenated in rank order and rank q holds head block q. When a tensor
// has fewer heads than ranks (GQA KV heads), each head goes to u/heads consecutive
// ranks (share = 1), which keeps every rank's query heads next to their KV head.
class HeadExchange {
 public:
  HeadExchange(Comm& group, Device& device) : group_(group), dev_(device) {}

  int degree() const { return group_.size(); }
  // The shape of attention on one rank's head share.
  AttnShape head_shape(const AttnShape& s) const;

  // Attention split over heads: scatter q, k, v by heads, run `inner` (anything with
  // AttentionBackend's forward/backward on the gathered sequence) and bring the results
  // back to the sequence shards. Backward re-exchanges its inputs (the backends keep no
  // state between forward and backward) and sums the dK/dV of replicated KV heads.
  template <class Inner>
  void forward(Inner& inner, const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
               Tensor& lse) {
    const AttnShape hs = head_shape(s);
    const Tensor qh = to_heads(q, s.batch, s.heads, s.head_dim);
    const Tensor kh = to_heads(k, s.batch, s.kv_heads, s.head_dim);
    const Tensor vh = to_heads(v, s.batch, s.kv_heads, s.value_dim());
    Tensor oh = dev_.alloc({qh.dim(0), int64_t(hs.heads) * s.value_dim()});
    Tensor lseh = dev_.alloc_lse(s.batch, hs.heads, qh.dim(0) / s.batch);
    inner.forward(hs, qh, kh, vh, oh, lseh);
    to_sequence(oh, s.batch, s.heads, s.value_dim(), o);
    rows_to_sequence(lseh, int(lse.dim(0)), s.heads, lse);
  }

  template <class Inner>
  void backward(Inner& inner, const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v,
                const Tensor& o, const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) {
    const AttnShape hs = head_shape(s);
    const Tensor qh = to_heads(q, s.batch, s.heads, s.head_dim);
    const Tensor kh = to_heads(k, s.batch, s.kv_heads, s.head_dim);
    const Tensor vh = to_heads(v, s.batch, s.kv_heads, s.value_dim());
    const Tensor oh = to_heads(o, s.batch, s.heads, s.value_dim());
    const Tensor lseh = rows_to_heads(lse, int(lse.dim(0)), s.heads);
    const Tensor douth = to_heads(dout, s.batch, s.heads, s.value_dim());
    Tensor dqh = dev_.alloc(qh.shape()), dkh = dev_.alloc(kh.shape()), dvh = dev_.alloc(vh.shape());
    inner.backward(hs, qh, kh, vh, oh, lseh, douth, dqh, dkh, dvh);
    to_sequence(dqh, s.batch, s.heads, s.head_dim, dq);
    to_sequence(dkh, s.batch, s.kv_heads, s.head_dim, dk);
    to_sequence(dvh, s.batch, s.kv_heads, s.value_dim(), dv);
  }

 private:
  // [B·L, heads·D] → [B·(u·L), share·D].
  Tensor to_heads(const Tensor& x, int batch, int heads, int head_dim);
  // [B·(u·L), share·D] → [B·L, heads·D], overwriting `out`; replicas of a head are summed.
  void to_sequence(const Tensor& x, int batch, int heads, int head_dim, Tensor& out);
  // Per-row vectors (lse, batch = its planes·B): [batch, heads, L] → [batch, heads/u, u·L] and
  // back; heads % u == 0.
  Tensor rows_to_heads(const Tensor& x, int batch, int heads);
  void rows_to_sequence(const Tensor& x, int batch, int heads, Tensor& out);

  Comm& group_;
  Device& dev_;
};

}  // namespace minictx
