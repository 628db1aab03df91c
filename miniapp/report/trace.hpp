#pragma once
// A point's timeline in the Chrome trace event format (the JSON that Perfetto UI and
// chrome://tracing open): one process per rank; on its first track the phases of every
// timed iteration, and within them the ring steps' computes and exposed waits of the
// recorded one; the ring's transfers on tracks of their own (the comm stream). Layout and
// rules: outputs/README.md, "Trace".
#include <string>

#include "io/results.hpp"

namespace minictx {

// The trace of `point` as JSON text. InputError when the point recorded no timeline.
std::string chrome_trace(const PointResult& point);

}  // namespace minictx
