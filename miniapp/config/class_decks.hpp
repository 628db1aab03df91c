#pragma once
// The benchmark size classes' decks as shipped (inputs/benchmark/*.yaml), compiled in.
#include <string>
#include <vector>

namespace minictx {

struct ClassDeck {
  const char* name;  // the file's stem: the deck's benchmark.class
  const char* text;  // the YAML as shipped
};
const std::vector<ClassDeck>& class_decks();  // generated from inputs/benchmark/ by CMake

}  // namespace minictx
