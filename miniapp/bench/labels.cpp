#include "bench/labels.hpp"

#include <cstdio>

#include "backends/engine/engine_keys.hpp"
#include "backends/engine/parallel_degrees.hpp"
#include "backends/registry.hpp"
#include "io/results_schema.hpp"

namespace minictx {

namespace lk = schema::label_key;

std::string point_name(std::size_t i) {
  char name[32];
  std::snprintf(name, sizeof name, "point_%04zu", i);
  return name;
}

std::map<std::string, std::string> point_labels(const RunConfig& c, const Topology& topology) {
  const auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  const ParallelDegrees d = parallel_degrees(c, topology);
  std::map<std::string, std::string> labels = {
      {lk::backend, c.attention.backend},
      {lk::ring_type, ring_type_name(c.attention)},
      {lk::mode, to_string(c.run.mode)},
      {lk::world_size, std::to_string(topology.world_size)},
      {lk::seq_len, std::to_string(c.sequence.length)},
      {lk::batch, std::to_string(c.sequence.batch)},
      {lk::documents, to_text(c.sequence.documents)},
      {lk::fwd_only, flag(c.run.fwd_only)},
      {lk::causal, flag(c.attention.causal)},
      {lk::ulysses_degree, std::to_string(d.ulysses)},
      {lk::ring_degree, std::to_string(d.context)},
      {lk::context_size, std::to_string(d.context)},
      {lk::window_size, std::to_string(d.window)},
      {lk::intra, c.attention.options.choice("attention.intra")},
      {lk::bwd_comm, c.attention.options.choice("attention.bwd_comm")},
      {lk::dtype, to_string(c.run.dtype)},
      {lk::device, to_string(c.run.device)},
      {lk::comm, to_string(c.run.comm)},
      {lk::heads, std::to_string(c.model.heads)},
      {lk::kv_heads, std::to_string(c.model.kv_heads)},
      {lk::head_dim, std::to_string(c.model.head_dim)},
      {lk::head_dim_v, std::to_string(c.model.value_dim())},
      {lk::sliding_window, to_text(c.attention.window)},
      {lk::sinks, flag(c.attention.sinks)},
      {lk::partials, to_string(c.attention.partials)},
      {lk::gpu, c.machine.name},
  };
  if (auto* const named = find_backend(c.attention.backend).variant) labels[lk::variant] = named(c);
  // The layer stack's shape and its training settings: attention mode runs the attention
  // alone on generated q, k, v (its shape is heads, kv_heads, head_dim), so they would
  // describe nothing that ran.
  if (c.run.mode == Mode::model) {
    labels[lk::model] = c.model.preset;
    labels[lk::layers] = std::to_string(c.model.layers);
    labels[lk::d_model] = std::to_string(c.model.d_model);
    labels[lk::vocab] = std::to_string(c.model.vocab);
    labels[lk::checkpointing] = to_string(c.run.checkpointing);
    labels[lk::grad_reduce] = to_string(c.run.grad_reduce);
    labels[lk::grad_reduce_dtype] = to_string(c.run.grad_reduce_dtype);
  }
  return labels;
}

}  // namespace minictx
