#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace minictx {

// `minictx project DECK --machine PROFILE`: the time model of miniapp/project/ for every
// point of a deck, printed as the deck's seed table and written with the run's schema,
// marked projected. Needs no GPU and no MPI ranks beyond one.
class ProjectCommand {
 public:
  explicit ProjectCommand(CLI::App& app);
  bool selected() const { return static_cast<bool>(*cmd_); }
  int run(const std::string& command_line);

 private:
  CLI::App* cmd_;
  std::string deck_;
  std::vector<std::string> sets_;
  std::string machine_;
  int ranks_ = 0;
  int ranks_per_node_ = 0;
  std::vector<std::string> calibration_;
  std::string output_;
  std::string columns_;
  bool force_ = false;
};

}  // namespace minictx
