#pragma once
// What the projection needs to know about the deck's attention backend: the one place
// that reads the backend's settings (names, ring_type, bwd_comm), so the model follows
// the run's own choices (parallel_degrees, SequenceLayout, BackwardTraffic).
#include "backends/engine/parallel_degrees.hpp"
#include "backends/engine/ring_engine.hpp"
#include "backends/engine/sequence_layout.hpp"
#include "comm/comm.hpp"
#include "config/run_config.hpp"

namespace minictx {

enum class AttentionScheme {
  ring,       // head exchange over `ulysses` ranks (when > 1) around the ring engine
  allgather,  // all-gather K, V; reduce-scatter dK, dV
};

struct AttentionPlan {
  AttentionScheme scheme = AttentionScheme::ring;
  ParallelDegrees degrees;  // local: 1×1; ulysses: P×1 (a ring of one)
  SequenceLayout layout;    // outer parts = the ring's ranks, inner = the Ulysses group
  BackwardTraffic traffic = BackwardTraffic::kv;
};

AttentionPlan attention_plan(const RunConfig& cfg, const Topology& topology);

}  // namespace minictx
