// gtest main for unit tests that need MPI initialised (run as a single-rank singleton).
#include <gtest/gtest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int code = RUN_ALL_TESTS();
  MPI_Finalize();
  return code;
}
