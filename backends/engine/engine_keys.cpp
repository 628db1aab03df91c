#include "backends/engine/engine_keys.hpp"

#include "core/error.hpp"

namespace minictx {
namespace {

constexpr const char* kRingType = "attention.ring_type";
constexpr const char* kUlyssesDegree = "attention.ulysses_degree";
constexpr const char* kRingDegree = "attention.ring_degree";

}  // namespace

BackendKey ring_type_key() {
  return choice_key(kRingType, {"basic", "zigzag", "stripe"},
                    "sequence layout of the ring: contiguous blocks, zigzag or stripe");
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
  require(name == "stripe", "ring_layout: not a ring type: " + name);
  return LayoutKind::stripe;
}

std::string ring_type_name(const AttentionConfig& a) { return a.options.choice(kRingType); }
int ulysses_degree(const AttentionConfig& a) { return int(a.options.integer(kUlyssesDegree)); }
int ring_degree(const AttentionConfig& a) { return int(a.options.integer(kRingDegree)); }

}  // namespace minictx
