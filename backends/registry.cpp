// The one list of backends, and what is asked of the deck's backend through it: a new
// backend adds its *_backend_info() here, and nothing else outside its folder names it
// (docs/architecture.md, "Adding a backend").
#include "backends/registry.hpp"

#include "backends/allgather/allgather_backend.hpp"
#include "backends/burst/burst_backend.hpp"
#include "backends/double_ring/double_ring_backend.hpp"
#include "backends/engine/engine_keys.hpp"
#include "backends/local/local_backend.hpp"
#include "backends/ring/ring_backend.hpp"
#include "backends/ulysses/ulysses_backend.hpp"
#include "backends/usp/usp_backend.hpp"
#include "config/backend_catalog.hpp"
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

const std::vector<BackendInfo>& backend_registry() {
  static const std::vector<BackendInfo> registry = {
      local_backend_info(),     ring_backend_info(),        ulysses_backend_info(), usp_backend_info(),
      allgather_backend_info(), double_ring_backend_info(), burst_backend_info()};
  return registry;
}

const BackendInfo& find_backend(const std::string& name) {
  std::string known;
  for (const auto& b : backend_registry()) {
    if (b.name == name) return b;
    known += (known.empty() ? "" : ", ") + b.name;
  }
  input_error("attention.backend '" + name + "' is not available in this build (available: " + known + ")");
}

void install_deck_backends() {
  std::vector<BackendDeckFacts> facts;
  for (const auto& b : backend_registry()) facts.push_back({b.name, b.keys, b.splits_heads});
  install_backend_catalog(std::move(facts));
}

ParallelDegrees parallel_degrees(const RunConfig& cfg, const Topology& topology) {
  return find_backend(cfg.attention.backend).degrees(cfg, topology);
}

int64_t backend_buffer_bytes(const RunConfig& cfg, const Topology& topology) {
  return find_backend(cfg.attention.backend).buffer_bytes(cfg, topology);
}

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

}  // namespace minictx
