#pragma once

namespace minictx {

// A barrier over MPI_COMM_WORLD at which a waiting rank sleeps instead of spinning: the
// ranks that wait while rank 0 alone computes the reference would otherwise take the
// cores that rank 0 shares with them when ranks outnumber cores (a blocking MPI call
// busy-polls in MPICH and Open MPI alike).
void idle_barrier();

}  // namespace minictx
