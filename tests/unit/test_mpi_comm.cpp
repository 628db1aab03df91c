// MpiComm's error path: a failed MPI call is an Error naming the rank and the call, not an
// abort inside MPI (so check_mpi is not dead code). One rank, MPI initialised.
#include <gtest/gtest.h>

#include <string>

#include "comm/mpi_comm.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

TEST(MpiComm, AFailedCallIsAnErrorNamingTheRankAndTheCall) {
  auto world = MpiComm::world(1);
  float send = 1, recv = 0;
  // A source rank outside the communicator: MPI_Irecv fails before anything is posted.
  try {
    world->shift_start(&send, &recv, sizeof send, 0, world->size() + 3);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("rank 0: MPI_Irecv failed: ", 0), 0u) << msg;
  }
  // The communicator still works afterwards (a gather: an all-reduce over one rank
  // returns before reaching MPI).
  const double x = 2;
  double gathered = 0;
  world->gather_doubles(&x, &gathered, 1);
  EXPECT_EQ(gathered, 2.0);
}

TEST(MpiComm, SplitsInheritTheErrorHandler) {
  auto world = MpiComm::world(1);
  auto sub = world->split(0, 0);
  float send = 1, recv = 0;
  EXPECT_THROW(sub->shift_start(&send, &recv, sizeof send, 0, sub->size() + 3), Error);
}

}  // namespace
}  // namespace minictx
