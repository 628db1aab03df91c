// All-gather K/V. Bytes sent per rank per training step (forward + backward), fp32,
// with P ranks, B batch, L = padded local rows per sequence, Hkv KV heads, D head dim:
//   forward   2·4·B·L·Hkv·D·(P−1)     all-gather K and V
//   backward  4·4·B·L·Hkv·D·(P−1)     all-gather K and V again, reduce-scatter dK and dV
//   step      24·B·L·Hkv·D·(P−1)
// (reduce-scatter counted as the bandwidth-optimal ring sends it: (P−1)/P of the buffer).
// In bf16/fp16 everything moves, and is summed, in 16 bits: half of the above.
#include "backends/allgather/allgather_backend.hpp"

#include "backends/engine/buffer_estimate.hpp"
#include "core/saturating.hpp"

namespace minictx {
namespace {

class AllGatherBackend final : public AttentionBackend {
 public:
  AllGatherBackend(Comm& world, Device& device, const RunConfig& cfg) : world_(world), dev_(device) {
    layout_ = SequenceLayout(LayoutKind::contiguous, cfg.sequence.length, world.size());
    part_ = world.rank();
    positions_ = layout_.positions(part_);
    // The gathered K/V rows: every rank's shard in rank order.
    for (int p = 0; p < world.size(); ++p) {
      const auto pos = layout_.positions(p);
      all_positions_.insert(all_positions_.end(), pos.begin(), pos.end());
    }
  }

  void forward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
               Tensor& lse) override {
    const Tensor kg = gather(k, s.batch), vg = gather(v, s.batch);
    dev_.attn_init(o, lse);
    // The causal prefix needs no special handling: the kernel masks (and skips) keys
    // past each query by global position.
    dev_.attn_fwd(s, {mine(q), all(kg), all(vg), &o, &lse});
  }

  void backward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) override {
    const Tensor kg = gather(k, s.batch), vg = gather(v, s.batch);
    Tensor delta = dev_.alloc_rows_of_lse(lse);
    dev_.attn_bwd_delta(s, o, dout, delta);
    dev_.fill(dq, 0.0f);  // attn_bwd accumulates
    Tensor dkg = dev_.zeros(kg.shape()), dvg = dev_.zeros(vg.shape());
    dev_.attn_bwd(s, {mine(q), all(kg), all(vg), &dout, &lse, &delta, &dq, &dkg, &dvg});
    // Every rank holds a partial dK/dV of the whole sequence; each keeps the sum of its rows.
    scatter_sum(dkg, s.batch, dk);
    scatter_sum(dvg, s.batch, dv);
  }

 private:
  SeqBlock mine(const Tensor& t) const { return {&t, 0, int64_t(positions_.size()), positions_.data()}; }
  SeqBlock all(const Tensor& t) const {
    return {&t, 0, int64_t(all_positions_.size()), all_positions_.data()};
  }

  // [B·L, w] shards → [B·P·L, w] in the run's dtype. Per batch the gathered rows are the
  // ranks' shards in rank order, which is exactly what one all-gather of that batch's
  // rows produces.
  Tensor gather(const Tensor& x, int batch) {
    const Tensor mine = in_wire_type(x);
    const int64_t e = element_bytes(mine.dtype()), per_batch = x.numel() / batch,
                  width = x.numel() / (batch * layout_.local_len());
    Tensor out = dev_.alloc({int64_t(world_.size()) * x.dim(0), width}, mine.dtype());
    for (int b = 0; b < batch; ++b)
      world_.all_gather(byte_at(mine, b * per_batch), byte_at(out, b * world_.size() * per_batch),
                        per_batch * e);
    return out;
  }

  // The inverse of gather, summing over the ranks in the run's dtype; overwrites `out`.
  void scatter_sum(const Tensor& full, int batch, Tensor& out) {
    const Tensor all = in_wire_type(full);
    Tensor mine = all.dtype() == out.dtype() ? out : dev_.alloc(out.shape(), all.dtype());
    const int64_t per_batch = out.numel() / batch;
    for (int b = 0; b < batch; ++b)
      world_.reduce_scatter_sum(byte_at(all, b * world_.size() * per_batch), byte_at(mine, b * per_batch),
                                per_batch, all.dtype());
    if (mine.raw() != out.raw()) dev_.copy(out, mine);
  }

  // x, or a copy of it in the run's dtype when that is 16-bit.
  Tensor in_wire_type(const Tensor& x) {
    if (x.dtype() == dev_.precision()) return x;
    Tensor wire = dev_.alloc(x.shape(), dev_.precision());
    dev_.copy(wire, x);
    return wire;
  }
  static void* byte_at(const Tensor& t, int64_t element) {
    return static_cast<char*>(t.raw()) + element * element_bytes(t.dtype());
  }

  Comm& world_;
  Device& dev_;
  std::vector<int64_t> positions_, all_positions_;
};

// Any world size and head count works: the layout pads the sequence to the ranks.
void validate(const RunConfig&, const Topology&) {}

std::unique_ptr<AttentionBackend> create(Comm& world, Device& device, const RunConfig& cfg) {
  return std::make_unique<AllGatherBackend>(world, device, cfg);
}

ParallelDegrees degrees(const RunConfig&, const Topology& topology) {
  return {1, topology.world_size, topology.world_size};
}

// Per element of K and V over the whole sequence: the gathered copy in the run's dtype,
// the full-length fp32 gradient, and in 16 bits the fp32 copy that attention widens it
// into (more than the reduce-scatter's 16-bit copy of dK or dV, which comes after them);
// with storage partials also the block's own gradient, fp32 and rounded (accumulator
// partials alike).
int64_t buffer_bytes(const RunConfig& cfg, const Topology& topology) {
  const bool storage = cfg.run.dtype != DType::f32 && cfg.attention.partials != AttentionPartials::fp32;
  const int64_t e = element_bytes(cfg.run.dtype),
                per_element = e + 4 + (e < 4 ? 4 : 0) + (storage ? 4 + e : 0);
  const RowWidths& w = rank_rows(cfg, topology).width;
  return sat_mul(sat_mul(per_element, sat_add(w.k, w.v)), sat_mul(cfg.sequence.batch, cfg.sequence.length));
}

TrafficShape traffic(const AttentionConfig&) { return {true, LayoutKind::contiguous, false}; }

}  // namespace

BackendInfo allgather_backend_info() {
  return {"allgather",
          "all-gather K/V, local queries against the whole sequence, reduce-scatter dK/dV",
          /*keys=*/{},
          degrees,
          buffer_bytes,
          /*splits_heads=*/nullptr,
          validate,
          create,
          traffic,
          /*query_prefix=*/false};
}

}  // namespace minictx
