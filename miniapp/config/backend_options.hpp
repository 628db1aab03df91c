#pragma once
#include <map>
#include <string>
#include <variant>

namespace minictx {

// One deck value as typed by the schema (integers, floats, bools, strings and enum names).
using DeckScalar = std::variant<bool, long long, double, std::string>;

// The values of the backends' own deck keys ("attention.window_size"), which each backend
// declares in its BackendInfo (config/backend_catalog.hpp, BackendKey). A key the deck
// leaves out reads as its declared default; a key no backend declares is a program error.
class BackendOptions {
 public:
  void set(const std::string& key, DeckScalar value);
  DeckScalar value(const std::string& key) const;
  long long integer(const std::string& key) const;   // a key without choices
  std::string choice(const std::string& key) const;  // a key with choices

 private:
  std::map<std::string, DeckScalar> values_;  // the keys the deck sets
};

}  // namespace minictx
