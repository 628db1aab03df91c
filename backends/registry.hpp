#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backends/backend.hpp"

// The registry: the one list of backends (registry.cpp) and what is asked of the deck's
// backend through it. A floor above the backends' folders, which never include it: a
// backend knows itself, not the list it is in.
namespace minictx {

const std::vector<BackendInfo>& backend_registry();
const BackendInfo& find_backend(const std::string& name);
// The deck's backend's degrees (its BackendInfo::degrees).
ParallelDegrees parallel_degrees(const RunConfig& cfg, const Topology& topology);
TrafficShape traffic_shape(const AttentionConfig&);
// Bytes the deck's attention backend allocates per rank beyond q, k, v, o and their
// gradients (its BackendInfo::buffer_bytes), for the memory estimate that refuses a run
// before it allocates.
int64_t backend_buffer_bytes(const RunConfig& cfg, const Topology& topology);
// Gives the deck (config/backend_catalog.hpp) the registry's names, keys and head
// exchanges; called once at start-up, before any deck is read.
void install_deck_backends();
// The deck's backend's own checks, and those every backend shares (checkpointing:
// selective_half needs forward_query_prefix): one-line InputErrors.
void validate_backend(const RunConfig&, const Topology&);

}  // namespace minictx
