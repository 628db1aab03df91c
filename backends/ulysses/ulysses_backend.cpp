// Ulysses. Bytes sent per rank per training step (forward + backward), fp32, with
// P ranks, B batch, L = padded local rows per sequence, D head dim, H query heads and
// s = Hkv/P KV heads per rank (1 when the P > Hkv KV heads are replicated), Λ fp32 planes
// of the LSE (Device::lse_planes: 2 on the host device, 1 on cuda):
//   forward   4·B·L·(P−1)·[(2H/P + 2s)·D + Λ·H/P]     q, k, v in; o, lse back
//   backward  4·B·L·(P−1)·[(4H/P + 4s)·D + Λ·H/P]     q, k, v, o, lse, dO in; dq, dk, dv back
//   step      4·B·L·(P−1)·[(6H/P + 6s)·D + 2Λ·H/P]    all intra- or inter-node by placement
// In bf16/fp16 the ·D terms take 2 bytes an element, the LSE's H/P terms still 4.
#include "backends/ulysses/ulysses_backend.hpp"

#include "backends/engine/buffer_estimate.hpp"
#include "backends/engine/head_exchange.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

// Attention of a rank's head share over the whole gathered sequence.
struct WholeSequenceAttention {
  Device& dev;
  std::vector<int64_t> positions;  // of the gathered rows: the whole padded sequence

  SeqBlock block(const Tensor& t) const { return {&t, 0, int64_t(positions.size()), positions.data()}; }

  void forward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
               Tensor& lse) {
    dev.attn_init(o, lse);
    dev.attn_fwd(s, {block(q), block(k), block(v), &o, &lse});
  }

  void backward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) {
    Tensor delta = dev.alloc_rows_of_lse(lse);
    dev.attn_bwd_delta(s, o, dout, delta);
    dev.fill(dq, 0.0f);  // attn_bwd accumulates
    dev.fill(dk, 0.0f);
    dev.fill(dv, 0.0f);
    dev.attn_bwd(s, {block(q), block(k), block(v), &dout, &lse, &delta, &dq, &dk, &dv});
  }
};

class UlyssesBackend final : public AttentionBackend {
 public:
  UlyssesBackend(Comm& world, Device& device, const RunConfig& cfg)
      : exchange_(world, device), attention_{device, {}} {
    // Contiguous shards, one part per rank: the group's shards concatenated in rank
    // order are the (single) outer share, i.e. the whole padded sequence.
    layout_ =
        SequenceLayout(LayoutKind::contiguous, cfg.sequence.length, /*outer=*/1, /*inner=*/world.size());
    part_ = world.rank();
    attention_.positions = layout_.outer_positions(0);
  }

  void forward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
               Tensor& lse) override {
    exchange_.forward(attention_, s, q, k, v, o, lse);
  }

  void backward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) override {
    exchange_.backward(attention_, s, q, k, v, o, lse, dout, dq, dk, dv);
  }

 private:
  HeadExchange exchange_;
  WholeSequenceAttention attention_;
};

void validate(const RunConfig& cfg, const Topology& topology) {
  const int world = topology.world_size;
  // The degree is the world size; a different explicit ulysses_degree asks for USP.
  const int deg = ulysses_degree(cfg.attention);
  if (deg != 1 && deg != world)
    input_error("attention.ulysses_degree " + std::to_string(deg) +
                " does not apply to backend ulysses, whose degree is the world size " +
                std::to_string(world) + " (use backend usp to combine it with a ring)");
  validate_head_split(
      cfg.model.heads, cfg.model.kv_heads, world,
      "backend ulysses on " + std::to_string(world) + " ranks: the Ulysses degree " + std::to_string(world));
}

std::unique_ptr<AttentionBackend> create(Comm& world, Device& device, const RunConfig& cfg) {
  return std::make_unique<UlyssesBackend>(world, device, cfg);
}

ParallelDegrees degrees(const RunConfig&, const Topology& topology) { return {topology.world_size, 1, 1}; }

int64_t buffer_bytes(const RunConfig& cfg, const Topology& topology) {
  return head_exchange_bytes(rank_rows(cfg, topology), cfg.run.dtype);
}

}  // namespace

BackendInfo ulysses_backend_info() {
  return {"ulysses",
          "all-to-all to head shards, full-sequence attention, all-to-all back (DeepSpeed-Ulysses)",
          {ulysses_degree_key()},  // only as the world size (validate)
          degrees,
          buffer_bytes,
          /*splits_heads=*/nullptr,
          validate,
          create,
          /*traffic=*/nullptr,
          /*query_prefix=*/false};
}

}  // namespace minictx
