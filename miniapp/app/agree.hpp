#pragma once
// The start-up error contract: a failure on any rank becomes one line
// `minictx: error: ...` (printed by rank 0) and the same outcome on every rank, never a
// hang of the ranks that did not fail.
#include <functional>
#include <string>

namespace minictx {

int world_rank();

// Runs `f` on every rank. If it throws anywhere, every rank learns the first failing
// rank's message, rank 0 prints it as one line, and all return false together; a rank
// that only waited for the others (watchdog::WaitedForOthers) is named only when no rank
// failed otherwise. `f` must not call a collective after something that may throw on one
// rank only, save through watchdog::wait_to_start: the other ranks would wait in it for
// ever. Split such work into several agree() steps.
bool agree(const std::function<void()>& f);

// Rank 0 prints `minictx: error: <what>` (newlines folded into "; "); every rank gets 2.
int input_error_exit(const std::string& what);

}  // namespace minictx
