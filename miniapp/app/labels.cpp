#include "app/labels.hpp"

namespace minictx {

std::map<std::string, std::string> point_labels(const RunConfig& c, int world) {
  const auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  const int ulysses = c.attention.ulysses_degree;
  const int ring = c.attention.ring_degree > 0 ? c.attention.ring_degree : world / std::max(ulysses, 1);
  return {
      {"backend", c.attention.backend},
      {"ring_type", c.attention.ring_type},
      {"mode", to_string(c.run.mode)},
      {"world_size", std::to_string(world)},
      {"seq_len", std::to_string(c.sequence.length)},
      {"batch", std::to_string(c.sequence.batch)},
      {"fwd_only", flag(c.run.fwd_only)},
      {"causal", flag(c.attention.causal)},
      {"ulysses_degree", std::to_string(ulysses)},
      {"ring_degree", std::to_string(ring)},
      {"context_size", std::to_string(world / std::max(ulysses, 1))},
      {"window_size", std::to_string(c.attention.window_size)},
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
