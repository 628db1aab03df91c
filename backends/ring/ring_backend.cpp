#include "backends/ring/ring_backend.hpp"

#include "backends/engine/buffer_estimate.hpp"
#include "backends/engine/ring_engine.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

// Every rank is a ring rank, so the layout's outer parts are the world's ranks.
class RingBackend final : public AttentionBackend {
 public:
  RingBackend(Comm& comm, Device& device, const SequenceLayout& layout)
      : engine_(comm, comm.size(), device, layout) {
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

  void set_ring_timeline(RingTimeline* timeline) override { engine_.set_timeline(timeline); }

 private:
  RingEngine engine_;
};

// One ring over every rank of any world: the deck refuses ulysses_degree and ring_degree
// (they are not ring's options), so nothing is left to check.
void validate(const RunConfig&, const Topology&) {}

ParallelDegrees degrees(const RunConfig&, const Topology& topology) {
  return {1, topology.world_size, topology.world_size};
}

int64_t buffer_bytes(const RunConfig& cfg, const Topology& topology) {
  return ulysses_ring_bytes(cfg, topology, degrees(cfg, topology), BackwardTraffic::kv);
}

std::unique_ptr<AttentionBackend> create(Comm& comm, Device& device, const RunConfig& cfg) {
  const SequenceLayout layout = ring_sequence_layout(cfg, comm.size());
  return std::make_unique<RingBackend>(comm, device, layout);
}

}  // namespace

BackendInfo ring_backend_info() {
  return {"ring",
          "ring attention: K/V rotate over all ranks (ring_type basic, zigzag or stripe)",
          {ring_type_key()},
          degrees,
          buffer_bytes,
          /*splits_heads=*/nullptr,
          validate,
          create,
          ring_engine_traffic,
          /*query_prefix=*/true};
}

}  // namespace minictx
