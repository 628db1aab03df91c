// The start-up's agreement (app/agree.hpp) on 2 ranks (run under mpiexec): a failure on
// one rank reaches both, and the line names the failure, not another rank's wait for it.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

#include "app/agree.hpp"
#include "comm/watchdog.hpp"
#include "core/error.hpp"

using namespace minictx;

namespace {

// What rank 0 printed while `f` ran under agree, and agree's answer.
std::pair<std::string, bool> agreed(const std::function<void()>& f) {
  testing::internal::CaptureStderr();
  const bool ok = agree(f);
  return {testing::internal::GetCapturedStderr(), ok};
}

}  // namespace

TEST(Agree, EveryRankLearnsOneRanksFailure) {
  const auto [line, ok] = agreed([] {
    if (world_rank() == 1) fail("rank 1: the GPU is gone");
  });
  EXPECT_FALSE(ok);
  EXPECT_EQ(line, world_rank() == 0 ? "minictx: error: rank 1: the GPU is gone\n" : "");
}

// Rank 0 gave up waiting at the start (watchdog::wait_to_start) because rank 1 failed:
// the line is rank 1's, though rank 0 is the lower rank.
TEST(Agree, TheFailureIsNamedBeforeTheWaitForIt) {
  const auto [line, ok] = agreed([] {
    if (world_rank() == 0) throw watchdog::WaitedForOthers("rank 0 waited 5 s in ncclCommInitRank");
    fail("rank 1: ncclCommInitRank failed: out of memory");
  });
  EXPECT_FALSE(ok);
  EXPECT_EQ(line,
            world_rank() == 0 ? "minictx: error: rank 1: ncclCommInitRank failed: out of memory\n" : "");
}

// Only waits: the lowest rank's wait is the line.
TEST(Agree, OnlyWaitsNameTheLowestRank) {
  const auto [line, ok] =
      agreed([] { throw watchdog::WaitedForOthers("rank " + std::to_string(world_rank()) + " waited"); });
  EXPECT_FALSE(ok);
  EXPECT_EQ(line, world_rank() == 0 ? "minictx: error: rank 0 waited\n" : "");
}

TEST(Agree, NoFailureIsAgreement) {
  EXPECT_TRUE(agree([] {}));
}
