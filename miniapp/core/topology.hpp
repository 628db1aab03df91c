#pragma once

namespace minictx {

// Which node each world rank is on: world_rank / ranks_per_node (which a deck may set
// to emulate nodes). ranks_here is the real count: this job's ranks on this rank's
// physical node (MPI_COMM_TYPE_SHARED), by which the memory guard divides the node;
// rank_here is this rank's index among them, by which a device picks its GPU.
struct Topology {
  int world_size = 1;
  int ranks_per_node = 1;
  int ranks_here = 1;
  int rank_here = 0;
  int node_of(int world_rank) const { return world_rank / ranks_per_node; }
  int nodes() const { return (world_size + ranks_per_node - 1) / ranks_per_node; }
};

}  // namespace minictx
