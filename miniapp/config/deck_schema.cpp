// The key table and everything that reads or writes one value: type checks, limits,
// nearest-name suggestions, canonical formatting.
#include "config/deck_schema.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <limits>
#include <type_traits>

#include "config/backend_catalog.hpp"
#include "config/yaml_keys.hpp"
#include "core/error.hpp"

namespace minictx::deck_detail {
namespace {

template <class T>
void store(T& dst, const DeckScalar& v, const std::vector<std::string>& choices) {
  if constexpr (std::is_enum_v<T>) {
    const auto& s = std::get<std::string>(v);
    dst = T(std::find(choices.begin(), choices.end(), s) - choices.begin());
  } else if constexpr (std::is_same_v<T, bool>) {
    dst = std::get<bool>(v);
  } else if constexpr (std::is_integral_v<T>) {
    dst = T(std::get<long long>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    dst = std::get<double>(v);
  } else {
    dst = std::get<std::string>(v);
  }
}

template <class T>
DeckScalar load(const T& src) {
  if constexpr (std::is_enum_v<T>) {
    return std::string(to_string(src));
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return static_cast<long long>(src);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<double>(src);
  } else {
    return src;  // bool and std::string are DeckScalar alternatives as they are
  }
}

KeySpec named(const std::string& key, Kind kind) {
  KeySpec s;
  s.key = key;
  s.section = key.substr(0, key.find('.'));
  s.leaf = key.substr(key.find('.') + 1);
  s.kind = kind;
  return s;
}

// Binds a key to the RunConfig member cfg.*sec.*member; integer limits follow its C++ type.
template <class Sec, class T>
KeySpec member_key(const std::string& key, Sec RunConfig::*sec, T Sec::*member, Kind kind,
                   std::vector<std::string> choices = {}) {
  KeySpec s = named(key, kind);
  s.choices = std::move(choices);
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    s.max_int =
        static_cast<long long>(std::min<unsigned long long>(std::numeric_limits<T>::max(), LLONG_MAX));
  }
  s.apply = [sec, member, ch = s.choices](RunConfig& c, const DeckScalar& v) {
    store(c.*sec.*member, v, ch);
  };
  s.read = [sec, member](const RunConfig& c) { return load(c.*sec.*member); };
  return s;
}

template <class Sec, class T>
KeySpec integer(const std::string& key, Sec RunConfig::*sec, T Sec::*member, long long min) {
  KeySpec s = member_key(key, sec, member, Kind::integer);
  s.min_int = min;
  return s;
}

template <class Sec>
KeySpec real(const std::string& key, Sec RunConfig::*sec, double Sec::*member, double min, bool exclusive) {
  KeySpec s = member_key(key, sec, member, Kind::real);
  s.min_real = min;
  s.min_exclusive = exclusive;
  return s;
}

// Enum choices are spelled by to_string, so parsing and printing cannot drift apart.
template <class Sec, class T>
KeySpec enumeration(const std::string& key, Sec RunConfig::*sec, T Sec::*member) {
  std::vector<std::string> choices;
  choices.reserve(size_t(enum_size(T{})));
  for (int i = 0; i < enum_size(T{}); ++i) choices.emplace_back(to_string(T(i)));
  return member_key(key, sec, member, Kind::choice, std::move(choices));
}

// A key a backend declares as its own (config/backend_catalog.hpp); its value lives in
// AttentionConfig::options. Integer keys are read as int.
KeySpec backend_key_spec(const BackendKey& b) {
  KeySpec s = named(b.key, b.choices.empty() ? Kind::integer : Kind::choice);
  s.choices = b.choices;
  s.min_int = b.min;
  s.max_int = INT_MAX;
  s.apply = [key = b.key](RunConfig& c, const DeckScalar& v) { c.attention.options.set(key, v); };
  s.read = [key = b.key](const RunConfig& c) { return c.attention.options.value(key); };
  return s;
}

// run.loss_scale: a fixed scale (a number) or `dynamic`, RunSettings::kDynamicLossScale.
KeySpec loss_scale_key() {
  KeySpec s = real("run.loss_scale", &RunConfig::run, &RunSettings::loss_scale, 1, false);
  s.word = "dynamic";
  s.apply = [](RunConfig& c, const DeckScalar& v) {
    const double* fixed = std::get_if<double>(&v);
    c.run.loss_scale = fixed ? *fixed : RunSettings::kDynamicLossScale;
  };
  s.read = [](const RunConfig& c) {
    return c.run.loss_scale == RunSettings::kDynamicLossScale ? DeckScalar(std::string("dynamic"))
                                                              : DeckScalar(c.run.loss_scale);
  };
  return s;
}

// attention.window (config/attention_window.hpp): its text is its deck spelling.
KeySpec window_key() {
  KeySpec s = named("attention.window", Kind::window);
  s.apply = [](RunConfig& c, const DeckScalar& v) {
    c.attention.window = window_from_text(std::get<std::string>(v), "attention.window");
  };
  s.read = [](const RunConfig& c) { return DeckScalar(to_text(c.attention.window)); };
  return s;
}

std::vector<KeySpec> make_schema() {
  using R = RunConfig;
  std::vector<KeySpec> k;
  k.push_back(member_key("model.preset", &R::model, &ModelShape::preset, Kind::choice, model_presets()));
  k.push_back(integer("model.layers", &R::model, &ModelShape::layers, 1));
  k.push_back(integer("model.d_model", &R::model, &ModelShape::d_model, 1));
  k.push_back(integer("model.heads", &R::model, &ModelShape::heads, 1));
  k.push_back(integer("model.kv_heads", &R::model, &ModelShape::kv_heads, 1));
  k.push_back(integer("model.head_dim", &R::model, &ModelShape::head_dim, 2));
  k.back().even = true;  // RoPE rotates pairs of dimensions
  k.push_back(integer("model.head_dim_v", &R::model, &ModelShape::head_dim_v, 0));
  k.push_back(integer("model.ffn_hidden", &R::model, &ModelShape::ffn_hidden, 1));
  k.push_back(real("model.rms_eps", &R::model, &ModelShape::rms_eps, 0, true));
  k.push_back(real("model.rope_theta", &R::model, &ModelShape::rope_theta, 0, true));
  k.push_back(integer("model.vocab", &R::model, &ModelShape::vocab, 0));

  k.push_back(integer("sequence.length", &R::sequence, &SequenceConfig::length, 1));
  k.push_back(integer("sequence.batch", &R::sequence, &SequenceConfig::batch, 1));
  k.push_back(named("sequence.documents", Kind::documents));  // its text is its deck spelling
  k.back().apply = [](RunConfig& c, const DeckScalar& v) {
    c.sequence.documents = packing_from_text(std::get<std::string>(v), "sequence.documents");
  };
  k.back().read = [](const RunConfig& c) { return DeckScalar(to_text(c.sequence.documents)); };

  k.push_back(member_key("attention.backend", &R::attention, &AttentionConfig::backend, Kind::choice));
  k.back().choices_of = [] {  // the registry's names (config/backend_catalog.hpp)
    std::vector<std::string> names;
    for (const auto& b : backend_catalog()) names.push_back(b.name);
    return names;
  };
  k.push_back(member_key("attention.causal", &R::attention, &AttentionConfig::causal, Kind::boolean));
  k.push_back(window_key());
  k.push_back(member_key("attention.sinks", &R::attention, &AttentionConfig::sinks, Kind::boolean));
  // The backends' own keys, in the order the registry declares them.
  for (const BackendKey& b : backend_keys()) k.push_back(backend_key_spec(b));
  k.push_back(integer("attention.block_q", &R::attention, &AttentionConfig::block_q, 1));
  k.push_back(integer("attention.block_k", &R::attention, &AttentionConfig::block_k, 1));
  k.push_back(enumeration("attention.kernels", &R::attention, &AttentionConfig::kernels));
  k.push_back(enumeration("attention.partials", &R::attention, &AttentionConfig::partials));

  k.push_back(enumeration("run.mode", &R::run, &RunSettings::mode));
  k.push_back(member_key("run.fwd_only", &R::run, &RunSettings::fwd_only, Kind::boolean));
  k.push_back(integer("run.warmup", &R::run, &RunSettings::warmup, 0));
  k.push_back(integer("run.iters", &R::run, &RunSettings::iters, 1));
  k.push_back(enumeration("run.checkpointing", &R::run, &RunSettings::checkpointing));
  k.push_back(enumeration("run.grad_reduce", &R::run, &RunSettings::grad_reduce));
  k.push_back(enumeration("run.grad_reduce_dtype", &R::run, &RunSettings::grad_reduce_dtype));
  k.push_back(enumeration("run.dtype", &R::run, &RunSettings::dtype));
  k.push_back(enumeration("run.layer_kernels", &R::run, &RunSettings::layer_kernels));
  k.push_back(loss_scale_key());
  k.push_back(real("run.initial_loss_scale", &R::run, &RunSettings::initial_loss_scale, 1, false));
  k.push_back(enumeration("run.device", &R::run, &RunSettings::device));
  k.push_back(enumeration("run.comm", &R::run, &RunSettings::comm));
  k.push_back(integer("run.seed", &R::run, &RunSettings::seed, 0));
  k.push_back(real("run.input_scale", &R::run, &RunSettings::input_scale, 0, true));
  k.push_back(integer("run.key_directions", &R::run, &RunSettings::key_directions, 0));
  k.push_back(integer("run.loss_chunk", &R::run, &RunSettings::loss_chunk, 0));
  k.push_back(member_key("run.verify", &R::run, &RunSettings::verify, Kind::boolean));
  k.push_back(real("run.watchdog_seconds", &R::run, &RunSettings::watchdog_seconds, -1, false));
  k.push_back(member_key("run.ring_timeline", &R::run, &RunSettings::ring_timeline, Kind::boolean));
  k.push_back(enumeration("run.reference", &R::run, &RunSettings::reference));

  k.push_back(member_key("machine.profile", &R::machine, &MachineConfig::profile, Kind::text));
  k.push_back(real("machine.peak_tflops", &R::machine, &MachineConfig::peak_tflops, 0, false));

  k.push_back(integer("topology.ranks_per_node", &R::topology, &TopologyConfig::ranks_per_node, 0));
  k.push_back(integer("topology.world_size", &R::topology, &TopologyConfig::world_size, 0));

  k.push_back(member_key("benchmark.class", &R::benchmark, &BenchmarkConfig::class_name, Kind::text));
  k.push_back(member_key("benchmark.role", &R::benchmark, &BenchmarkConfig::role, Kind::choice,
                         {"measurement", "verification"}));
  k.push_back(integer("benchmark.verify_length", &R::benchmark, &BenchmarkConfig::verify_length, 0));
  k.push_back(integer("benchmark.verify_layers", &R::benchmark, &BenchmarkConfig::verify_layers, 0));

  k.push_back(member_key("output.file", &R::output, &OutputConfig::file, Kind::text));
  k.push_back(member_key("output.overwrite", &R::output, &OutputConfig::overwrite, Kind::boolean));

  k.push_back(named("sweep.zip", Kind::key_list));  // not a RunConfig member: shapes the sweep
  return k;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

// Typos shorter than about three letters per edit are still recognisable.
std::size_t close_enough(const std::string& word) { return std::clamp<std::size_t>(word.size() / 3, 1, 3); }

// YAML allows a leading '+', from_chars does not.
const char* after_plus(const std::string& t) {
  return t.data() + (t.size() > 1 && t[0] == '+' && t[1] != '-');
}

bool parse_real(const std::string& t, double& out) {
  const char* e = t.data() + t.size();
  auto [p, ec] = std::from_chars(after_plus(t), e, out);
  return !t.empty() && ec == std::errc() && p == e && std::isfinite(out);
}

// sequence.documents' value is itself a list: a list of lengths is one packing, and a
// list whose items are packings (lists, mappings or none) is a sweep over them.
bool is_packing_sweep(const YAML::Node& node) {
  for (const auto& item : node)
    if (item.IsSequence() || item.IsMap() || (item.IsScalar() && item.Scalar() == "none")) return true;
  return false;
}

[[noreturn]] void bad(const std::string& where, const KeySpec& s, const std::string& what) {
  input_error(where + ": " + s.key + " " + what);
}

}  // namespace

const std::vector<KeySpec>& schema() {
  static const std::vector<KeySpec> table = make_schema();
  return table;
}

const std::vector<std::string>& section_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& s : schema())
      if (n.empty() || n.back() != s.section) n.push_back(s.section);
    return n;
  }();
  return names;
}

const KeySpec* find_key(const std::string& dotted) {
  for (const auto& s : schema())
    if (s.key == dotted) return &s;
  return nullptr;
}

// Optimal string alignment distance: Levenshtein plus adjacent transpositions, the
// commonest typo ("modle").
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string unknown_key_message(const std::string& dotted) {
  const auto dot = dotted.find('.');
  const std::string section = dot == std::string::npos ? "" : dotted.substr(0, dot);
  const std::string leaf = dot == std::string::npos ? dotted : dotted.substr(dot + 1);
  // A leaf written under the wrong section ("attention.layers") is one edit away from
  // the right key; a typo in either part counts its edits.
  const KeySpec* best = nullptr;
  std::size_t best_d = SIZE_MAX;
  for (const auto& s : schema()) {
    const std::size_t d =
        std::min(edit_distance(dotted, s.key), edit_distance(leaf, s.leaf) + (s.section == section ? 0 : 1));
    if (d < best_d || (d == best_d && s.section == section && best->section != section)) {
      best = &s;
      best_d = d;
    }
  }
  std::string msg = "unknown key '" + dotted + "'";
  if (best_d <= close_enough(leaf)) return msg + " (did you mean '" + best->key + "'?)";
  std::vector<std::string> leaves;
  for (const auto& s : schema())
    if (s.section == section) leaves.push_back(s.leaf);
  if (!leaves.empty()) msg += " (keys of " + section + ": " + join(leaves, ", ") + ")";
  return msg;
}

std::string unknown_section_message(const std::string& section) {
  std::string msg = "unknown section '" + section + "'";
  if (const KeySpec* k = find_key(section))
    return msg + " (write '" + k->leaf + ":' indented under '" + k->section + ":')";
  std::string best;
  std::size_t best_d = SIZE_MAX;
  for (const auto& s : section_names()) {
    const std::size_t d = edit_distance(section, s);
    if (d < best_d) best = s, best_d = d;
  }
  if (best_d <= close_enough(section)) return msg + " (did you mean '" + best + "'?)";
  return msg + " (sections: " + join(section_names(), ", ") + ")";
}

const char* integer_digits(const std::string& t) {
  const std::size_t sign = !t.empty() && (t[0] == '+' || t[0] == '-');
  const bool digits = t.size() > sign &&
                      std::all_of(t.begin() + sign, t.end(), [](unsigned char c) { return std::isdigit(c); });
  return digits ? t.data() + (t[0] == '+') : nullptr;
}

DeckScalar parse_value(const KeySpec& s, const YAML::Node& node, const std::string& where) {
  if (node.IsNull()) {
    if (s.kind == Kind::text) return std::string();  // "file:" means the default name
    bad(where, s, "has no value");
  }
  if (s.kind == Kind::documents) return to_text(packing_from_yaml(node, where));
  if (s.kind == Kind::window) return to_text(window_from_yaml(node, where));
  if (!node.IsScalar())
    bad(where, s, std::string("must be a single value, got a ") + (node.IsMap() ? "mapping" : "nested list"));
  const std::string& t = node.Scalar();
  switch (s.kind) {
    case Kind::integer: {
      const char* digits = integer_digits(t);
      if (!digits) bad(where, s, "must be an integer, got '" + t + "'");
      long long v = 0;
      const auto parsed = std::from_chars(digits, t.data() + t.size(), v);
      // Out of the range of long long: beyond the key's bounds on the side of its sign.
      const bool too_small = parsed.ec == std::errc() ? v < s.min_int : t[0] == '-';
      const bool too_large = parsed.ec == std::errc() ? v > s.max_int : t[0] != '-';
      if (too_small) bad(where, s, "must be at least " + std::to_string(s.min_int) + ", got " + t);
      if (too_large) bad(where, s, "must be at most " + std::to_string(s.max_int) + ", got " + t);
      if (s.even && v % 2 != 0) bad(where, s, "must be even (RoPE rotates pairs of dimensions), got " + t);
      return v;
    }
    case Kind::real: {
      if (!s.word.empty() && t == s.word) return t;
      double v = 0;
      const std::string or_word = s.word.empty() ? "" : s.word + " or ";
      if (!parse_real(t, v)) bad(where, s, "must be " + or_word + "a number, got '" + t + "'");
      if (s.min_exclusive ? v <= s.min_real : v < s.min_real)
        bad(where, s,
            "must be " + or_word + (s.min_exclusive ? "greater than " : "at least ") +
                format_value(s.min_real) + ", got " + t);
      return v;
    }
    case Kind::boolean:
      if (t == "true" || t == "True" || t == "TRUE") return true;
      if (t == "false" || t == "False" || t == "FALSE") return false;
      bad(where, s, "must be true or false, got '" + t + "'");
    case Kind::choice: {
      const std::vector<std::string> choices = s.choices_of ? s.choices_of() : s.choices;
      if (std::find(choices.begin(), choices.end(), t) == choices.end())
        bad(where, s, "must be one of " + join(choices, ", ") + "; got '" + t + "'");
      return t;
    }
    case Kind::text:
    case Kind::key_list:
    case Kind::documents:
    case Kind::window:
      break;
  }
  return t;
}

DeckEntry parse_entry(const KeySpec& s, const YAML::Node& node, const std::string& where,
                      const std::function<std::string(const YAML::Node&)>& item_where) {
  DeckEntry e{s.key, {}, false, where};
  if (s.kind == Kind::key_list) {
    e.is_list = true;
    if (node.IsNull()) return e;
    if (!node.IsSequence())
      bad(where, s, "must be a list of keys, e.g. [sequence.length, attention.backend]");
    for (const auto& item : node) {
      const std::string at = item_where(item);
      if (!item.IsScalar()) bad(at, s, "must list dotted keys such as sequence.length");
      const std::string k = item.Scalar();
      if (!find_key(k)) input_error(at + ": " + s.key + " names an " + unknown_key_message(k));
      if (k == s.key) bad(at, s, "cannot name itself");
      for (const auto& prev : e.values)
        if (std::get<std::string>(prev) == k) bad(at, s, "names '" + k + "' twice");
      e.values.emplace_back(k);
    }
    return e;
  }
  if (!node.IsSequence() || (s.kind == Kind::documents && !is_packing_sweep(node))) {
    e.values.push_back(parse_value(s, node, where));
    return e;
  }
  if (node.size() == 0) bad(where, s, "has an empty sweep list");
  e.is_list = true;
  for (const auto& item : node) e.values.push_back(parse_value(s, item, item_where(item)));
  return e;
}

YAML::Node load_value_text(const std::string& text, const std::string& where, const std::string& forms) {
  YAML::Node n;
  try {
    n = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    input_error(where + ": " + forms + "; the value is not valid YAML (" + e.msg + ")");
  }
  refuse_duplicate_keys(n, where);
  return n;
}

// Shortest text that reads back to the same double, so resolved decks round-trip.
std::string format_value(const DeckScalar& v) {
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const long long* i = std::get_if<long long>(&v)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&v)) {
    char buf[32];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, *d);
    return std::string(buf, p);
  }
  return std::get<std::string>(v);
}

}  // namespace minictx::deck_detail

namespace minictx {

std::vector<std::string> deck_keys() {
  std::vector<std::string> keys;
  for (const auto& s : deck_detail::schema()) keys.push_back(s.key);
  return keys;
}

}  // namespace minictx
