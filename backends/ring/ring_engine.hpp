#pragma once
#include <cstdint>
#include <vector>

#include "backends/sequence_layout.hpp"
#include "comm/comm.hpp"
#include "device/device.hpp"

namespace minictx {

// The ring step loop every ring-based backend shares: K/V go round the ring, each rank
// merges every source's block into its own (O, LSE); backward sends the dK/dV
// accumulators round with them. Through Comm and Device only.
class RingEngine {
 public:
  // ring: communicator whose rank order is the ring order (send to rank+1, receive from rank-1).
  // layout: the sequence layout whose OUTER parts are the ring ranks: layout.outer_positions(j)
  // are the global positions of the rows ring rank j holds (q and k/v rows alike), outer_len() rows per batch.
  RingEngine(Comm& ring, Device& device, const SequenceLayout& layout);
  void forward(const AttnShape&, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o, Tensor& lse);
  void backward(const AttnShape&, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv);

 private:
  Comm& ring_;
  Device& dev_;
  SequenceLayout layout_;
  std::vector<std::vector<int64_t>> positions_;  // [ring rank] → global positions of its rows
};

}  // namespace minictx
