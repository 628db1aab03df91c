#include "config/backend_catalog.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace minictx {
namespace {

std::vector<BackendDeckFacts>& catalog() {
  static std::vector<BackendDeckFacts> backends;
  return backends;
}

bool same_declaration(const BackendKey& a, const BackendKey& b) {
  return a.key == b.key && a.choices == b.choices && a.min == b.min && a.default_value == b.default_value &&
         a.doc == b.doc;
}

}  // namespace

BackendKey choice_key(std::string key, std::vector<std::string> choices, std::string doc) {
  require(!choices.empty(), key + ": a choice key needs choices");
  BackendKey k{std::move(key), std::move(choices), 0, DeckScalar(), std::move(doc)};
  k.default_value = k.choices.front();
  return k;
}

BackendKey integer_key(std::string key, long long min, long long default_value, std::string doc) {
  return {std::move(key), {}, min, default_value, std::move(doc)};
}

std::string key_type_text(const BackendKey& key) {
  if (key.choices.empty())
    return "integer >= " + std::to_string(key.min) + " (default " +
           std::to_string(std::get<long long>(key.default_value)) + ")";
  std::string text = "choice: ";
  for (const auto& c : key.choices) text += (&c == &key.choices.front() ? "" : ", ") + c;
  return text + " (default " + std::get<std::string>(key.default_value) + ")";
}

void install_backend_catalog(std::vector<BackendDeckFacts> backends) {
  catalog() = std::move(backends);
  for (const auto& b : catalog())
    for (const auto& k : b.keys)
      require(same_declaration(*backend_key(k.key), k), "attention.backend " + b.name + " declares " + k.key +
                                                            " unlike the backend that declared it first");
}

const std::vector<BackendDeckFacts>& backend_catalog() {
  require(!catalog().empty(),
          "no attention backend is installed in the deck (call install_deck_backends first)");
  return catalog();
}

const BackendDeckFacts& backend_facts(const std::string& name) {
  for (const auto& b : backend_catalog())
    if (b.name == name) return b;
  require(false, "attention.backend '" + name + "' passed the deck's check but is not registered");
  return catalog().front();
}

std::vector<BackendKey> backend_keys() {
  std::vector<BackendKey> keys;
  for (const auto& b : backend_catalog())
    for (const auto& k : b.keys)
      if (std::none_of(keys.begin(), keys.end(), [&](const BackendKey& seen) { return seen.key == k.key; }))
        keys.push_back(k);
  return keys;
}

const BackendKey* backend_key(const std::string& key) {
  for (const auto& b : backend_catalog())
    for (const auto& k : b.keys)
      if (k.key == key) return &k;
  return nullptr;
}

bool takes_option(const BackendDeckFacts& backend, const std::string& key) {
  return std::any_of(backend.keys.begin(), backend.keys.end(),
                     [&](const BackendKey& k) { return k.key == key; });
}

bool is_backend_option(const std::string& key) { return backend_key(key) != nullptr; }

}  // namespace minictx
