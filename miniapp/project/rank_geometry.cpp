#include "project/rank_geometry.hpp"

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

namespace minictx {
namespace {

// Σ_{i<n} ⌊(a·i + b) / m⌋ for n, m > 0 and a, b ≥ 0 (the Euclid-like floor sum), in
// 128 bits: the terms of a 10⁹-rank walk overflow 64.
__int128 floor_sum(__int128 n, __int128 m, __int128 a, __int128 b) {
  __int128 sum = 0;
  while (n > 0) {
    if (a >= m) {
      sum += (n - 1) * n / 2 * (a / m);
      a %= m;
    }
    if (b >= m) {
      sum += n * (b / m);
      b %= m;
    }
    const __int128 top = a * n + b;
    if (top < m) break;
    n = top / m;
    b = top % m;
    std::swap(m, a);
  }
  return sum;
}

// Σ_{i<n} #{a ∈ [0, start + i·stride): a mod R ≥ R − d}, 0 < d < R: the full nodes below
// each bound hold d such ranks each, and the bound's own node max(0, r − (R − d)) with
// r = bound mod R, which repeats every R / gcd(stride, R) terms.
__int128 high_ranks_below(int64_t start, int64_t stride, int64_t n, int64_t d, int64_t rpn) {
  __int128 sum = __int128(d) * floor_sum(n, rpn, stride, start);
  const int64_t period = rpn / std::gcd(stride % rpn == 0 ? rpn : stride % rpn, rpn);
  auto tail = [&](int64_t terms) {
    __int128 s = 0;
    for (int64_t i = 0; i < terms; ++i) {
      const int64_t r = int64_t((__int128(start) + __int128(i) * stride) % rpn);
      s += std::max<int64_t>(0, r - (rpn - d));
    }
    return s;
  };
  sum += tail(period) * (n / period) + tail(n % period);
  return sum;
}

}  // namespace

int64_t crossing_edges(int64_t start, int64_t len, int64_t stride, int64_t n, int64_t d, int64_t rpn) {
  if (len <= 0 || n <= 0 || d <= 0) return 0;
  if (d >= rpn) return len * n;  // every edge leaves its node
  // a and a + d lie on different nodes exactly when a mod R ≥ R − d.
  return int64_t(high_ranks_below(start + len, stride, n, d, rpn) -
                 high_ranks_below(start, stride, n, d, rpn));
}

PeerSplit consecutive_peers(int64_t first, int64_t count, const Topology& t) {
  PeerSplit s;
  if (count < 2) return s;
  const int64_t rpn = t.ranks_per_node;
  const int64_t last = first + count - 1;
  const int64_t n0 = first / rpn, n1 = last / rpn;
  // Ordered pairs on one node: m·(m − 1) for each node's m members.
  auto pairs = [](double m) { return m * (m - 1); };
  double intra = 0;
  if (n0 == n1) {
    intra = pairs(double(count));
  } else {
    intra = pairs(double((n0 + 1) * rpn - first)) + pairs(double(last - n1 * rpn + 1)) +
            double(n1 - n0 - 1) * pairs(double(rpn));
  }
  const double all = pairs(double(count));
  s.intra = intra / double(count);
  s.inter = (all - intra) / double(count);
  s.any_inter = n0 != n1;
  return s;
}

PeerSplit ulysses_peers(int u, const Topology& t) {
  PeerSplit peers;
  if (u < 2) return peers;
  const int64_t groups = t.world_size / u, rpn = t.ranks_per_node;
  // Group q's split depends on where it starts within its node, q·u mod R, which repeats
  // every R / gcd(u, R) groups.
  const int64_t period = std::min<int64_t>(groups, rpn / std::gcd<int64_t>(u, rpn));
  std::vector<PeerSplit> one(size_t(period), PeerSplit{});
  for (int64_t q = 0; q < period; ++q) one[size_t(q)] = consecutive_peers(q * u, u, t);
  for (int64_t q = 0; q < period; ++q) {
    const int64_t times = groups / period + (q < groups % period ? 1 : 0);  // groups starting where q does
    peers.intra += one[size_t(q)].intra * double(times) / double(groups);
    peers.inter += one[size_t(q)].inter * double(times) / double(groups);
    peers.any_inter = peers.any_inter || one[size_t(q)].any_inter;
  }
  return peers;
}

RingWalkModel::RingWalkModel(int ulysses, int context, int window, const Topology& t)
    : u_(ulysses), c_(context), w_(window), windows_(context / window), ranks_per_node_(t.ranks_per_node) {
  const int64_t u = ulysses, w = w_, W = windows_, rpn = t.ranks_per_node;
  const int64_t block = w * u;  // the world ranks of one window, all groups
  // Inner edges: index k < w − 1 to k + 1 (d = u), and the last index back to the first;
  // outer edges: window x < W − 1 to x + 1 (d = w·u), and the last window back to the first.
  // A backward edge a → a − D crosses as the forward edge a − D → a does.
  const int64_t inner =
      crossing_edges(0, (w - 1) * u, block, W, u, rpn) + crossing_edges(0, u, block, W, (w - 1) * u, rpn);
  const int64_t outer = crossing_edges(0, (W - 1) * block, block, 1, block, rpn) +
                        crossing_edges(0, block, block, 1, (W - 1) * block, rpn);
  const double edges = double(u) * double(c_);
  inner_inter_ = double(inner) / edges;
  outer_inter_ = double(outer) / edges;
}

Cost RingWalkModel::walk(double payload, double accumulator, const StepSeconds& step, const LinkRate& intra,
                         const LinkRate& inter, StepTimes* per_step) const {
  const LinkRate& in_link = inner_inter_ > 0 ? inter : intra;
  const LinkRate& out_link = outer_inter_ > 0 ? inter : intra;
  const Bound in_bound = inner_inter_ > 0 ? Bound::inter : Bound::intra;
  const Bound out_bound = outer_inter_ > 0 ? Bound::inter : Bound::intra;
  // Of n rounds (or steps), the first, those between and the last cost alike within each
  // kind: (index, how many).
  auto kinds = [](int n) {
    std::vector<std::pair<int, int>> k{{0, 1}};
    if (n > 2) k.emplace_back(1, n - 2);
    if (n > 1) k.emplace_back(n - 1, 1);
    return k;
  };
  Cost total;
  StepTimes sum;
  for (const auto& [o, rounds] : kinds(windows_)) {
    // The outer hop of the block this round began with (not in the last round) and of
    // the previous round's accumulators runs under the whole inner round.
    const double outer_bytes = (o < windows_ - 1 ? payload : 0) + (o > 0 ? accumulator : 0);
    const double t_outer = windows_ > 1 ? out_link.seconds(outer_bytes) : 0;
    Cost round;
    for (const auto& [i, steps] : kinds(w_)) {
      // The next block (not after the last step) and the accumulator trailing it.
      const double bytes = (i < w_ - 1 ? payload : 0) + (i > 0 ? accumulator : 0);
      const double kernel = o == 0 && i == 0 ? step.first : step.other;
      const double transfer = w_ > 1 ? in_link.seconds(bytes) : 0;
      const Cost one = overlapped(kernel, transfer, in_bound, in_link.overlap);
      round += one.times(steps);
      const double n = double(steps) * rounds;
      sum.compute += n * kernel;
      sum.transfer += n * transfer;
      sum.exposed += n * (one.seconds() - kernel);
    }
    if (w_ > 1 && accumulator > 0) round += cost_of(in_bound, in_link.seconds(accumulator));  // home hop
    // The outer transfer, posted at the round's start, under the round as far as it overlaps.
    const double under = out_link.overlap * t_outer;
    if (under > round.seconds()) round = cost_of(out_bound, under);
    round += cost_of(out_bound, t_outer - under);
    total += round.times(rounds);
  }
  if (windows_ > 1 && accumulator > 0) total += cost_of(out_bound, out_link.seconds(accumulator));
  if (per_step) {
    const double steps = double(c_);
    *per_step = {sum.compute / steps, sum.transfer / steps, sum.exposed / steps};
  }
  // Bytes as RingEngine sends them: a level of size 1 sends nothing.
  const double inner = w_ > 1 ? windows_ * ((w_ - 1) * payload + w_ * accumulator) : 0;
  const double outer = windows_ > 1 ? ((windows_ - 1) * payload + windows_ * accumulator) : 0;
  total.bytes_intra = inner * (1 - inner_inter_) + outer * (1 - outer_inter_);
  total.bytes_inter = inner * inner_inter_ + outer * outer_inter_;
  return total;
}

Cost RingWalkModel::windowed_walk(const std::vector<int>& hops, double payload, double accumulator,
                                  const StepSeconds& step, const LinkRate& intra, const LinkRate& inter,
                                  StepTimes* per_step) const {
  // Bytes, edge by edge: ring rank x of group g is world rank x·u + g.
  double sent_intra = 0, sent_inter = 0;
  auto send = [&](int64_t from, int64_t to, double bytes) {
    for (int64_t g = 0; g < u_; ++g) {
      const bool crosses = (from * u_ + g) / ranks_per_node_ != (to * u_ + g) / ranks_per_node_;
      (crosses ? sent_inter : sent_intra) += bytes;
    }
  };
  int farthest = 0;
  for (int j = 0; j < c_; ++j) {
    const int h = hops[size_t(j)];
    farthest = std::max(farthest, h);
    for (int s = 0; s < h; ++s) send((j + s) % c_, (j + s + 1) % c_, payload + accumulator);
    if (h > 0) send((j + h) % c_, j, accumulator);  // home
  }
  const bool any_inter = sent_inter > 0;
  const LinkRate& link = any_inter ? inter : intra;
  const Bound bound = any_inter ? Bound::inter : Bound::intra;
  Cost total;
  StepTimes sum;
  for (int i = 0; i <= farthest; ++i) {
    const double bytes = (i < farthest ? payload : 0) + (i > 0 ? accumulator : 0);
    const double kernel = i == 0 ? step.first : step.other, transfer = link.seconds(bytes);
    const Cost one = overlapped(kernel, transfer, bound, link.overlap);
    total += one;
    sum.compute += kernel;
    sum.transfer += transfer;
    sum.exposed += one.seconds() - kernel;
  }
  if (farthest > 0 && accumulator > 0) total += cost_of(bound, link.seconds(accumulator));  // home
  // The run's timeline records every inner step, the empty ones past the farthest too.
  if (per_step) *per_step = {sum.compute / c_, sum.transfer / c_, sum.exposed / c_};
  const double ranks = double(u_) * c_;
  total.bytes_intra = sent_intra / ranks;
  total.bytes_inter = sent_inter / ranks;
  return total;
}

}  // namespace minictx
