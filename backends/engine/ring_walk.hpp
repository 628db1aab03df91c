#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "comm/comm.hpp"
#include "core/profiler_region.hpp"
#include "core/ring_timeline.hpp"
#include "device/device.hpp"

namespace minictx {

// A tensor a walk carries and the element type it travels in: the run's dtype for
// tensor data, fp32 for softmax statistics (docs/design.md, "Precision").
struct Carried {
  const Tensor* tensor;
  DType wire;
};

// Tensors of the given shapes and types back to back in one allocation, so any run of
// consecutive ones travels as one message.
class PackedTensors {
 public:
  struct Part {
    std::vector<int64_t> shape;
    DType dtype;
  };
  PackedTensors(Device& dev, const std::vector<Part>& parts);
  Tensor& operator[](int i) { return parts_[size_t(i)]; }
  // Where part `first` starts, and the bytes of parts [first, end).
  void* data(int first) const { return static_cast<char*>(whole_->raw()) + offsets_[size_t(first)]; }
  int64_t bytes(int first, int end) const { return offsets_[size_t(end)] - offsets_[size_t(first)]; }

 private:
  std::vector<int64_t> offsets_;  // byte offset of each part, and the total
  std::shared_ptr<Tensor> whole_;
  std::vector<Tensor> parts_;
};

// Brings every group rank's block (its "payload" tensors) past every rank of the group
// once, over a two-level ring (LoongTrain's double ring, BurstAttention's
// topology-aware ring). The group's C ranks form C/w windows of w consecutive ranks.
// Within a window blocks go round the inner ring; at the start of each round a window
// sends the block it begins with on to the next window over the outer ring, so that
// transfer overlaps a whole inner round. With one window this is the plain ring.
//
// Round o, inner step i: this rank (window x, index k) holds the block of group rank
// source(o, i) = ((x − o) mod W)·w + (k − i) mod w.
//
// The backward walk also carries gradient accumulators: the accumulator of a block
// trails the block by one inner step, goes home within the window at the end of the
// round (one inner hop), and then follows the block's window one round behind over the
// outer ring, on its own communicator so both outer transfers are in flight together.
// After the last round one more outer hop brings every accumulator to its owner.
//
// On a plain ring (one window) a walk may be told how far each block travels (hops: the
// last inner step at which a rank needs it): a block goes no further, its accumulators go
// from there straight home, and a rank past it neither receives nor visits it. A sliding
// window shorter than the sequence leaves later ranks nothing to do with a block
// (docs/algorithms.md, "Sliding windows"). A two-level ring takes every block everywhere.
class RingWalk {
 public:
  // group: rank order is the ring order. window must divide group.size().
  RingWalk(Comm& group, int window);

  // Bytes a walk allocates for blocks of `payload_bytes` carrying `accumulated` elements
  // of sums (0: forward) that travel in `sum_wire`, over `windows` windows: the memory
  // estimate.
  static int64_t buffer_bytes(int64_t payload_bytes, int64_t accumulated, DType sum_wire, int windows);

  int rank() const { return rank_; }
  // Every ring step (a visit and the inner transfer around it) and every outer-ring
  // transfer is reported to `timeline` while it records; nullptr: none.
  void set_timeline(RingTimeline* timeline) { timeline_ = timeline; }

  bool plain() const { return windows_ == 1; }

  // hops[j]: the inner steps group rank j's block travels on a plain ring (0 ≤ hops[j] <
  // group size); empty: every block goes all the way round.
  using Hops = std::vector<int>;

  // visit(source, block): block[i] is the source's payload[i], in its wire type.
  using Visit = std::function<void(int source, PackedTensors& block)>;
  void forward(Device& dev, const std::vector<Carried>& payload, const Visit& visit, const Hops& hops = {});

  // visit(source, block, grads) adds the source's gradient parts into the zeroed fp32
  // `grads` (shaped like `accumulated`) and returns whether it added anything. The
  // running sums travel in `sum_wire`; on return accumulated[i] holds the sum over the
  // group for this rank's own block.
  using GradVisit = std::function<bool(int source, PackedTensors& block, PackedTensors& grads)>;
  void backward(Device& dev, const std::vector<Carried>& payload, const std::vector<Tensor*>& accumulated,
                DType sum_wire, const GradVisit& visit, const Hops& hops = {});

 private:
  // Parts [first, end) of a walk buffer; empty: nothing.
  struct Parts {
    int first = 0, end = 0;
    bool empty() const { return first >= end; }
  };
  int source(int round, int step) const;
  // `hops`, or round the window for every block where it is empty.
  Hops travel(const Hops& hops) const;
  StepClock::Mark mark() { return timeline_ ? timeline_->mark() : RingTimeline::kNoMark; }
  // One ring step: posts the send of parts `out` of `from` to the next rank and the
  // receive of parts `in` of `to` from the previous one (nothing when both are empty),
  // runs compute(source) meanwhile, waits, and tells the timeline.
  void inner_step(int round, int step, PackedTensors& from, PackedTensors& to, Parts out, Parts in,
                  const std::function<void(int source)>& compute);
  // Where a backward step is: its round and inner step, and how many payload and sums
  // parts a walk buffer holds.
  struct StepAt {
    int round, step, payload, sums;
  };
  // One inner step of the backward: `cur` holds the step's block and the sums
  // of the step before, `next` receives the next ones; the visit's gradients are added into
  // `next`'s sums, and sums the walk takes no further hop home, this rank's own into `home`.
  void backward_step(Device& dev, StepAt at, const Hops& far, PackedTensors& cur, PackedTensors& next,
                     PackedTensors& grads, PackedTensors& home, const GradVisit& visit);
  // The backward's hop home at inner step `step`: sends the finished sums in parts `sums`
  // of `from` (if `send`) back to the rank that began the round with their block, and
  // receives this rank's own (if `receive`) from the rank that finished them, into `home`.
  void hop_home(int step, PackedTensors& from, Parts sums, bool send, bool receive, int own_hops,
                PackedTensors& home);
  // An outer-ring transfer in flight, with its posting's mark for the timeline.
  struct OuterShift {
    ShiftHandle handle;
    StepClock::Mark posted = RingTimeline::kNoMark;
    ProfilerSpan span;
  };
  OuterShift post_outer(Comm& ring, PackedTensors& from, PackedTensors& to, int first, int end,
                        OuterCarries carries);
  // Waits for `shift` and reports it to the timeline as round `round`'s `carries`.
  void wait_outer(Comm& ring, OuterShift& shift, int round, OuterCarries carries);

  int rank_, window_, windows_;
  std::vector<int> world_rank_;  // [group rank] → world rank, for the timeline
  std::unique_ptr<Comm> inner_, outer_, outer_grad_;
  RingTimeline* timeline_ = nullptr;
};

}  // namespace minictx
