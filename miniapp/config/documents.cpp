#include "config/documents.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "config/deck_schema.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"

namespace minictx {
namespace {

// Counter stream of the generated lengths (the data generator's tensor ids are below 1000,
// the weights' from 1000 on).
constexpr uint64_t kDocumentStream = 999;

const char* const kForms =
    "sequence.documents must be none, a list of document lengths, {rows: [[lengths], ...]} (one list per "
    "batch row), {uniform: [min, max], seed: N} or {pareto: [min, max], alpha: A, seed: N}";

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  input_error(where + ": " + kForms + "; " + what);
}

int64_t positive(const YAML::Node& n, const std::string& where) {
  const std::string t = n.IsScalar() ? n.Scalar() : std::string();
  const char* digits = deck_detail::integer_digits(t);
  long long v = 0;
  if (!digits || std::from_chars(digits, t.data() + t.size(), v).ec != std::errc() || v < 1)
    bad(where, "a length must be a positive integer, got '" + (n.IsScalar() ? t : YAML::Dump(n)) + "'");
  return v;
}

std::vector<int64_t> length_list(const YAML::Node& n, const std::string& where) {
  if (!n.IsSequence() || n.size() == 0) bad(where, "got an empty or malformed list");
  std::vector<int64_t> out;
  for (const auto& item : n) out.push_back(positive(item, where));
  return out;
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

DocumentPacking from_map(const YAML::Node& n, const std::string& where) {
  DocumentPacking p;
  if (n["rows"]) {
    if (n.size() != 1) bad(where, "rows takes no other key");
    const YAML::Node rows = n["rows"];
    if (!rows.IsSequence() || rows.size() == 0) bad(where, "rows must list one length list per batch row");
    for (const auto& r : rows) p.lengths.push_back(length_list(r, where));
    p.per_row = true;
    return p;
  }
  const bool pareto = bool(n["pareto"]);
  const YAML::Node range = pareto ? n["pareto"] : n["uniform"];
  if (!range || !n["seed"] || (pareto && !n["alpha"]) || n.size() != (pareto ? 3u : 2u))
    bad(where, "a mapping takes rows, uniform and seed, or pareto, alpha and seed");
  const char* form = pareto ? "pareto" : "uniform";
  const std::vector<int64_t> mm = length_list(range, where);
  if (mm.size() != 2 || mm[0] > mm[1]) bad(where, std::string(form) + " takes [min, max] with min <= max");
  if (pareto) {
    const std::string a = n["alpha"].IsScalar() ? n["alpha"].Scalar() : std::string();
    const char* end = a.data() + a.size();
    const auto parsed = std::from_chars(a.data() + (!a.empty() && a[0] == '+'), end, p.pareto_alpha);
    if (a.empty() || parsed.ec != std::errc() || parsed.ptr != end || !(p.pareto_alpha > 0) ||
        !std::isfinite(p.pareto_alpha))
      bad(where, "alpha must be a positive number, got '" + a + "'");
  }
  const std::string seed = n["seed"].IsScalar() ? n["seed"].Scalar() : std::string();
  const char* digits = deck_detail::integer_digits(seed);
  if (!digits || std::from_chars(digits, seed.data() + seed.size(), p.seed).ec != std::errc())
    bad(where, "seed must be a non-negative integer, got '" + seed + "'");
  p.min_length = mm[0];
  p.max_length = mm[1];
  return p;
}

// The length u in [0, 1) draws: uniform over [min, max], or the inverse of the Pareto
// distribution cut at max, min / (1 − u·(1 − (min/max)^α))^(1/α), rounded down.
int64_t drawn_length(const DocumentPacking& p, double u) {
  const int64_t lo = p.min_length, hi = p.max_length;
  if (p.pareto_alpha == 0) return lo + std::min(int64_t(u * double(hi - lo + 1)), hi - lo);
  const double a = p.pareto_alpha;
  const double x = double(lo) / std::pow(1.0 - u * (1.0 - std::pow(double(lo) / double(hi), a)), 1.0 / a);
  return std::clamp(int64_t(x), lo, hi);
}

}  // namespace

std::string to_text(const DocumentPacking& p) {
  const std::string range = "[" + std::to_string(p.min_length) + ", " + std::to_string(p.max_length) + "]";
  if (p.generated() && p.pareto_alpha > 0) {
    char alpha[32];
    const auto end = std::to_chars(alpha, alpha + sizeof alpha, p.pareto_alpha).ptr;  // shortest round trip
    return "{pareto: " + range + ", alpha: " + std::string(alpha, end) + ", seed: " + std::to_string(p.seed) +
           "}";
  }
  if (p.generated()) return "{uniform: " + range + ", seed: " + std::to_string(p.seed) + "}";
  if (p.lengths.empty()) return "none";
  if (!p.per_row) return list_text(p.lengths[0]);
  std::string s = "{rows: [";
  for (std::size_t r = 0; r < p.lengths.size(); ++r) s += (r ? ", " : "") + list_text(p.lengths[r]);
  return s + "]}";
}

DocumentPacking packing_from_text(const std::string& text, const std::string& where) {
  return deck_detail::packing_from_yaml(deck_detail::load_value_text(text, where, kForms), where);
}

namespace deck_detail {

DocumentPacking packing_from_yaml(const YAML::Node& n, const std::string& where) {
  if (n.IsScalar() && n.Scalar() == "none") return {};
  // A resolved deck may carry the packing as a quoted string.
  if (n.IsScalar() && !n.Scalar().empty() && (n.Scalar()[0] == '[' || n.Scalar()[0] == '{'))
    return packing_from_text(n.Scalar(), where);
  if (n.IsMap()) return from_map(n, where);
  if (!n.IsSequence()) bad(where, "got '" + (n.IsScalar() ? n.Scalar() : std::string()) + "'");
  DocumentPacking p;
  p.lengths.push_back(length_list(n, where));
  return p;
}

}  // namespace deck_detail

std::vector<std::vector<int64_t>> document_lengths(const DocumentPacking& p, int64_t length, int batch) {
  if (p.none()) return {};
  if (!p.generated())
    return p.per_row ? p.lengths : std::vector<std::vector<int64_t>>(size_t(batch), p.lengths[0]);
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(batch));
  const CounterRng rng(p.seed, kDocumentStream);
  for (int b = 0; b < batch; ++b) {
    int64_t left = length;
    for (uint64_t i = 0; left > 0; ++i) {
      const double u = (rng.uniform((uint64_t(b) << 32) + i) + 1.0) / 2.0;  // [0, 1)
      const int64_t len = std::min(drawn_length(p, u), left);
      rows[size_t(b)].push_back(len);
      left -= len;
    }
  }
  return rows;
}

}  // namespace minictx
