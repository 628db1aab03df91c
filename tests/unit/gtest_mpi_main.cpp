// gtest main for unit tests that need MPI initialised (run as a single-rank singleton).
#include <gtest/gtest.h>
#include <mpi.h>

#include "backends/backend.hpp"
#include "backends/registry.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  // The backends' own deck keys (and so their defaults) come from the registry, as in the program.
  minictx::install_deck_backends();
  ::testing::InitGoogleTest(&argc, argv);
  const int code = RUN_ALL_TESTS();
  MPI_Finalize();
  return code;
}
