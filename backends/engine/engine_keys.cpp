#include "backends/engine/engine_keys.hpp"

#include "backends/engine/balanced_layout.hpp"
#include "backends/engine/layout_work.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

constexpr const char* kRingType = "attention.ring_type";
constexpr const char* kUlyssesDegree = "attention.ulysses_degree";
constexpr const char* kRingDegree = "attention.ring_degree";

}  // namespace

BackendKey ring_type_key() {
  return choice_key(
      kRingType, {"basic", "zigzag", "stripe", "balanced"},
      "sequence layout of the ring: contiguous blocks, zigzag, stripe, or chunks dealt to balance "
      "the attention work of packed documents");
}

BackendKey ulysses_degree_key() {
  return integer_key(kUlyssesDegree, 1, 1, "ranks in each Ulysses (head-parallel) group");
}

BackendKey ring_degree_key() {
  return integer_key(kRingDegree, 0, 0, "ranks in each ring; 0 = world size / ulysses_degree");
}

// The choices are ring_type_key()'s, in its order.
LayoutKind ring_layout(const AttentionConfig& a) {
  const std::string name = ring_type_name(a);
  if (name == "basic") return LayoutKind::contiguous;
  if (name == "zigzag") return LayoutKind::zigzag;
  if (name == "stripe") return LayoutKind::stripe;
  require(name == "balanced", "ring_layout: not a ring type: " + name);
  return LayoutKind::balanced;
}

SequenceLayout ring_sequence_layout(const RunConfig& cfg, int outer, int inner) {
  const LayoutKind kind = ring_layout(cfg.attention);
  if (kind != LayoutKind::balanced) return SequenceLayout(kind, cfg.sequence.length, outer, inner);
  return balanced_layout(cfg.sequence.length, outer, inner, visible_keys(cfg));
}

std::string ring_type_name(const AttentionConfig& a) { return a.options.choice(kRingType); }
int ulysses_degree(const AttentionConfig& a) { return int(a.options.integer(kUlyssesDegree)); }
int ring_degree(const AttentionConfig& a) { return int(a.options.integer(kRingDegree)); }

}  // namespace minictx
