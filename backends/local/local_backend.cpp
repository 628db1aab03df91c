#include "backends/local/local_backend.hpp"

#include "core/error.hpp"

namespace minictx {
namespace {

class LocalBackend final : public AttentionBackend {
 public:
  LocalBackend(Device& device, const RunConfig& cfg) : device_(device) {
    layout_ = SequenceLayout(LayoutKind::contiguous, cfg.sequence.length, 1);
  }

  void forward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
               Tensor& lse) override {
    const auto pos = layout_.positions(0);
    device_.attn_init(o, lse);
    device_.attn_fwd(s, {block(q, pos), block(k, pos), block(v, pos), &o, &lse});
  }

  // The first n positions' queries; under a causal mask the kernel skips the key tiles
  // past them.
  void forward_query_prefix(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                            Tensor& lse) override {
    const auto pos = layout_.positions(0);
    const int64_t n = matrix_rows(q) / s.batch;
    device_.attn_init(o, lse);
    device_.attn_fwd(s, {{&q, 0, n, pos.data()}, block(k, pos), block(v, pos), &o, &lse});
  }

  void backward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) override {
    const auto pos = layout_.positions(0);
    Tensor delta = device_.alloc_rows_of_lse(lse);
    device_.attn_bwd_delta(s, o, dout, delta);
    device_.fill(dq, 0.0f);
    device_.fill(dk, 0.0f);
    device_.fill(dv, 0.0f);
    device_.attn_bwd(s, {block(q, pos), block(k, pos), block(v, pos), &dout, &lse, &delta, &dq, &dk, &dv});
  }

 private:
  static SeqBlock block(const Tensor& t, const std::vector<int64_t>& pos) {
    return {&t, 0, int64_t(pos.size()), pos.data()};
  }
  Device& device_;
};

void validate(const RunConfig&, const Topology& topology) {
  const int world = topology.world_size;
  if (world == 1) return;
  std::vector<std::string> others;
  for (const auto& b : backend_catalog())
    if (b.name != local_backend_info().name) others.push_back(b.name);
  std::string choices;
  for (std::size_t i = 0; i < others.size(); ++i)
    choices += (i == 0 ? "" : i + 1 == others.size() ? " or " : ", ") + others[i];
  input_error("attention.backend local runs on 1 rank, not " + std::to_string(world) + " (choose " + choices +
              ")");
}

ParallelDegrees degrees(const RunConfig&, const Topology&) { return {1, 1, 1}; }

int64_t buffer_bytes(const RunConfig&, const Topology&) { return 0; }

std::unique_ptr<AttentionBackend> create(Comm&, Device& device, const RunConfig& cfg) {
  return std::make_unique<LocalBackend>(device, cfg);
}

}  // namespace

BackendInfo local_backend_info() {
  return {"local",
          "whole-sequence attention on one rank (the single-device reference)",
          /*keys=*/{},
          degrees,
          buffer_bytes,
          /*splits_heads=*/nullptr,
          validate,
          create,
          /*traffic=*/nullptr,
          /*query_prefix=*/true};
}

}  // namespace minictx
