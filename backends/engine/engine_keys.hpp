#pragma once
// The deck keys the engine's shapes read. The backends built on those shapes declare them
// in their BackendInfo::keys (config/backend_catalog.hpp) through these functions, so a
// key several backends take has one declaration.
#include "backends/engine/sequence_layout.hpp"
#include "config/backend_catalog.hpp"

namespace minictx {

BackendKey ring_type_key();       // attention.ring_type: the ring's layout
BackendKey ulysses_degree_key();  // attention.ulysses_degree: ranks exchanging heads
BackendKey ring_degree_key();     // attention.ring_degree: ranks of a ring (0 = the rest of the world)

LayoutKind ring_layout(const AttentionConfig& a);  // ring_type basic -> contiguous, zigzag, stripe, balanced
// The ring_type layout of the deck's sequence over `outer` ring ranks, each share split
// over `inner` ranks (balanced: from the deck's mask and documents).
SequenceLayout ring_sequence_layout(const RunConfig& cfg, int outer, int inner = 1);
std::string ring_type_name(const AttentionConfig& a);
int ulysses_degree(const AttentionConfig& a);
int ring_degree(const AttentionConfig& a);

}  // namespace minictx
