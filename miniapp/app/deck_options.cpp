#include "app/deck_options.hpp"

namespace minictx {

void add_deck_options(CLI::App* cmd, DeckOptions& o) {
  cmd->add_option("deck", o.deck, "input deck (YAML); none = the built-in quickstart deck");
  cmd->add_option("--set", o.sets,
                  "override a deck key: --set sequence.length=4096 (repeatable; keys: inputs/README.md, a "
                  "backend's own: minictx list)");
}

Deck load_deck(const DeckOptions& o) {
  Deck deck = o.deck.empty() ? Deck::builtin_quickstart() : Deck::from_file(o.deck);
  for (const auto& s : o.sets) deck.set(s);
  return deck;
}

}  // namespace minictx
