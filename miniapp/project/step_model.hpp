#pragma once
// The projected step of one deck point on a machine profile: the layer stack's (or the
// attention step's) work in the order the run does it, each term from the kernel rates
// and the link rates, the bytes as Comm counts them and the memory from the run's own
// estimate (estimate_memory_bytes).
#include <map>
#include <string>

#include "comm/comm.hpp"
#include "config/machine_profile.hpp"
#include "config/run_config.hpp"
#include "project/attention_cost.hpp"
#include "project/cost.hpp"
#include "project/kernel_rates.hpp"

namespace minictx {

struct StepProjection {
  Cost total;                            // the whole step
  std::map<std::string, double> phases;  // the run's phase names (nested as the run's timers)
  std::map<std::string, double> terms;   // seconds per term: gemm, elementwise, attention_fwd, ...
  // The mean ring step of one layer's walk by pass (forward, backward), as the run's ring
  // timeline records steps; empty for a scheme without a ring walk.
  std::map<std::string, RingWalkModel::StepTimes> ring_steps;
  double memory_bytes = 0;           // per rank: the run's estimate
  double memory_capacity_bytes = 0;  // per device: the profile's
  std::string bound;  // what the step time is mostly bound by: compute | intra-node link | inter-node link |
                      // memory (device-memory bandwidth of the element-wise kernels)
  bool fits = true;   // the memory estimate fits the profile's device memory
};

StepProjection project_step(const RunConfig& cfg, const Topology& topology, const KernelRates& rates,
                            const LinkRates& links, double memory_capacity_bytes);

}  // namespace minictx
