#pragma once
// The projected time and bytes of one distributed attention call on the slowest rank:
// the ring walk's steps in the order RingWalk runs them (inner rounds, outer hops,
// trailing accumulators), each step the attention of its active blocks (active_rows,
// the run's own rule) overlapped with the transfer of the next block over its link
// class; the Ulysses head exchange around it; or the all-gather scheme.
#include "config/run_config.hpp"
#include "project/attention_plan.hpp"
#include "project/cost.hpp"
#include "project/kernel_rates.hpp"
#include "project/rank_geometry.hpp"

namespace minictx {

struct LinkRates {
  LinkRate intra, inter;
};

enum class AttentionPass {
  forward,
  backward,
  forward_query_prefix,  // selective_half's recompute: the first half of each rank's queries
};

// One call of layer `layer`'s attention (its sliding window; attention mode: layer 0).
// `ring_step` (if given) receives the mean ring step of the walk (none without a ring:
// left as it was).
Cost attention_cost(const RunConfig& cfg, const Topology& topology, const AttentionPlan& plan, int layer,
                    AttentionPass pass, const KernelRates& rates, const LinkRates& links,
                    RingWalkModel::StepTimes* ring_step = nullptr);

// An all-reduce of `floats` over every rank (the ring algorithm, as Comm counts it).
Cost all_reduce_cost(double floats, double bytes_per_float, int calls, const Topology& topology,
                     const LinkRates& links);

}  // namespace minictx
