#include "io/point_json.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "io/results_schema.hpp"

namespace minictx {
namespace {

namespace rt = schema::ring_timeline;

json numbers(const std::vector<double>& values) {
  json out = json::array();
  for (double v : values) out.push_back(json_number(v));
  return out;
}

template <class Record, class Field>
json column(const std::vector<Record>& records, Field field) {
  json out = json::array();
  for (const Record& r : records) {
    if constexpr (std::is_same_v<std::decay_t<decltype(r.*field)>, double>)
      out.push_back(json_number(r.*field));
    else
      out.push_back(r.*field);
  }
  return out;
}

template <class Record>
json pass_column(const std::vector<Record>& records) {
  json out = json::array();
  for (const Record& r : records) out.push_back(to_string(r.pass));
  return out;
}

// The columns ring steps and outer transfers share.
template <class Record>
json shared_columns(const std::vector<Record>& records) {
  return {{rt::rank, column(records, &Record::rank)},
          {rt::layer, column(records, &Record::layer)},
          {rt::pass, pass_column(records)},
          {rt::round, column(records, &Record::round)},
          {rt::transfer_posted, column(records, &Record::transfer_posted)},
          {rt::transfer_done, column(records, &Record::transfer_done)}};
}

json timeline_json(const RingTimelineResult& t) {
  json out = shared_columns(t.steps);
  out[rt::iteration] = t.iteration;
  out[rt::clock] = t.clock;
  out[rt::step] = column(t.steps, &RingStep::step);
  out[rt::source] = column(t.steps, &RingStep::source);
  out[rt::compute_start] = column(t.steps, &RingStep::compute_start);
  out[rt::compute_end] = column(t.steps, &RingStep::compute_end);
  json outer = shared_columns(t.outer);
  outer[rt::carries] = json::array();
  for (const OuterTransfer& o : t.outer) outer[rt::carries].push_back(to_string(o.carries));
  out[rt::outer] = std::move(outer);
  if (!t.phases.empty())  // absent when not recorded, as in files from before phases were kept
    out[rt::phases] = {{rt::rank, column(t.phases, &PhaseRecord::rank)},
                       {rt::phase_iteration, column(t.phases, &PhaseRecord::iteration)},
                       {rt::phase, column(t.phases, &PhaseRecord::phase)},
                       {rt::start, column(t.phases, &PhaseRecord::start)},
                       {rt::end, column(t.phases, &PhaseRecord::end)}};
  return out;
}

json verification_json(const std::vector<VerifyRow>& rows) {
  json out = {{"tensor", column(rows, &VerifyRow::tensor)}, {"pass", json::array()}};
  for (const VerifyRow& r : rows) out["pass"].push_back(r.pass ? 1 : 0);
  for (const VerifyColumn& c : verify_columns()) out[c.name] = column(rows, c.member);
  return out;
}

// -- reading ----------------------------------------------------------------------------

const json& member(const json& object, const std::string& key) {
  if (!object.is_object()) fail("'" + key + "' is not in an object");
  const auto it = object.find(key);
  if (it == object.end()) fail("no '" + key + "'");
  return *it;
}

std::string text(const json& v, const std::string& what) {
  if (!v.is_string()) fail("'" + what + "' is not a string");
  return v.get<std::string>();
}

double number(const json& v, const std::string& what) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return HUGE_VAL;
    if (s == "-Infinity") return -HUGE_VAL;
  }
  fail("'" + what + "' is not a number");
}

int64_t integer(const json& v, const std::string& what) {
  if (v.is_number_integer() && (!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(INT64_MAX)))
    return v.get<int64_t>();
  fail("'" + what + "' is not an integer");
}

int small_integer(const json& v, const std::string& what) {
  const int64_t i = integer(v, what);
  if (i < std::numeric_limits<int>::min() || i > std::numeric_limits<int>::max())
    fail("'" + what + "' is out of range");
  return int(i);
}

const json& list(const json& object, const std::string& key) {
  const json& v = member(object, key);
  if (!v.is_array()) fail("'" + key + "' is not a list");
  return v;
}

std::vector<double> doubles(const json& object, const std::string& key) {
  std::vector<double> out;
  for (const json& v : list(object, key)) out.push_back(number(v, key));
  return out;
}

std::vector<int> integers(const json& object, const std::string& key) {
  std::vector<int> out;
  for (const json& v : list(object, key)) out.push_back(small_integer(v, key));
  return out;
}

std::vector<std::string> strings(const json& object, const std::string& key) {
  std::vector<std::string> out;
  for (const json& v : list(object, key)) out.push_back(text(v, key));
  return out;
}

void require_length(size_t length, size_t n, const std::string& where) {
  if (length != n) fail("the " + where + " columns differ in length");
}

template <class Record>
std::vector<Record> read_shared_columns(const json& g, const std::string& where) {
  const auto rank = integers(g, rt::rank), layer = integers(g, rt::layer), round = integers(g, rt::round);
  const auto pass = strings(g, rt::pass);
  const auto posted = doubles(g, rt::transfer_posted), done = doubles(g, rt::transfer_done);
  const size_t n = rank.size();
  for (size_t len : {layer.size(), round.size(), pass.size(), posted.size(), done.size()})
    require_length(len, n, where);
  std::vector<Record> records(n);
  for (size_t i = 0; i < n; ++i) {
    Record& r = records[i];
    if (!parse_enum(pass[i], r.pass)) fail(where + " pass '" + pass[i] + "' is not a pass");
    r.rank = rank[i];
    r.layer = layer[i];
    r.round = round[i];
    r.transfer_posted = posted[i];
    r.transfer_done = done[i];
  }
  return records;
}

std::vector<PhaseRecord> read_phase_records(const json& g) {
  const std::string where = std::string(rt::group) + "/" + rt::phases;
  const auto rank = integers(g, rt::rank), iteration = integers(g, rt::phase_iteration);
  const auto phase = strings(g, rt::phase);
  const auto start = doubles(g, rt::start), end = doubles(g, rt::end);
  for (size_t len : {iteration.size(), phase.size(), start.size(), end.size()})
    require_length(len, rank.size(), where);
  std::vector<PhaseRecord> records(rank.size());
  for (size_t i = 0; i < records.size(); ++i)
    records[i] = {rank[i], iteration[i], phase[i], start[i], end[i]};
  return records;
}

// A file written before the timeline existed reads as "not recorded"; one written before
// its outer subgroup, as no outer transfers; one without phases, as none kept.
RingTimelineResult read_timeline(const json& point) {
  RingTimelineResult t;
  if (!point.contains(rt::group)) return t;
  const json& g = member(point, rt::group);
  t.iteration = integer(member(g, rt::iteration), rt::iteration);
  t.clock = text(member(g, rt::clock), rt::clock);
  t.steps = read_shared_columns<RingStep>(g, rt::group);
  const auto step = integers(g, rt::step), source = integers(g, rt::source);
  const auto start = doubles(g, rt::compute_start), end = doubles(g, rt::compute_end);
  for (size_t len : {step.size(), source.size(), start.size(), end.size()})
    require_length(len, t.steps.size(), rt::group);
  for (size_t i = 0; i < t.steps.size(); ++i) {
    t.steps[i].step = step[i];
    t.steps[i].source = source[i];
    t.steps[i].compute_start = start[i];
    t.steps[i].compute_end = end[i];
  }
  if (g.contains(rt::phases)) t.phases = read_phase_records(member(g, rt::phases));
  if (!g.contains(rt::outer)) return t;
  const json& outer = member(g, rt::outer);
  t.outer = read_shared_columns<OuterTransfer>(outer, "ring_timeline/outer");
  const auto carries = strings(outer, rt::carries);
  require_length(carries.size(), t.outer.size(), "ring_timeline/outer");
  for (size_t i = 0; i < t.outer.size(); ++i)
    if (!parse_enum(carries[i], t.outer[i].carries))
      fail("ring_timeline/outer carries '" + carries[i] + "' is neither block nor sums");
  return t;
}

// Columns added after the first files were written read as NaN from those files.
std::vector<VerifyRow> read_verification(const json& g) {
  const auto tensor = strings(g, "tensor");
  const auto pass = integers(g, "pass");
  const size_t n = tensor.size();
  require_length(pass.size(), n, "verification");
  std::vector<VerifyRow> rows(n);
  for (size_t i = 0; i < n; ++i) {
    rows[i].tensor = tensor[i];
    rows[i].pass = pass[i] != 0;
  }
  for (const VerifyColumn& c : verify_columns()) {
    if (c.added && !g.contains(c.name)) continue;
    const auto values = doubles(g, c.name);
    require_length(values.size(), n, "verification");
    for (size_t i = 0; i < n; ++i) rows[i].*c.member = values[i];
  }
  return rows;
}

// iters x ranks values: a list of rows (iters lists of ranks values), or one flat list as
// older files' appended records hold them; empty for a point without timings.
std::vector<double> read_iter_seconds(const json& g, const PointResult& p) {
  const json& rows = list(g, "iter_seconds");
  std::vector<double> values;
  for (const json& row : rows) {
    if (!row.is_array()) {
      values.push_back(number(row, "iter_seconds"));
      continue;
    }
    if (row.size() != size_t(p.ranks)) fail("an iter_seconds row does not have ranks values");
    for (const json& v : row) values.push_back(number(v, "iter_seconds"));
  }
  if (!values.empty() && values.size() != size_t(p.iters) * size_t(p.ranks))
    fail("iter_seconds is not iters x ranks");
  for (double s : values)
    if (!(s >= 0) || !std::isfinite(s)) {
      char shown[32];
      std::snprintf(shown, sizeof shown, "%g", s);
      fail(std::string("iter_seconds holds ") + shown + ", which is not the time of an iteration");
    }
  return values;
}

std::map<std::string, std::vector<double>> read_phases(const json& g) {
  const json& phases = member(g, "phase_seconds");
  if (!phases.is_object()) fail("'phase_seconds' is not an object");
  std::map<std::string, std::vector<double>> out;
  for (const auto& [phase, seconds] : phases.items()) {
    if (phase == schema::unit::attribute && seconds.is_string()) continue;  // the group's own unit
    out[phase] = doubles(phases, phase);
  }
  return out;
}

}  // namespace

json json_number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
}

json point_json(const PointResult& p, int64_t index) {
  json j = {{"name", p.name},
            {"index", index},
            {"deck", p.deck},
            {"verdict", p.verdict},
            {"reference", p.reference},
            {"skipped_reason", p.skipped_reason},
            {"provenance_digest", p.provenance_digest},
            {"digest", p.digest},
            {"iters", int64_t(p.iters)},
            {"ranks", int64_t(p.ranks)},
            {"labels", p.labels},
            {"metrics", json::object()},
            {"iter_seconds", json::array()},
            {"phase_seconds", {{schema::unit::attribute, schema::unit::seconds_summed}}},
            {"peak_memory_bytes", numbers(p.peak_memory_bytes)},
            {"bytes_sent_intra", numbers(p.bytes_sent_intra)},
            {"bytes_sent_inter", numbers(p.bytes_sent_inter)},
            {"verification", verification_json(p.verification)},
            {rt::group, timeline_json(p.ring_timeline)}};
  for (const auto& [key, value] : p.metrics) j["metrics"][key] = json_number(value);
  for (size_t at = 0; p.ranks > 0 && at < p.iter_seconds.size(); at += size_t(p.ranks))
    j["iter_seconds"].push_back(
        numbers({p.iter_seconds.begin() + long(at), p.iter_seconds.begin() + long(at + size_t(p.ranks))}));
  for (const auto& [phase, seconds] : p.phase_seconds) j["phase_seconds"][phase] = numbers(seconds);
  return j;
}

std::pair<int64_t, PointResult> point_from_json(const json& g) {
  if (!g.is_object()) fail("the point is not an object");
  PointResult p;
  p.name = text(member(g, "name"), "name");
  const int64_t index = integer(member(g, "index"), "index");
  p.deck = text(member(g, "deck"), "deck");
  p.verdict = text(member(g, "verdict"), "verdict");
  p.reference = text(member(g, "reference"), "reference");
  p.skipped_reason = text(member(g, "skipped_reason"), "skipped_reason");
  // Files written before digests have none.
  for (auto [key, digest] : {std::pair{"provenance_digest", &p.provenance_digest}, {"digest", &p.digest}})
    if (g.contains(key)) *digest = text(g.at(key), key);
  p.iters = small_integer(member(g, "iters"), "iters");
  p.ranks = small_integer(member(g, "ranks"), "ranks");
  if (p.iters < 0 || p.ranks < 0) fail("iters or ranks is negative");
  for (const auto& [key, value] : member(g, "labels").items()) p.labels[key] = text(value, "labels/" + key);
  for (const auto& [key, value] : member(g, "metrics").items())
    p.metrics[key] = number(value, "metrics/" + key);
  p.iter_seconds = read_iter_seconds(g, p);
  p.phase_seconds = read_phases(g);
  p.peak_memory_bytes = doubles(g, "peak_memory_bytes");
  p.bytes_sent_intra = doubles(g, "bytes_sent_intra");
  p.bytes_sent_inter = doubles(g, "bytes_sent_inter");
  for (const auto* per_rank : {&p.peak_memory_bytes, &p.bytes_sent_intra, &p.bytes_sent_inter})
    if (!per_rank->empty() && per_rank->size() != size_t(p.ranks))
      fail("a per-rank column does not have ranks values");
  p.verification = read_verification(member(g, "verification"));
  p.ring_timeline = read_timeline(g);
  return {index, std::move(p)};
}

Provenance provenance_from_json(const json& j) {
  Provenance prov;
  if (!j.is_object()) fail("the provenance is not an object");
  for (const auto& [key, value] : j.items()) {
    if (key == "hostnames")
      prov.hostnames = strings(j, key);
    else if (value.is_string())
      prov.text[key] = value.get<std::string>();
    else
      prov.numbers[key] = number(value, "provenance attribute '" + key + "'");
  }
  return prov;
}

std::string json_line(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json parse_json(const std::string& text, int max_depth) {
  try {
    return json::parse(text, [max_depth](int depth, json::parse_event_t, json&) {
      if (depth > max_depth) fail("nested deeper than " + std::to_string(max_depth) + " levels");
      return true;
    });
  } catch (const json::exception& e) {
    fail(std::string("not JSON: ") + e.what());
  }
}

}  // namespace minictx
