#pragma once
// `minictx verify`: each point of a deck (or of --point groups) run once and compared with
// a reference, its table and VALID or INVALID on rank 0; the exit code says whether every
// point was valid.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "app/deck_options.hpp"

namespace minictx {

class VerifyCommand {
 public:
  explicit VerifyCommand(CLI::App& app);
  bool selected() const { return static_cast<bool>(*cmd_); }
  int run();

  struct Options {
    DeckOptions deck;
    std::string reference;
    std::string dump;
    std::vector<std::string> points;  // --point: each one more list of overrides
  };

 private:
  CLI::App* cmd_;
  Options o_;
};

}  // namespace minictx
