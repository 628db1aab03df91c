#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/engine/parallel_degrees.hpp"
#include "backends/engine/sequence_layout.hpp"
#include "comm/comm.hpp"
#include "config/backend_catalog.hpp"
#include "config/run_config.hpp"
#include "core/ring_timeline.hpp"
#include "device/device.hpp"

namespace minictx {

// A sequence-parallel attention algorithm. It owns the layout of the tokens over the
// group and computes this rank's part of exact attention through Comm and Device only.
// q/o/dq are [B·L, H·D] and k/v/dk/dv [B·L, Hkv·D] for this rank's L rows; lse is
// [B, H, L]. backward() overwrites dq, dk, dv and needs the o and lse of forward().
class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;
  const SequenceLayout& layout() const { return layout_; }
  int part() const { return part_; }  // this rank's part of the layout

  virtual void forward(const AttnShape&, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                       Tensor& lse) = 0;
  virtual void backward(const AttnShape&, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                        const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) = 0;
  // forward() for the queries in the first n rows of each batch of this rank's L rows
  // only: q and o hold B·n rows, lse is [B, H, n]; k and v are whole. The recompute of
  // checkpointing: selective_half, on the backends validate_backend accepts for it.
  virtual void forward_query_prefix(const AttnShape&, const Tensor& q, const Tensor& k, const Tensor& v,
                                    Tensor& o, Tensor& lse);
  // Backends built on the ring engine report each ring step to `timeline` (nullptr: stop);
  // the others have no ring steps and record nothing.
  virtual void set_ring_timeline(RingTimeline*) {}

 protected:
  SequenceLayout layout_;
  int part_ = 0;
};

// The shape of a backend's traffic, which `minictx project` replays: the ring engine over
// `layout` (local and ulysses are a ring of one, inside a head exchange for ulysses), or
// an all-gather of K/V.
struct TrafficShape {
  bool all_gathers_kv = false;
  LayoutKind layout = LayoutKind::contiguous;
  bool query_side_backward = false;  // the BurstAttention backward: Q, dO, LSE, D travel
};

// Everything minictx knows of a backend beyond its class, declared by the backend
// itself (its *_backend.cpp) as one aggregate of every field, in this order, and listed
// once in backends/registry.cpp. The fields have no defaults, so a backend that leaves
// one out does not build (-Wmissing-field-initializers, an error in CI). Nothing else
// names a backend: the deck, the degrees, the memory estimate and `minictx list` read this.
struct BackendInfo {
  std::string name;
  std::string summary;  // one line for `minictx list`
  // The deck keys of its own it reads (attention.window_size: name, type, choices, default,
  // doc line); the schema, the checks, sweeps, the resolved deck and `minictx list` take
  // them from here, and the deck refuses them for the other backends
  // (config/backend_catalog.hpp). Keys the engine reads come from backends/engine/engine_keys.hpp.
  std::vector<BackendKey> keys;
  // How the deck's degrees and defaults resolve on this topology's ranks.
  ParallelDegrees (*degrees)(const RunConfig&, const Topology&);
  // Bytes it allocates per rank beyond q, k, v, o and their gradients (ring buffers,
  // head-exchanged copies, gathered K/V), in the run's dtype where they are stored in it:
  // the memory estimate's share of the backend.
  int64_t (*buffer_bytes)(const RunConfig&, const Topology&);
  // Whether it exchanges heads over attention.ulysses_degree ranks; nullptr = never.
  bool (*splits_heads)(const AttentionConfig&);
  // Throws InputError (one line) when the deck cannot run on this topology's ranks.
  void (*validate)(const RunConfig&, const Topology&);
  std::unique_ptr<AttentionBackend> (*create)(Comm&, Device&, const RunConfig&);
  // Its traffic on this deck; nullptr = the default TrafficShape (local, ulysses).
  TrafficShape (*traffic)(const AttentionConfig&);
  // Implements forward_query_prefix when it runs without a head exchange (Ulysses degree 1).
  bool query_prefix;
  // The name its paper gives this configuration (a figure's legend), which the points
  // carry as their `variant` label for the report's tables and the plots; nullptr: none.
  std::string (*variant)(const RunConfig&) = nullptr;
};

// The ring family's traffic: K/V round the ring engine on the deck's ring_type layout.
TrafficShape ring_engine_traffic(const AttentionConfig&);

}  // namespace minictx
