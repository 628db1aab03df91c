#include "backends/ring/ring_backend.hpp"

#include "backends/ring/ring_engine.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

// Every rank is a ring rank, so the layout's outer parts are the world's ranks.
class RingBackend final : public AttentionBackend {
 public:
  RingBackend(Comm& comm, Device& device, const SequenceLayout& layout) : engine_(comm, comm.size(), device, layout) {
    layout_ = layout;
    part_ = comm.rank();
  }

  void forward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
               Tensor& lse) override {
    engine_.forward(s, q, k, v, o, lse);
  }

  void backward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) override {
    engine_.backward(s, q, k, v, o, lse, dout, dq, dk, dv);
  }

  void forward_query_prefix(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                            Tensor& lse) override {
    engine_.forward_query_prefix(s, q, k, v, o, lse);
  }

 private:
  RingEngine engine_;
};

void validate(const RunConfig& cfg, const Topology& topology) {
  const int world = topology.world_size;
  const AttentionConfig& a = cfg.attention;
  if (world < 1) input_error("attention.backend ring needs at least 1 rank");
  if (a.ulysses_degree != 1)
    input_error("attention.backend ring takes no ulysses_degree (got " + std::to_string(a.ulysses_degree) +
                "); use usp");
  if (a.ring_degree != 0 && a.ring_degree != world)
    input_error("attention.backend ring runs one ring over all " + std::to_string(world) +
                " ranks, not ring_degree " + std::to_string(a.ring_degree) + "; use usp");
}

std::unique_ptr<AttentionBackend> create(Comm& comm, Device& device, const RunConfig& cfg) {
  const SequenceLayout layout(layout_kind(cfg.attention.ring_type), cfg.sequence.length, comm.size());
  return std::make_unique<RingBackend>(comm, device, layout);
}

}  // namespace

BackendInfo ring_backend_info() {
  return {"ring", "ring attention: K/V rotate over all ranks (ring_type basic, zigzag or stripe)", validate,
          create, /*query_prefix=*/true};
}

}  // namespace minictx
