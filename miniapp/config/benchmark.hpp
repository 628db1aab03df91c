#pragma once
// The benchmark's run rules (docs/benchmark.md): which deck keys a submitter may change
// from a size class's deck, and what a verification run of a class is.
#include <string>

#include "config/run_config.hpp"

namespace minictx {

// The rule for one dotted deck key: whether a class run may set it to another value than
// the class deck, and why, in a few words for the submission report.
struct RunRule {
  bool allowed = false;
  std::string why;
};
RunRule run_rule(const std::string& key);

// Whether a verification run may differ from the measurement it verifies in this key
// (its scale, the reference check, the timing loop, the output): every other key, the
// world size and the ranks per node must be the measurement's.
bool verification_may_differ(const std::string& key);

// `benchmark.role: verification`: the class's verification scale (sequence.length =
// benchmark.verify_length, model.layers = benchmark.verify_layers when set) and
// run.verify on. `where` starts the error line of a deck that cannot be one.
void apply_benchmark_role(RunConfig& cfg, const std::string& where);

}  // namespace minictx
