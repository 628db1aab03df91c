#pragma once
// `minictx run`: every point of a deck (a sweep), its FOM line and its results group, then
// the summary table; `run --dry-run` lists the points without running them.
#include <CLI/CLI.hpp>
#include <string>

#include "app/deck_options.hpp"

namespace minictx {

class RunCommand {
 public:
  explicit RunCommand(CLI::App& app);
  bool selected() const { return static_cast<bool>(*cmd_); }
  int run(const std::string& command_line);

  struct Options {
    DeckOptions deck;
    std::string output;
    bool force = false;
    bool resume = false;
    bool dry_run = false;
    int ranks = 0;           // --dry-run: the world size to check the points against; 0 = this one
    int ranks_per_node = 0;  // --dry-run: 0 = the deck's topology.ranks_per_node, else one node
  };

 private:
  CLI::App* cmd_;
  CLI::Option* ranks_option_ = nullptr;
  CLI::Option* ranks_per_node_option_ = nullptr;
  Options o_;
};

}  // namespace minictx
