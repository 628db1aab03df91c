#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backends/sequence_layout.hpp"
#include "comm/comm.hpp"
#include "config/run_config.hpp"
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
  virtual void forward_query_prefix(const AttnShape&, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                                    Tensor& lse);

 protected:
  SequenceLayout layout_;
  int part_ = 0;
};

struct BackendInfo {
  std::string name;
  std::string summary;
  // Throws InputError (one line) when the deck cannot run on this topology's ranks.
  void (*validate)(const RunConfig&, const Topology&);
  std::unique_ptr<AttentionBackend> (*create)(Comm&, Device&, const RunConfig&);
  // Implements forward_query_prefix when it runs without a head exchange (Ulysses degree 1).
  bool query_prefix;
};

const std::vector<BackendInfo>& backend_registry();
const BackendInfo& find_backend(const std::string& name);
// The deck's backend's own checks, and those every backend shares (checkpointing:
// selective_half needs forward_query_prefix): one-line InputErrors.
void validate_backend(const RunConfig&, const Topology&);

}  // namespace minictx
