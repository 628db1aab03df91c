#include "backends/engine/ring_walk.hpp"

#include <utility>

#include "core/error.hpp"
#include "core/profiler_region.hpp"
#include "core/saturating.hpp"

namespace minictx {

PackedTensors::PackedTensors(Device& dev, const std::vector<Part>& parts) {
  offsets_.push_back(0);
  for (const Part& part : parts) {
    int64_t n = 1;
    for (int64_t d : part.shape) n *= d;
    // Each part starts at a multiple of its element size, fp32 after an odd 16-bit run.
    const int64_t e = element_bytes(part.dtype), at = (offsets_.back() + e - 1) / e * e;
    offsets_.back() = at;
    offsets_.push_back(at + n * e);
  }
  // Raw storage, in 2-byte units (every element size is a multiple of that).
  whole_ = std::make_shared<Tensor>(dev.alloc({offsets_.back() / 2}, DType::bf16));
  for (size_t i = 0; i < parts.size(); ++i)
    // Aliasing pointer: the part shares ownership of the whole allocation.
    parts_.emplace_back(std::shared_ptr<void>(whole_, data(int(i))), parts[i].shape, parts[i].dtype);
}

namespace {

std::vector<PackedTensors::Part> parts_of(const std::vector<Carried>& carried) {
  std::vector<PackedTensors::Part> parts;
  parts.reserve(carried.size());
  for (const Carried& c : carried) parts.push_back({c.tensor->shape(), c.wire});
  return parts;
}

// The buffers a walk rotates through. `base` holds the block a round starts with (and
// sends on to the next window meanwhile), `arriving` the next round's; the inner ring
// alternates between `ping` and `pong`. With one window nothing is sent on, so `base`
// doubles as `pong` and the plain ring needs only two buffers.
struct WalkBuffers {
  WalkBuffers(Device& dev, const std::vector<PackedTensors::Part>& shapes, bool two_level) {
    base = make(dev, shapes);
    ping = make(dev, shapes);
    pong = two_level ? make(dev, shapes) : base;
    arriving = two_level ? make(dev, shapes) : nullptr;
  }
  PackedTensors* next_of(const PackedTensors* cur) const { return cur == ping ? pong : ping; }

  PackedTensors *base, *ping, *pong, *arriving;

 private:
  PackedTensors* make(Device& dev, const std::vector<PackedTensors::Part>& shapes) {
    pool_.push_back(std::make_unique<PackedTensors>(dev, shapes));
    return pool_.back().get();
  }
  std::vector<std::unique_ptr<PackedTensors>> pool_;
};

// Post the shift of parts [first, end) to the next rank of the ring `c`, receiving the
// previous rank's into the same parts of `to`.
ShiftHandle shift_right(Comm& c, PackedTensors& from, PackedTensors& to, int first, int end) {
  const int n = c.size(), r = c.rank();
  return c.shift_start(from.data(first), to.data(first), from.bytes(first, end), (r + 1) % n,
                       (r + n - 1) % n);
}

}  // namespace

RingWalk::RingWalk(Comm& group, int window) : rank_(group.rank()), window_(window) {
  require(window >= 1 && group.size() % window == 0, "ring walk: the window must divide the group");
  windows_ = group.size() / window;
  for (int j = 0; j < group.size(); ++j) world_rank_.push_back(group.world_rank_of(j));
  inner_ = group.split(/*color=*/rank_ / window, /*key=*/rank_ % window);
  outer_ = group.split(/*color=*/rank_ % window, /*key=*/rank_ / window);
  outer_grad_ = group.split(/*color=*/rank_ % window, /*key=*/rank_ / window);
}

int64_t RingWalk::buffer_bytes(int64_t payload_bytes, int64_t accumulated, DType sum_wire, int windows) {
  const bool two_level = windows > 1;
  const int64_t sums = sat_mul(accumulated, element_bytes(sum_wire));
  // WalkBuffers, the fp32 gradient scratch, the finished sums come home, and the two
  // accumulators crossing windows.
  return sat_add(sat_add(sat_mul(two_level ? 4 : 2, sat_add(payload_bytes, sums)), sat_mul(accumulated, 4)),
                 sat_mul(sums, two_level ? 3 : 1));
}

int RingWalk::source(int round, int step) const {
  const int x = rank_ / window_, k = rank_ % window_;
  return (x - round + windows_) % windows_ * window_ + (k - step + window_) % window_;
}

RingWalk::Hops RingWalk::travel(const Hops& hops) const {
  if (hops.empty()) return Hops(world_rank_.size(), window_ - 1);
  require(plain() && hops.size() == world_rank_.size(), "ring walk: hops are for a plain ring, one per rank");
  return hops;
}

void RingWalk::inner_step(int round, int step, PackedTensors& from, PackedTensors& to, Parts out, Parts in,
                          const std::function<void(int source)>& compute) {
  const bool shift = !out.empty() || !in.empty();
  const int j = source(round, step);
  const ProfilerRegion region(region::ring_step);
  RingTimeline::StepMarks marks;
  ShiftHandle h;
  ProfilerSpan transfer;
  if (shift) {
    transfer = ProfilerSpan::open(span::ring_transfer);
    marks.transfer_posted = mark();
    const int n = inner_->size(), r = inner_->rank();
    h = inner_->exchange_start(from.data(out.first), from.bytes(out.first, out.end), (r + 1) % n,
                               to.data(in.first), to.bytes(in.first, in.end), (r + n - 1) % n);
  }
  marks.compute_start = mark();
  compute(j);
  marks.compute_end = mark();
  if (shift) {
    const ProfilerRegion wait(region::ring_wait);
    inner_->wait(h);
    marks.transfer_done = mark();
    transfer.close();
  }
  if (timeline_) timeline_->add_step(round, step, world_rank_[size_t(j)], marks);
}

void RingWalk::hop_home(int step, PackedTensors& from, Parts sums, bool send, bool receive, int own_hops,
                        PackedTensors& home) {
  if (!send && !receive) return;
  const int n = inner_->size(), r = inner_->rank();
  const Parts none;
  const Parts out = send ? sums : none;
  ShiftHandle h = inner_->exchange_start(
      from.data(out.first), from.bytes(out.first, out.end), (r - step % n + n) % n, home.data(0),
      receive ? home.bytes(0, sums.end - sums.first) : 0, (r + own_hops) % n);
  inner_->wait(h);
}

RingWalk::OuterShift RingWalk::post_outer(Comm& ring, PackedTensors& from, PackedTensors& to, int first,
                                          int end, OuterCarries carries) {
  OuterShift s;
  s.span =
      ProfilerSpan::open(carries == OuterCarries::block ? span::ring_outer_block : span::ring_outer_sums);
  s.posted = mark();
  s.handle = shift_right(ring, from, to, first, end);
  return s;
}

void RingWalk::wait_outer(Comm& ring, OuterShift& shift, int round, OuterCarries carries) {
  {
    const ProfilerRegion region(region::ring_outer_wait);
    ring.wait(shift.handle);
  }
  shift.span.close();
  if (timeline_) timeline_->add_outer(round, carries, shift.posted, mark());
}

void RingWalk::forward(Device& dev, const std::vector<Carried>& payload, const Visit& visit,
                       const Hops& hops) {
  const int np = int(payload.size()), w = window_, W = windows_;
  const Hops far = travel(hops);
  auto hops_of = [&](int j) { return far[size_t(j)]; };
  WalkBuffers buf(dev, parts_of(payload), W > 1);
  for (int p = 0; p < np; ++p) dev.copy((*buf.base)[p], *payload[size_t(p)].tensor);
  for (int round = 0; round < W; ++round) {
    const bool pass_on = round + 1 < W;  // the last round's block has been everywhere else
    OuterShift outer_shift;
    if (pass_on) outer_shift = post_outer(*outer_, *buf.base, *buf.arriving, 0, np, OuterCarries::block);
    PackedTensors* cur = buf.base;
    for (int step = 0; step < w; ++step) {
      PackedTensors* next = buf.next_of(cur);
      // A block goes on while a later rank needs it (round the window at most).
      const int j = source(round, step), coming = source(round, step + 1);
      const Parts out{0, step < hops_of(j) ? np : 0}, in{0, step < hops_of(coming) ? np : 0};
      inner_step(round, step, *cur, *next, out, in, [&](int src) {
        if (step <= hops_of(src)) visit(src, *cur);
      });
      cur = next;
    }
    if (pass_on) {
      wait_outer(*outer_, outer_shift, round, OuterCarries::block);
      std::swap(buf.base, buf.arriving);
    }
  }
}

void RingWalk::backward_step(Device& dev, StepAt at, const Hops& far, PackedTensors& cur, PackedTensors& next,
                             PackedTensors& grads, PackedTensors& home, const GradVisit& visit) {
  const int np = at.payload, ng = at.sums, all = np + ng, step = at.step;
  auto hops_of = [&](int j) { return far[size_t(j)]; };
  // The block held goes on while a later rank needs it; the accumulators of the step
  // before go on with their block, a step behind it.
  const int j = source(at.round, step), coming = source(at.round, step + 1);
  const bool held = step <= hops_of(j);
  const bool block_out = step < hops_of(j);
  const bool sums_out = step > 0 && step - 1 < hops_of(source(at.round, step - 1));
  const bool block_in = step < hops_of(coming);
  const bool sums_in = step > 0 && held;
  const Parts out{block_out ? 0 : np, sums_out ? all : np}, in{block_in ? 0 : np, sums_in ? all : np};
  bool added = false;
  inner_step(at.round, step, cur, next, out, in, [&](int src) {
    if (!held) return;
    for (int g = 0; g < ng; ++g) dev.fill(grads[g], 0.0f);
    added = visit(src, cur, grads);
  });
  if (added)
    for (int g = 0; g < ng; ++g) dev.add(next[np + g], grads[g]);
  // The sums of a block the walk takes no further are finished: they go back to the rank
  // that began the round with it, which gets its own the same way.
  const bool finished = held && step == hops_of(j);
  if (finished && step == 0)
    for (int g = 0; g < ng; ++g) dev.copy(home[g], next[np + g]);
  const int own_hops = hops_of(source(at.round, 0));
  hop_home(step, next, {np, all}, finished && step > 0, step == own_hops && step > 0, own_hops, home);
}

void RingWalk::backward(Device& dev, const std::vector<Carried>& payload,
                        const std::vector<Tensor*>& accumulated, DType sum_wire, const GradVisit& visit,
                        const Hops& hops) {
  const int np = int(payload.size()), ng = int(accumulated.size());
  const int w = window_, W = windows_;
  const Hops far = travel(hops);
  std::vector<PackedTensors::Part> sums, scratch;
  for (const Tensor* t : accumulated) {
    sums.push_back({t->shape(), sum_wire});
    scratch.push_back({t->shape(), DType::f32});
  }
  std::vector<PackedTensors::Part> parts = parts_of(payload);
  parts.insert(parts.end(), sums.begin(), sums.end());

  // Each buffer is [payload..., accumulators...]; at inner step i the accumulators in it
  // are those of the previous step's source.
  WalkBuffers buf(dev, parts, W > 1);
  PackedTensors grads(dev, scratch);
  // The sums of the block this rank began the round with, once they are finished.
  PackedTensors home(dev, sums);
  // The accumulators crossing windows: one on its way out, one arriving.
  std::unique_ptr<PackedTensors> crossing[2];
  if (W > 1)
    for (auto& c : crossing) c = std::make_unique<PackedTensors>(dev, sums);
  int arriving_acc = 0;
  OuterShift acc_shift;

  for (int p = 0; p < np; ++p) dev.copy((*buf.base)[p], *payload[size_t(p)].tensor);
  for (int round = 0; round < W; ++round) {
    const bool pass_on = round + 1 < W;
    OuterShift outer_shift;
    if (pass_on) outer_shift = post_outer(*outer_, *buf.base, *buf.arriving, 0, np, OuterCarries::block);
    PackedTensors* cur = buf.base;
    // The round's first source starts its accumulators in the buffer its step fills.
    for (int g = 0; g < ng; ++g) dev.fill((*buf.next_of(cur))[np + g], 0.0f);
    for (int step = 0; step < w; ++step) {
      PackedTensors* next = buf.next_of(cur);
      backward_step(dev, {round, step, np, ng}, far, *cur, *next, grads, home, visit);
      cur = next;
    }
    if (W == 1) {
      for (int g = 0; g < ng; ++g) dev.copy(*accumulated[size_t(g)], home[g]);
      return;
    }
    // Add what the windows before this one summed for this round's block (it arrived
    // during the round) and pass the sum on; the next window needs it a round later.
    PackedTensors& sum = *crossing[arriving_acc];
    if (round > 0) wait_outer(*outer_grad_, acc_shift, round - 1, OuterCarries::sums);
    for (int g = 0; g < ng; ++g) {
      if (round > 0)
        dev.add(sum[g], home[g]);
      else
        dev.copy(sum[g], home[g]);
    }
    acc_shift = post_outer(*outer_grad_, sum, *crossing[1 - arriving_acc], 0, ng, OuterCarries::sums);
    arriving_acc = 1 - arriving_acc;
    if (pass_on) {
      wait_outer(*outer_, outer_shift, round, OuterCarries::block);
      std::swap(buf.base, buf.arriving);
    }
  }
  // The last round's sums went to their owners, the next window; this rank's own came
  // from the window before.
  wait_outer(*outer_grad_, acc_shift, W - 1, OuterCarries::sums);
  for (int g = 0; g < ng; ++g) dev.copy(*accumulated[size_t(g)], (*crossing[arriving_acc])[g]);
}

}  // namespace minictx
