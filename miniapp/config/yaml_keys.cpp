#include "config/yaml_keys.hpp"

#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace minictx {
namespace {

std::string line_of(const YAML::Node& n) { return std::to_string(n.Mark().line + 1); }

}  // namespace

void refuse_duplicate_keys(const YAML::Node& root, const std::string& where) {
  // A walk with its own stack, each node once: an alias shares its anchor's node (and
  // mark), so a document of aliases costs what its distinct nodes do.
  std::vector<std::pair<YAML::Node, std::string>> todo{{root, ""}};
  std::set<std::tuple<int, int, int>> seen;
  while (!todo.empty()) {
    const auto [node, path] = todo.back();
    todo.pop_back();
    if (!node.IsMap() && !node.IsSequence()) continue;
    const YAML::Mark m = node.Mark();
    if (!m.is_null() && !seen.insert({m.pos, m.line, m.column}).second) continue;
    if (node.IsSequence()) {
      std::size_t i = 0;
      for (const auto& item : node) todo.emplace_back(item, path + "[" + std::to_string(i++) + "]");
      continue;
    }
    std::map<std::string, YAML::Node> keys;
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : YAML::Dump(kv.first);
      const std::string dotted = path.empty() ? key : path + "." + key;
      const auto [first, fresh] = keys.emplace(key, kv.first);
      if (!fresh)
        input_error(where + " line " + line_of(kv.first) + ": " + dotted + " is given twice (lines " +
                    line_of(first->second) + " and " + line_of(kv.first) + ")");
      todo.emplace_back(kv.second, dotted);
    }
  }
}

}  // namespace minictx
