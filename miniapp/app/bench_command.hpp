#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "bench/kernel_bench.hpp"

namespace minictx {

// `minictx bench`: the kernel benchmark of bench/kernel_bench.hpp on one rank, printed as
// a table and optionally written to HDF5.
class BenchCommand {
 public:
  explicit BenchCommand(CLI::App& app);
  bool selected() const { return static_cast<bool>(*cmd_); }
  int run(const std::string& command_line);

 private:
  CLI::App* cmd_;
  KernelBenchOptions opt_;
  std::string mask_ = "both";
  std::string clock_ = "wall";
  std::string output_;
  bool force_ = false;
  bool comm_ = false;
  int ranks_per_node_ = 0;
  std::vector<double> comm_sizes_{8, 4096, 262144, 4194304, 33554432};

  int run_comm(const std::string& command_line);
};

}  // namespace minictx
