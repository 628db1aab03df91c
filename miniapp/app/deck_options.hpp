#pragma once
// The deck arguments that `run` and `verify` share: a deck file (or the built-in
// quickstart deck) and --set overrides.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "config/deck.hpp"

namespace minictx {

struct DeckOptions {
  std::string deck;
  std::vector<std::string> sets;
};

void add_deck_options(CLI::App* cmd, DeckOptions& o);

// The deck with its overrides applied; InputError on bad input.
Deck load_deck(const DeckOptions& o);

}  // namespace minictx
