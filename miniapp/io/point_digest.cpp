#include "io/point_digest.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/enum_names.hpp"
#include "core/sha256.hpp"
#include "io/results_schema.hpp"

namespace minictx {
namespace {

namespace rt = schema::ring_timeline;

constexpr const char* kPointTag = "minictx point digest v1\n";
constexpr const char* kProvenanceTag = "minictx provenance digest v1\n";

// A length-prefixed token: "<bytes>:<text>", so no text can be mistaken for a separator.
std::string token(const std::string& s) { return std::to_string(s.size()) + ":" + s; }

std::string value_text(int64_t v) { return std::to_string(v); }
std::string value_text(const std::string& v) { return v; }
// The IEEE-754 bits as 16 hex digits: exact, and the same in every language. Every NaN is
// one NaN.
std::string value_text(double v) {
  uint64_t bits = 0x7ff8000000000000ULL;
  if (!std::isnan(v)) std::memcpy(&bits, &v, sizeof bits);
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits));
  return text;
}

const char* type_name(int64_t) { return "int"; }
const char* type_name(double) { return "float"; }
const char* type_name(const std::string&) { return "str"; }

// Entries by path: "@name" for an attribute of the point's group, "group@name" for one of
// a subgroup or dataset, "group/dataset" for a dataset.
class Canon {
 public:
  template <class T>
  void scalar(const std::string& path, const T& value) {
    add(path, type_name(value), "", token(value_text(value)));
  }
  template <class T, class As = T>
  void column(const std::string& path, const std::vector<T>& values, std::vector<uint64_t> shape = {}) {
    if (shape.empty()) shape = {values.size()};
    std::string shape_text, body;
    for (uint64_t d : shape) shape_text += (shape_text.empty() ? "" : "x") + std::to_string(d);
    for (const T& v : values) body += token(value_text(As(v)));
    add(path, type_name(As()), shape_text, body);
  }
  std::string text() {
    std::sort(entries_.begin(), entries_.end());
    std::string out;
    for (const auto& [path, rest] : entries_) out += token(path) + rest + "\n";
    return out;
  }

 private:
  void add(const std::string& path, const char* type, const std::string& shape, const std::string& body) {
    entries_.emplace_back(path, token(type) + token(shape) + body);
  }
  std::vector<std::pair<std::string, std::string>> entries_;
};

template <class Record, class Field>
auto pick(const std::vector<Record>& records, Field field) {
  std::vector<std::decay_t<decltype(records.front().*field)>> values;
  values.reserve(records.size());
  for (const Record& r : records) values.push_back(r.*field);
  return values;
}

template <class Record>
std::vector<std::string> pass_names(const std::vector<Record>& records) {
  std::vector<std::string> names;
  names.reserve(records.size());
  for (const Record& r : records) names.emplace_back(to_string(r.pass));
  return names;
}

// The columns ring steps and outer transfers share, under `group/`.
template <class Record>
void shared_columns(Canon& c, const std::string& group, const std::vector<Record>& records) {
  c.column<int, int64_t>(group + rt::rank, pick(records, &Record::rank));
  c.column<int, int64_t>(group + rt::layer, pick(records, &Record::layer));
  c.column(group + rt::pass, pass_names(records));
  c.column<int, int64_t>(group + rt::round, pick(records, &Record::round));
  c.column(group + rt::transfer_posted, pick(records, &Record::transfer_posted));
  c.column(group + rt::transfer_done, pick(records, &Record::transfer_done));
}

void ring_timeline(Canon& c, const RingTimelineResult& t) {
  const std::string g = std::string(rt::group) + "/";
  c.scalar(std::string(rt::group) + "@" + rt::iteration, t.iteration);
  c.scalar(std::string(rt::group) + "@" + rt::clock, t.clock);
  shared_columns(c, g, t.steps);
  c.column<int, int64_t>(g + rt::step, pick(t.steps, &RingStep::step));
  c.column<int, int64_t>(g + rt::source, pick(t.steps, &RingStep::source));
  c.column(g + rt::compute_start, pick(t.steps, &RingStep::compute_start));
  c.column(g + rt::compute_end, pick(t.steps, &RingStep::compute_end));
  const std::string o = g + rt::outer + "/";
  shared_columns(c, o, t.outer);
  std::vector<std::string> carries;
  carries.reserve(t.outer.size());
  for (const OuterTransfer& x : t.outer) carries.emplace_back(to_string(x.carries));
  c.column(o + rt::carries, carries);
}

void verification(Canon& c, const std::vector<VerifyRow>& rows) {
  c.column("verification/tensor", pick(rows, &VerifyRow::tensor));
  for (const VerifyColumn& col : verify_columns())
    c.column(std::string("verification/") + col.name, pick(rows, col.member));
  std::vector<int64_t> pass;
  pass.reserve(rows.size());
  for (const VerifyRow& r : rows) pass.push_back(r.pass ? 1 : 0);
  c.column("verification/pass", pass);
}

}  // namespace

std::string canonical_point(const PointResult& p) {
  Canon c;
  c.scalar("@deck", p.deck);
  c.scalar("@verdict", p.verdict);
  c.scalar("@reference", p.reference);
  c.scalar("@skipped_reason", p.skipped_reason);
  c.scalar("@iters", int64_t(p.iters));
  c.scalar("@ranks", int64_t(p.ranks));
  for (const auto& [key, value] : p.labels) c.scalar("labels@" + key, value);
  for (const auto& [key, value] : p.metrics) c.scalar("metrics@" + key, value);
  const uint64_t iters = p.iter_seconds.empty() ? 0 : uint64_t(p.iters);
  c.column("iter_seconds", p.iter_seconds, {iters, uint64_t(p.ranks)});
  for (const auto& [phase, seconds] : p.phase_seconds) c.column("phase_seconds/" + phase, seconds);
  c.column("peak_memory_bytes", p.peak_memory_bytes);
  c.column("bytes_sent_intra", p.bytes_sent_intra);
  c.column("bytes_sent_inter", p.bytes_sent_inter);
  verification(c, p.verification);
  ring_timeline(c, p.ring_timeline);
  return c.text();
}

std::string canonical_provenance(const Provenance& p) {
  Canon c;
  for (const auto& [key, value] : p.text) c.scalar("@" + key, value);
  for (const auto& [key, value] : p.numbers) c.scalar("@" + key, value);
  c.column("hostnames", p.hostnames);
  return c.text();
}

std::string provenance_digest(const Provenance& p) {
  return sha256_hex(kProvenanceTag + canonical_provenance(p));
}

std::string point_digest(const PointResult& p, const std::string& provenance_digest) {
  return sha256_hex(kPointTag + canonical_point(p) + token(provenance_digest));
}

void seal_point(PointResult& p, const Provenance& prov) {
  p.provenance_digest = provenance_digest(prov);
  p.digest = point_digest(p, p.provenance_digest);
}

}  // namespace minictx
