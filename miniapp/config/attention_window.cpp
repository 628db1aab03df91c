#include "config/attention_window.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>

#include "config/deck_schema.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

constexpr const char* kGlobalWord = "global";
const char* const kForms =
    "attention.window must be global, a window in tokens (a positive integer) or {layers: [window or global, "
    "...]} (repeated over the layers)";

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  input_error(where + ": " + kForms + "; " + what);
}

int64_t one_window(const YAML::Node& n, const std::string& where) {
  const std::string t = n.IsScalar() ? n.Scalar() : std::string();
  if (t == kGlobalWord) return AttentionWindow::kGlobal;
  const char* digits = deck_detail::integer_digits(t);
  long long v = 0;
  if (!digits || std::from_chars(digits, t.data() + t.size(), v).ec != std::errc() || v < 1)
    bad(where,
        "a window must be a positive integer or global, got '" + (n.IsScalar() ? t : YAML::Dump(n)) + "'");
  return v;
}

// Every layer alike is written as one value.
AttentionWindow canonical(std::vector<int64_t> pattern) {
  const bool alike = std::all_of(pattern.begin(), pattern.end(), [&](int64_t w) { return w == pattern[0]; });
  if (alike) pattern.resize(pattern[0] == AttentionWindow::kGlobal ? 0 : 1);
  return {pattern};
}

std::string window_text(int64_t w) { return w == AttentionWindow::kGlobal ? kGlobalWord : std::to_string(w); }

}  // namespace

std::string to_text(const AttentionWindow& w) {
  if (w.pattern.empty()) return kGlobalWord;
  if (w.pattern.size() == 1) return window_text(w.pattern[0]);
  std::string s = "{layers: [";
  for (size_t i = 0; i < w.pattern.size(); ++i) s += (i ? ", " : "") + window_text(w.pattern[i]);
  return s + "]}";
}

AttentionWindow window_from_text(const std::string& text, const std::string& where) {
  return deck_detail::window_from_yaml(deck_detail::load_value_text(text, where, kForms), where);
}

namespace deck_detail {

AttentionWindow window_from_yaml(const YAML::Node& n, const std::string& where) {
  // A resolved deck carries the per-layer form as a quoted string.
  if (n.IsScalar() && !n.Scalar().empty() && n.Scalar()[0] == '{') return window_from_text(n.Scalar(), where);
  if (!n.IsMap()) return canonical({one_window(n, where)});
  const YAML::Node layers = n["layers"];
  if (!layers || n.size() != 1) bad(where, "a mapping takes the one key layers");
  if (!layers.IsSequence() || layers.size() == 0) bad(where, "layers must list at least one window");
  std::vector<int64_t> pattern;
  for (const auto& item : layers) pattern.push_back(one_window(item, where));
  return canonical(pattern);
}

}  // namespace deck_detail

}  // namespace minictx
