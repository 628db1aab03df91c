#pragma once
// Where the projection's ranks sit relative to node boundaries, in closed form: how many
// of a group's peers share a rank's node, and which of the ring walk's edges cross a
// node. Node n holds world ranks [n·R, (n+1)·R) (Topology::node_of), so every count is one
// of ranks in a union of intervals, found with floor sums instead of a walk over ranks:
// a point at 10⁹ ranks costs what one at 10 does.
#include <cstdint>
#include <vector>

#include "comm/comm.hpp"
#include "config/machine_profile.hpp"
#include "project/cost.hpp"

namespace minictx {

// Of a group of ranks, the mean over its members of the other members on the same node
// (intra) and on other nodes (inter).
struct PeerSplit {
  double intra = 0, inter = 0;
  bool any_inter = false;
};

// The group of world ranks first, first + 1, ..., first + count − 1.
PeerSplit consecutive_peers(int64_t first, int64_t count, const Topology& t);

// The Ulysses groups of u consecutive ranks (all of the world's), averaged over the
// groups: they may straddle nodes unevenly. None when u < 2.
PeerSplit ulysses_peers(int u, const Topology& t);

// Ranks a in the union over i < n of [start + i·stride, start + i·stride + len) whose
// node differs from that of a + d (d ≥ 0).
int64_t crossing_edges(int64_t start, int64_t len, int64_t stride, int64_t n, int64_t d,
                       int64_t ranks_per_node);

// The ring engine's walk over C = W·w ranks of each of u groups (ring rank j of group g =
// world rank j·u + g): window x = j / w, index k = j % w; an inner step passes a block to
// the next index of the window, an outer hop to the same index of the next window.
class RingWalkModel {
 public:
  RingWalkModel(int ulysses, int context, int window, const Topology& t);

  // Source of ring rank j's block at round o, inner step i (RingWalk::source).
  int source(int j, int o, int i) const {
    const int x = j / w_, k = j % w_;
    return ((x - o + windows_) % windows_) * w_ + (k - i + w_) % w_;
  }
  int ranks() const { return c_; }
  int window() const { return w_; }
  int windows() const { return windows_; }
  // Fractions of the inner and outer edges that cross a node boundary.
  double inner_inter() const { return inner_inter_; }
  double outer_inter() const { return outer_inter_; }

  // The slowest ring rank's kernel seconds at a step: at the first step (round 0, step 0)
  // every rank computes its own block; at every other step some ranks compute an earlier
  // rank's block and some a later one's (the source is a shift without fixed points), so
  // the slowest is the slower of those two kinds.
  struct StepSeconds {
    double first = 0, other = 0;
  };

  // A ring step of the walk as the run's timeline records one, the mean over the walk's
  // steps: the kernel, the inner-ring transfer posted before it (its time on the link), and
  // the wait for that transfer after the kernel (the part the kernel did not hide).
  struct StepTimes {
    double compute = 0, transfer = 0, exposed = 0;
  };

  // The walk's cost: payload P and accumulator A bytes per block as in ring_engine.cpp,
  // rounds and steps of equal cost counted once and multiplied; `per_step` (if given)
  // receives its mean ring step.
  Cost walk(double payload, double accumulator, const StepSeconds& step, const LinkRate& intra,
            const LinkRate& inter, StepTimes* per_step = nullptr) const;

  // A plain ring's walk under a sliding window (window_hops: hops[j], the steps ring rank
  // j's block travels): as RingEngine sends it, block and accumulator over hops[j] edges
  // and the accumulator straight home, for each of the u groups, whose edges cross nodes
  // or not rank by rank. Steps past the farthest travel are empty. Walks the ranks: a
  // windowed point costs the projection O(ranks²) at most. `per_step` as for walk.
  Cost windowed_walk(const std::vector<int>& hops, double payload, double accumulator,
                     const StepSeconds& step, const LinkRate& intra, const LinkRate& inter,
                     StepTimes* per_step = nullptr) const;

 private:
  int u_, c_, w_, windows_;
  int64_t ranks_per_node_;
  double inner_inter_ = 0, outer_inter_ = 0;
};

}  // namespace minictx
