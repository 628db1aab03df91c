#include "backends/engine/ulysses_ring.hpp"

#include "backends/engine/head_exchange.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

class UlyssesRing final : public AttentionBackend {
 public:
  UlyssesRing(Comm& world, Device& device, const ParallelDegrees& d, const RunConfig& cfg,
              BackwardTraffic traffic) {
    const int u = d.ulysses, context = d.context;
    layout_ = ring_sequence_layout(cfg, /*outer=*/context, /*inner=*/u);
    part_ = world.rank();
    ulysses_comm_ = world.split(/*color=*/world.rank() / u, /*key=*/world.rank() % u);
    context_comm_ = world.split(/*color=*/world.rank() % u, /*key=*/world.rank() / u);
    if (u > 1) exchange_ = std::make_unique<HeadExchange>(*ulysses_comm_, device);
    ring_ = std::make_unique<RingEngine>(*context_comm_, d.window, device, layout_, traffic);
  }

  void forward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
               Tensor& lse) override {
    if (exchange_)
      exchange_->forward(*ring_, s, q, k, v, o, lse);
    else
      ring_->forward(s, q, k, v, o, lse);
  }

  void backward(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) override {
    if (exchange_)
      exchange_->backward(*ring_, s, q, k, v, o, lse, dout, dq, dk, dv);
    else
      ring_->backward(s, q, k, v, o, lse, dout, dq, dk, dv);
  }

  // Without a head exchange only: validate_backend refuses selective_half otherwise.
  void forward_query_prefix(const AttnShape& s, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                            Tensor& lse) override {
    require(!exchange_, "a query prefix cannot cross a head exchange");
    ring_->forward_query_prefix(s, q, k, v, o, lse);
  }

  void set_ring_timeline(RingTimeline* timeline) override { ring_->set_timeline(timeline); }

 private:
  std::unique_ptr<Comm> ulysses_comm_, context_comm_;
  std::unique_ptr<HeadExchange> exchange_;
  std::unique_ptr<RingEngine> ring_;
};

}  // namespace

std::unique_ptr<AttentionBackend> make_ulysses_ring(Comm& world, Device& device, const ParallelDegrees& d,
                                                    const RunConfig& cfg, BackwardTraffic traffic) {
  return std::make_unique<UlyssesRing>(world, device, d, cfg, traffic);
}

}  // namespace minictx
