// Reading a deck (file, string, built-in), --set overrides, and writing it back out.
#include "config/deck.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "config/deck_schema.hpp"
#include "config/yaml_keys.hpp"
#include "core/error.hpp"
#include "core/file_kind.hpp"

namespace fs = std::filesystem;

namespace minictx {

using namespace deck_detail;

namespace {

std::string line_of(const YAML::Mark& m) { return m.is_null() ? "" : " line " + std::to_string(m.line + 1); }

}  // namespace

Deck Deck::from_file(const std::string& path) {
  refuse_special_file(path, "deck");
  errno = 0;
  std::ifstream in(path);
  if (!in) input_error("deck " + path + ": cannot read the file: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) input_error("deck " + path + ": cannot read the file: " + std::strerror(errno));
  Deck d = from_string(text.str(), path);
  d.dir_ = fs::absolute(path).parent_path();
  return d;
}

Deck Deck::builtin_quickstart() { return from_string(quickstart_text(), "builtin:quickstart"); }

Deck Deck::from_string(const std::string& yaml, const std::string& name) {
  const std::string deck = "deck " + name;
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(yaml);
  } catch (const YAML::Exception& e) {
    input_error(deck + line_of(e.mark) + ": invalid YAML: " + e.msg);
  }
  if (docs.size() > 1)
    input_error(deck + ": holds " + std::to_string(docs.size()) + " YAML documents ('---'); a deck is one");

  Deck d;
  d.name_ = name;
  if (docs.empty() || docs[0].IsNull()) return d;  // an empty deck: every default
  const YAML::Node& root = docs[0];
  auto at = [&](const YAML::Node& n) { return deck + line_of(n.Mark()); };
  if (!root.IsMap()) input_error(at(root) + ": a deck is a mapping of sections (model:, sequence:, ...)");
  refuse_duplicate_keys(root, deck);

  for (const auto& sec : root) {
    const std::string section = sec.first.Scalar();
    const std::string where = at(sec.first);
    const auto& names = section_names();
    if (std::find(names.begin(), names.end(), section) == names.end())
      input_error(where + ": " + unknown_section_message(section));
    if (sec.second.IsNull()) continue;
    if (!sec.second.IsMap()) input_error(where + ": section '" + section + "' must hold 'key: value' lines");
    for (const auto& kv : sec.second) {
      const std::string key = section + "." + kv.first.Scalar();
      const std::string kwhere = at(kv.first);
      const KeySpec* spec = find_key(key);
      if (!spec) input_error(kwhere + ": " + unknown_key_message(key));
      // A null item has no mark of its own; its key's line is the nearest.
      auto item_at = [&](const YAML::Node& n) { return n.Mark().is_null() ? kwhere : at(n); };
      d.entries_.push_back(parse_entry(*spec, kv.second, kwhere, item_at));
    }
  }
  return d;
}

void Deck::set(const std::string& key_equals_value) {
  const std::string where = "--set " + key_equals_value;
  const auto eq = key_equals_value.find('=');
  if (eq == std::string::npos || eq == 0)
    input_error(where + ": expected section.key=value, e.g. model.layers=4");
  const std::string key = key_equals_value.substr(0, eq);
  const KeySpec* spec = find_key(key);
  if (!spec) input_error(where + ": " + unknown_key_message(key));
  YAML::Node value;
  try {
    value = YAML::Load(key_equals_value.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    input_error(where + ": the value is not valid YAML (" + e.msg + ")");
  }
  refuse_duplicate_keys(value, where);
  // sequence.documents and attention.window have mapping forms.
  if (value.IsMap() && spec->kind != Kind::documents && spec->kind != Kind::window)
    input_error(where + ": the value must be a single value or a list such as [1,2]");
  // `where` is captured, not the lambda's local: the copy is by design.
  // NOLINTNEXTLINE(performance-no-automatic-move)
  DeckEntry entry = parse_entry(*spec, value, where, [&](const YAML::Node&) { return where; });

  // Replace in place, so a swept key keeps its place in the sweep order; a new key goes
  // after the last key of its section, so that to_yaml() keeps the same order.
  auto same =
      std::find_if(entries_.begin(), entries_.end(), [&](const DeckEntry& e) { return e.key == key; });
  if (same != entries_.end()) {
    *same = std::move(entry);
  } else {
    auto last = std::find_if(entries_.rbegin(), entries_.rend(),
                             [&](const DeckEntry& e) { return find_key(e.key)->section == spec->section; });
    entries_.insert(last.base(), std::move(entry));
  }
  overrides_.push_back(key_equals_value);
}

std::vector<SweepPoint> Deck::expand() const { return expand_entries(entries_, name_, dir_); }

RunConfig Deck::resolve() const {
  auto points = expand();
  if (points.size() != 1) {
    std::string swept;
    for (const auto& e : entries_)
      if (e.is_list && e.key != "sweep.zip") swept += (swept.empty() ? "" : ", ") + e.key;
    input_error("deck " + name_ + ": sweeps " + swept + " (" + std::to_string(points.size()) +
                " points), but one configuration is needed here");
  }
  return points[0].config;
}

// Entries are grouped by section in deck order, so the output reads back to the same
// entries in the same order (and so the same sweep).
std::string Deck::to_yaml() const {
  auto one_line = [](std::string s) {
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s;
  };
  std::string head = "# minictx deck " + one_line(name_) + "\n";
  for (const auto& o : overrides_) head += "# --set " + one_line(o) + "\n";

  YAML::Emitter out;
  out << YAML::BeginMap;
  std::string section;
  for (const auto& e : entries_) {
    const KeySpec& spec = *find_key(e.key);
    if (spec.section != section) {
      if (!section.empty()) out << YAML::EndMap;
      section = spec.section;
      out << YAML::Key << section << YAML::Value << YAML::BeginMap;
    }
    out << YAML::Key << spec.leaf << YAML::Value;
    if (e.is_list) {
      out << YAML::Flow << YAML::BeginSeq;
      for (const auto& v : e.values) out << format_value(v);
      out << YAML::EndSeq;
    } else {
      out << format_value(e.values[0]);
    }
  }
  if (!section.empty()) out << YAML::EndMap;
  out << YAML::EndMap;
  return head + out.c_str() + "\n";
}

}  // namespace minictx
