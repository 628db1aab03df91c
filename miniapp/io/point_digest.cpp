#include "io/point_digest.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
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
  // A 1-D dataset (or one of `shape`) of each record's `value(record)`: an int64_t, a
  // double or a string, as the type the file stores it in reads back.
  template <class Record, class Value>
  void column(const std::string& path, const std::vector<Record>& records, Value value,
              std::vector<uint64_t> shape = {}) {
    using V = std::decay_t<decltype(value(std::declval<const Record&>()))>;
    if (shape.empty()) shape = {records.size()};
    std::string shape_text, body;
    for (uint64_t d : shape) shape_text += (shape_text.empty() ? "" : "x") + std::to_string(d);
    for (const Record& r : records) body += token(value_text(value(r)));
    add(path, type_name(V()), shape_text, body);
  }
  template <class T>
  void column(const std::string& path, const std::vector<T>& values, std::vector<uint64_t> shape = {}) {
    column(
        path, values, [](const T& v) { return v; }, std::move(shape));
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

// The columns ring steps and outer transfers share, under `group/` (int32 in the file).
template <class Record>
void shared_columns(Canon& c, const std::string& group, const std::vector<Record>& records) {
  c.column(group + rt::rank, records, [](const Record& r) { return int64_t(r.rank); });
  c.column(group + rt::layer, records, [](const Record& r) { return int64_t(r.layer); });
  c.column(group + rt::pass, records, [](const Record& r) { return std::string(to_string(r.pass)); });
  c.column(group + rt::round, records, [](const Record& r) { return int64_t(r.round); });
  c.column(group + rt::transfer_posted, records, [](const Record& r) { return r.transfer_posted; });
  c.column(group + rt::transfer_done, records, [](const Record& r) { return r.transfer_done; });
}

void ring_timeline(Canon& c, const RingTimelineResult& t) {
  const std::string g = std::string(rt::group) + "/";
  c.scalar(std::string(rt::group) + "@" + rt::iteration, t.iteration);
  c.scalar(std::string(rt::group) + "@" + rt::clock, t.clock);
  shared_columns(c, g, t.steps);
  c.column(g + rt::step, t.steps, [](const RingStep& s) { return int64_t(s.step); });
  c.column(g + rt::source, t.steps, [](const RingStep& s) { return int64_t(s.source); });
  c.column(g + rt::compute_start, t.steps, [](const RingStep& s) { return s.compute_start; });
  c.column(g + rt::compute_end, t.steps, [](const RingStep& s) { return s.compute_end; });
  const std::string o = g + rt::outer + "/";
  shared_columns(c, o, t.outer);
  c.column(o + rt::carries, t.outer,
           [](const OuterTransfer& x) { return std::string(to_string(x.carries)); });
  if (t.phases.empty()) return;  // the subgroup is written only where phases were recorded
  const std::string ph = g + rt::phases + "/";
  c.column(ph + rt::rank, t.phases, [](const PhaseRecord& r) { return int64_t(r.rank); });
  c.column(ph + rt::phase_iteration, t.phases, [](const PhaseRecord& r) { return int64_t(r.iteration); });
  c.column(ph + rt::phase, t.phases, [](const PhaseRecord& r) { return r.phase; });
  c.column(ph + rt::start, t.phases, [](const PhaseRecord& r) { return r.start; });
  c.column(ph + rt::end, t.phases, [](const PhaseRecord& r) { return r.end; });
}

void verification(Canon& c, const std::vector<VerifyRow>& rows) {
  c.column("verification/tensor", rows, [](const VerifyRow& r) { return r.tensor; });
  for (const VerifyColumn& col : verify_columns())
    c.column(std::string("verification/") + col.name, rows,
             [&](const VerifyRow& r) { return r.*col.member; });
  c.column("verification/pass", rows, [](const VerifyRow& r) { return int64_t(r.pass ? 1 : 0); });
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
