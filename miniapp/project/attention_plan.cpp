#include "project/attention_plan.hpp"

namespace minictx {

AttentionPlan attention_plan(const RunConfig& cfg, const Topology& topology) {
  const AttentionConfig& a = cfg.attention;
  AttentionPlan p;
  p.degrees = parallel_degrees(cfg, topology);
  const bool ring_family = a.backend == "ring" || a.backend == "usp" || a.backend == "double_ring" || a.backend == "burst";
  const LayoutKind kind = ring_family ? layout_kind(a.ring_type) : LayoutKind::contiguous;
  if (a.backend == "allgather") {
    p.scheme = AttentionScheme::allgather;
    p.degrees = {1, topology.world_size, topology.world_size};
  }
  p.layout = SequenceLayout(kind, cfg.sequence.length, p.degrees.context, p.degrees.ulysses);
  p.traffic = a.backend == "burst" && a.bwd_comm == "q" ? BackwardTraffic::q : BackwardTraffic::kv;
  return p;
}

}  // namespace minictx
