#include "backends/backend.hpp"

#include "backends/engine/engine_keys.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

// The half recompute runs the ring engine (or the local kernel) over the first half of
// every rank's query rows. Those rows must be the sequence's first half, so their queries
// see only keys among them: true of stripe shares and of a single rank, not of a head
// exchange (each rank's rows are then pieces of a longer share) nor of contiguous and
// zigzag shares.
void validate_query_prefix(const BackendInfo& info, const RunConfig& cfg, const Topology& topology) {
  const ParallelDegrees d = parallel_degrees(cfg, topology);
  if (!info.query_prefix || d.ulysses > 1) {
    std::string able;
    for (const auto& b : backend_registry())
      if (b.query_prefix) able += (able.empty() ? "" : ", ") + b.name;
    input_error(
        "run.checkpointing selective_half recomputes half the query rows through a ring without a head "
        "exchange; attention.backend " +
        info.name +
        (info.query_prefix ? " with Ulysses degree " + std::to_string(d.ulysses) : std::string()) +
        " cannot (backends that can, at Ulysses degree 1: " + able + ")");
  }
  if (d.context > 1 && ring_layout(cfg.attention) != LayoutKind::stripe)
    input_error(
        "run.checkpointing selective_half needs attention.ring_type stripe, where the first half of every "
        "rank's rows is the sequence's first half (got " +
        ring_type_name(cfg.attention) + ")");
}

}  // namespace

ParallelDegrees parallel_degrees(const RunConfig& cfg, const Topology& topology) {
  return find_backend(cfg.attention.backend).degrees(cfg, topology);
}

TrafficShape ring_engine_traffic(const AttentionConfig& a) { return {false, ring_layout(a), false}; }

TrafficShape traffic_shape(const AttentionConfig& a) {
  const BackendInfo& info = find_backend(a.backend);
  return info.traffic ? info.traffic(a) : TrafficShape{};
}

void validate_backend(const RunConfig& cfg, const Topology& topology) {
  const BackendInfo& info = find_backend(cfg.attention.backend);
  info.validate(cfg, topology);
  // Checkpointing exists only in model mode; attention mode ignores the key.
  if (cfg.run.mode == Mode::model && cfg.run.checkpointing == Checkpointing::selective_half)
    validate_query_prefix(info, cfg, topology);
}

void AttentionBackend::forward_query_prefix(const AttnShape&, const Tensor&, const Tensor&, const Tensor&,
                                            Tensor&, Tensor&) {
  require(false,
          "this attention backend cannot run the forward of a query prefix (validate_backend refuses it)");
}

}  // namespace minictx
