#pragma once
// `minictx bench --comm`: point-to-point bandwidth and latency per link class, and the
// all-to-all and all-reduce, over the run's Comm; the rates `minictx project
// --calibration` reads in place of a profile's link figures.
#include <string>
#include <vector>

#include "comm/comm.hpp"
#include "io/results.hpp"

namespace minictx {

struct CommBenchRow {
  std::string kind;  // exchange | exchange_after_kernel | all_to_all | all_reduce
  std::string link;  // intra | inter (exchange); world (collectives)
  double bytes = 0;  // per rank: sent to the peer (exchange), to each peer (all_to_all), buffer (all_reduce)
  double seconds = 0;  // best of the repetitions
  double gb_s = 0;     // bytes / seconds, 1 GB = 1e9 bytes
};

struct CommBenchResult {
  std::vector<CommBenchRow> rows;
  // Per link class measured (both directions at once, as a ring step): latency from the
  // smallest exchange, bandwidth the best rate of the larger ones, overlap the fraction of
  // the largest exchange that ran under a kernel started after posting it (1 − what was
  // left to wait / the exchange alone).
  struct Link {
    bool measured = false;
    double latency_us = 0, bandwidth_gb_s = 0, overlap = 0;
  } intra, inter;
};

// Collective: every rank of `world` calls it. Exchanges run between world ranks 0 and 1
// (intra when they share a node) and 0 and ranks_per_node (inter, when there is a second
// node, emulated or not).
CommBenchResult run_comm_bench(Comm& world, const std::vector<double>& sizes, double min_seconds);

void write_comm_bench(const std::string& path, const Provenance& prov, const CommBenchResult& result,
                      bool overwrite);

}  // namespace minictx
