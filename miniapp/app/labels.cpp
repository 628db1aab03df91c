#include "app/labels.hpp"

#include <cstdio>

#include "backends/parallel_degrees.hpp"

namespace minictx {

std::string point_name(std::size_t i) {
  char name[32];
  std::snprintf(name, sizeof name, "point_%04zu", i);
  return name;
}

std::map<std::string, std::string> point_labels(const RunConfig& c, const Topology& topology) {
  const auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  const ParallelDegrees d = parallel_degrees(c, topology);
  return {
      {"backend", c.attention.backend},
      {"ring_type", c.attention.ring_type},
      {"mode", to_string(c.run.mode)},
      {"world_size", std::to_string(topology.world_size)},
      {"seq_len", std::to_string(c.sequence.length)},
      {"batch", std::to_string(c.sequence.batch)},
      {"fwd_only", flag(c.run.fwd_only)},
      {"causal", flag(c.attention.causal)},
      {"ulysses_degree", std::to_string(d.ulysses)},
      {"ring_degree", std::to_string(d.context)},
      {"context_size", std::to_string(d.context)},
      {"window_size", std::to_string(d.window)},
      {"intra", c.attention.intra},
      {"bwd_comm", c.attention.bwd_comm},
      {"dtype", to_string(c.run.dtype)},
      {"device", c.run.device},
      {"comm", c.run.comm},
      {"checkpointing", to_string(c.run.checkpointing)},
      {"model", c.model.preset},
      {"layers", std::to_string(c.model.layers)},
      {"d_model", std::to_string(c.model.d_model)},
      {"heads", std::to_string(c.model.heads)},
      {"kv_heads", std::to_string(c.model.kv_heads)},
      {"head_dim", std::to_string(c.model.head_dim)},
      {"gpu", c.machine.name},
  };
}

}  // namespace minictx
