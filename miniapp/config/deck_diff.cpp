#include "config/deck_diff.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <utility>

#include "core/error.hpp"

namespace minictx {
namespace {

using Flat = std::vector<std::pair<std::string, std::string>>;  // dotted key, scalar text, in order

Flat flatten(const std::string& yaml, const char* which) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    fail(std::string(which) + " deck is not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) fail(std::string(which) + " deck is not a mapping of sections");
  Flat out;
  for (const auto& section : root) {
    if (!section.second.IsMap())
      fail(std::string(which) + " deck: section " + section.first.Scalar() + " is not a mapping");
    for (const auto& kv : section.second) {
      if (!kv.second.IsScalar())
        fail(std::string(which) + " deck: " + kv.first.Scalar() + " is not a scalar");
      out.emplace_back(section.first.Scalar() + "." + kv.first.Scalar(), kv.second.Scalar());
    }
  }
  return out;
}

const std::string* find(const Flat& flat, const std::string& key) {
  for (const auto& [k, v] : flat)
    if (k == key) return &v;
  return nullptr;
}

}  // namespace

std::vector<KeyDifference> all_differences(const std::string& old_yaml, const std::string& new_yaml,
                                           const std::vector<std::string>& ignore) {
  const Flat old_keys = flatten(old_yaml, "the old");
  const Flat new_keys = flatten(new_yaml, "the new");
  const auto ignored = [&](const std::string& key) {
    const std::string section = key.substr(0, key.find('.'));
    return std::find(ignore.begin(), ignore.end(), section) != ignore.end();
  };
  std::vector<KeyDifference> out;
  for (const auto& [key, value] : new_keys) {
    if (ignored(key)) continue;
    const std::string* old = find(old_keys, key);
    if (!old || *old != value) out.push_back({key, old ? *old : "(absent)", value});
  }
  for (const auto& [key, value] : old_keys)
    if (!ignored(key) && !find(new_keys, key)) out.push_back({key, value, "(absent)"});
  return out;
}

std::optional<KeyDifference> first_difference(const std::string& old_yaml, const std::string& new_yaml,
                                              const std::vector<std::string>& ignore) {
  auto all = all_differences(old_yaml, new_yaml, ignore);
  if (all.empty()) return std::nullopt;
  return all.front();
}

}  // namespace minictx
