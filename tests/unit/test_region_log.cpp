// The recorder library's check (tests/kokkos_tools/region_log.hpp) on made-up sequences:
// it must pass a balanced run and name the fault of an unbalanced one, so that the
// kokkos_tools_regions test can fail.
#include <gtest/gtest.h>

#include "region_log.hpp"

using minictx_tools::RegionLog;

namespace {
std::string first_line(const RegionLog& log) {
  const std::string r = log.report();
  return r.substr(0, r.find('\n'));
}
}  // namespace

TEST(RegionLog, BalancedNestingPassesAndCountsParents) {
  RegionLog log;
  log.push("forward");
  log.push("attention_fwd");
  log.create_section("ring_transfer", 7);
  log.start_section(7);
  log.push("ring_step");
  log.pop();
  log.stop_section(7);
  log.pop();
  log.pop();
  EXPECT_EQ(first_line(log), "regions balanced");
  const std::string r = log.report();
  EXPECT_NE(r.find("region (top) > forward 1"), std::string::npos) << r;
  EXPECT_NE(r.find("region attention_fwd > ring_step 1"), std::string::npos) << r;
  EXPECT_NE(r.find("section ring_transfer 1"), std::string::npos) << r;
}

TEST(RegionLog, RegionLeftOpenFails) {
  RegionLog log;
  log.push("backward");
  log.push("grad_allreduce");
  log.pop();  // backward's pop is missing
  EXPECT_EQ(first_line(log), "error: region backward left open at the end");
}

TEST(RegionLog, PopWithoutRegionFails) {
  RegionLog log;
  log.push("forward");
  log.pop();
  log.pop();
  EXPECT_EQ(first_line(log), "error: a region closed while none was open");
}

TEST(RegionLog, SectionMisuseFails) {
  RegionLog twice;
  twice.create_section("ring_outer_block", 0);
  twice.start_section(0);
  twice.start_section(0);
  EXPECT_EQ(first_line(twice), "error: section ring_outer_block started while it ran");
  RegionLog running;
  running.create_section("ring_transfer", 1);
  running.start_section(1);
  EXPECT_EQ(first_line(running), "error: section ring_transfer left running");
  RegionLog unknown;
  unknown.stop_section(3);
  EXPECT_EQ(first_line(unknown), "error: section 3 stopped while it did not run");
}
