#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "bench/device_bench.hpp"
#include "bench/kernel_bench.hpp"

namespace minictx {

// `minictx bench`: the kernel benchmark of bench/kernel_bench.hpp (host) or, with
// `--device cuda`, of bench/device_bench.hpp, printed as a table and optionally written
// to HDF5.
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
  std::string device_ = "kokkos";
  std::string dtype_ = "bf16";
  std::string kernels_ = "auto";
  int64_t calibration_side_ = DeviceBenchOptions{}.calibration_side;
  // The options both benches take, whose defaults differ: the device bench keeps its own
  // unless one is given.
  CLI::Option *seq_opt_ = nullptr, *head_dim_opt_ = nullptr, *heads_opt_ = nullptr,
              *min_seconds_opt_ = nullptr;

  int run_comm(const std::string& command_line);
  int run_device(const std::string& command_line);
  DeviceBenchOptions device_options() const;
};

}  // namespace minictx
