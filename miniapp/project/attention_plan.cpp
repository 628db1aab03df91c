#include "project/attention_plan.hpp"

#include "backends/backend.hpp"
#include "backends/engine/engine_keys.hpp"
#include "backends/registry.hpp"

namespace minictx {

AttentionPlan attention_plan(const RunConfig& cfg, const Topology& topology) {
  const TrafficShape shape = traffic_shape(cfg.attention);
  AttentionPlan p;
  p.degrees = parallel_degrees(cfg, topology);
  if (shape.all_gathers_kv) p.scheme = AttentionScheme::allgather;
  p.layout = shape.layout == LayoutKind::balanced
                 ? ring_sequence_layout(cfg, p.degrees.context, p.degrees.ulysses)
                 : SequenceLayout(shape.layout, cfg.sequence.length, p.degrees.context, p.degrees.ulysses);
  p.traffic = shape.query_side_backward ? BackwardTraffic::q : BackwardTraffic::kv;
  return p;
}

}  // namespace minictx
