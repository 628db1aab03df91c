#include "config/backend_options.hpp"

#include "config/backend_catalog.hpp"
#include "core/error.hpp"

namespace minictx {

void BackendOptions::set(const std::string& key, DeckScalar value) {
  require(backend_key(key) != nullptr, "BackendOptions: no backend declares " + key);
  values_[key] = std::move(value);
}

DeckScalar BackendOptions::value(const std::string& key) const {
  const BackendKey* declared = backend_key(key);
  require(declared != nullptr, "BackendOptions: no backend declares " + key);
  const auto set = values_.find(key);
  return set != values_.end() ? set->second : declared->default_value;
}

long long BackendOptions::integer(const std::string& key) const {
  const DeckScalar v = value(key);
  require(std::holds_alternative<long long>(v), key + " is not an integer key");
  return std::get<long long>(v);
}

std::string BackendOptions::choice(const std::string& key) const {
  DeckScalar v = value(key);
  require(std::holds_alternative<std::string>(v), key + " is not a choice key");
  return std::get<std::string>(std::move(v));
}

}  // namespace minictx
