#pragma once
// The submission report's audit of one results point. It believes nothing the file says
// about itself: every figure is recomputed from the raw per-iteration, per-rank times and
// the recorded shape, the verdict is re-derived from the per-tensor errors against the
// tolerance the configuration's dtype fixes, the resolved deck is resolved again (and
// against the deck as given), the labels are derived again from it, and the digests are
// verified. Every recorded value that disagrees is a Finding naming its field.
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "io/results.hpp"

namespace minictx {

struct Finding {
  std::string field;   // where in the point: "metrics/tokens_per_s_per_device", "deck", "digest"
  std::string detail;  // "recorded 9999, recomputed 438.4"
};

struct PointAudit {
  std::vector<Finding> findings;    // none: the point is consistent
  std::optional<RunConfig> config;  // the recorded deck, resolved; none when it does not resolve
  double fom = 0;                   // tokens/s per device from iter_seconds and the shape; 0: none
  std::string verdict;              // re-derived: VALID | INVALID | UNVERIFIED
};

// Relative agreement a recorded figure needs with its recomputation (both are doubles
// from the same times; only the order of operations may differ).
inline constexpr double kRecomputeTolerance = 1e-9;

PointAudit audit_point(const PointResult& p, const Provenance& prov);

}  // namespace minictx
