#include "driver/idle_barrier.hpp"

#include <mpi.h>

#include <chrono>
#include <thread>

namespace minictx {

void idle_barrier() {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  int done = 0;
  for (MPI_Test(&request, &done, MPI_STATUS_IGNORE); !done; MPI_Test(&request, &done, MPI_STATUS_IGNORE))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace minictx
