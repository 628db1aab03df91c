#include "io/point_record.hpp"

#include <yaml-cpp/yaml.h>

#include <vector>

#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "io/results_schema.hpp"

namespace minictx {
namespace {

namespace rt = schema::ring_timeline;

void quoted(YAML::Emitter& out, const std::string& s) { out << YAML::DoubleQuoted << s; }

template <class T>
void column(YAML::Emitter& out, const char* key, const std::vector<T>& values) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const T& v : values) out << v;
  out << YAML::EndSeq;
}

void string_column(YAML::Emitter& out, const char* key, const std::vector<std::string>& values) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& v : values) quoted(out, v);
  out << YAML::EndSeq;
}

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

// The columns ring steps and outer transfers share, as the HDF5 layout names them.
template <class Record>
void shared_columns(YAML::Emitter& out, const std::vector<Record>& records) {
  column(out, rt::rank, pick(records, &Record::rank));
  column(out, rt::layer, pick(records, &Record::layer));
  string_column(out, rt::pass, pass_names(records));
  column(out, rt::round, pick(records, &Record::round));
  column(out, rt::transfer_posted, pick(records, &Record::transfer_posted));
  column(out, rt::transfer_done, pick(records, &Record::transfer_done));
}

void emit_timeline(YAML::Emitter& out, const RingTimelineResult& t) {
  out << YAML::Key << rt::group << YAML::Value << YAML::BeginMap;
  out << YAML::Key << rt::iteration << YAML::Value << t.iteration;
  out << YAML::Key << rt::clock << YAML::Value;
  quoted(out, t.clock);
  shared_columns(out, t.steps);
  column(out, rt::step, pick(t.steps, &RingStep::step));
  column(out, rt::source, pick(t.steps, &RingStep::source));
  column(out, rt::compute_start, pick(t.steps, &RingStep::compute_start));
  column(out, rt::compute_end, pick(t.steps, &RingStep::compute_end));
  out << YAML::Key << rt::outer << YAML::Value << YAML::BeginMap;
  shared_columns(out, t.outer);
  std::vector<std::string> carries;
  carries.reserve(t.outer.size());
  for (const OuterTransfer& o : t.outer) carries.emplace_back(to_string(o.carries));
  string_column(out, rt::carries, carries);
  out << YAML::EndMap << YAML::EndMap;
}

void emit_verification(YAML::Emitter& out, const std::vector<VerifyRow>& rows) {
  out << YAML::Key << "verification" << YAML::Value << YAML::BeginMap;
  string_column(out, "tensor", pick(rows, &VerifyRow::tensor));
  for (const VerifyColumn& c : verify_columns()) column(out, c.name, pick(rows, c.member));
  std::vector<int> pass;
  pass.reserve(rows.size());
  for (const VerifyRow& r : rows) pass.push_back(r.pass ? 1 : 0);
  column(out, "pass", pass);
  out << YAML::EndMap;
}

template <class T>
std::vector<T> read_column(const YAML::Node& parent, const char* key) {
  const YAML::Node node = parent[key];
  if (!node.IsSequence()) fail(std::string("'") + key + "' is not a list");
  return node.as<std::vector<T>>();
}

template <class Record>
std::vector<Record> read_shared_columns(const YAML::Node& g, const std::string& where) {
  const auto rank = read_column<int>(g, rt::rank), layer = read_column<int>(g, rt::layer),
             round = read_column<int>(g, rt::round);
  const auto pass = read_column<std::string>(g, rt::pass);
  const auto posted = read_column<double>(g, rt::transfer_posted),
             done = read_column<double>(g, rt::transfer_done);
  const size_t n = rank.size();
  for (size_t len : {layer.size(), round.size(), pass.size(), posted.size(), done.size()})
    if (len != n) fail("the " + where + " columns differ in length");
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

RingTimelineResult read_timeline(const YAML::Node& g) {
  RingTimelineResult t;
  t.iteration = g[rt::iteration].as<int64_t>();
  t.clock = g[rt::clock].as<std::string>();
  t.steps = read_shared_columns<RingStep>(g, rt::group);
  const auto step = read_column<int>(g, rt::step), source = read_column<int>(g, rt::source);
  const auto start = read_column<double>(g, rt::compute_start), end = read_column<double>(g, rt::compute_end);
  for (size_t len : {step.size(), source.size(), start.size(), end.size()})
    if (len != t.steps.size()) fail("the ring_timeline columns differ in length");
  for (size_t i = 0; i < t.steps.size(); ++i) {
    t.steps[i].step = step[i];
    t.steps[i].source = source[i];
    t.steps[i].compute_start = start[i];
    t.steps[i].compute_end = end[i];
  }
  const YAML::Node outer = g[rt::outer];
  t.outer = read_shared_columns<OuterTransfer>(outer, "ring_timeline/outer");
  const auto carries = read_column<std::string>(outer, rt::carries);
  if (carries.size() != t.outer.size()) fail("the ring_timeline/outer columns differ in length");
  for (size_t i = 0; i < t.outer.size(); ++i)
    if (!parse_enum(carries[i], t.outer[i].carries))
      fail("ring_timeline/outer carries '" + carries[i] + "' is neither block nor sums");
  return t;
}

std::vector<VerifyRow> read_verification(const YAML::Node& g) {
  const auto tensor = read_column<std::string>(g, "tensor");
  const auto pass = read_column<int>(g, "pass");
  const size_t n = tensor.size();
  if (pass.size() != n) fail("the verification columns differ in length");
  std::vector<VerifyRow> rows(n);
  for (size_t i = 0; i < n; ++i) {
    rows[i].tensor = tensor[i];
    rows[i].pass = pass[i] != 0;
  }
  for (const VerifyColumn& c : verify_columns()) {
    const auto values = read_column<double>(g, c.name);
    if (values.size() != n) fail("the verification columns differ in length");
    for (size_t i = 0; i < n; ++i) rows[i].*c.member = values[i];
  }
  return rows;
}

}  // namespace

std::string encode_point(const PointResult& p, int64_t index) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value;
  quoted(out, p.name);
  out << YAML::Key << "index" << YAML::Value << index;
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"deck", &p.deck},
                                   {"verdict", &p.verdict},
                                   {"reference", &p.reference},
                                   {"skipped_reason", &p.skipped_reason},
                                   {"provenance_digest", &p.provenance_digest},
                                   {"digest", &p.digest}}) {
    out << YAML::Key << key << YAML::Value;
    quoted(out, *value);
  }
  out << YAML::Key << "iters" << YAML::Value << p.iters << YAML::Key << "ranks" << YAML::Value << p.ranks;
  out << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
  for (const auto& [key, value] : p.labels) {
    out << YAML::Key;
    quoted(out, key);
    out << YAML::Value;
    quoted(out, value);
  }
  out << YAML::EndMap << YAML::Key << "metrics" << YAML::Value << YAML::BeginMap;
  for (const auto& [key, value] : p.metrics) {
    out << YAML::Key;
    quoted(out, key);
    out << YAML::Value << value;
  }
  out << YAML::EndMap;
  column(out, "iter_seconds", p.iter_seconds);
  out << YAML::Key << "phase_seconds" << YAML::Value << YAML::BeginMap;
  for (const auto& [phase, seconds] : p.phase_seconds) {
    out << YAML::Key;
    quoted(out, phase);
    out << YAML::Value << YAML::Flow << seconds;
  }
  out << YAML::EndMap;
  column(out, "peak_memory_bytes", p.peak_memory_bytes);
  column(out, "bytes_sent_intra", p.bytes_sent_intra);
  column(out, "bytes_sent_inter", p.bytes_sent_inter);
  emit_verification(out, p.verification);
  emit_timeline(out, p.ring_timeline);
  out << YAML::EndMap;
  if (!out.good()) fail("point '" + p.name + "' cannot be written as YAML: " + out.GetLastError());
  return out.c_str();
}

std::pair<int64_t, PointResult> decode_point(const std::string& yaml) {
  try {
    const YAML::Node g = YAML::Load(yaml);
    if (!g.IsMap()) fail("the record is not a map");
    PointResult p;
    p.name = g["name"].as<std::string>();
    const int64_t index = g["index"].as<int64_t>();
    p.deck = g["deck"].as<std::string>();
    p.verdict = g["verdict"].as<std::string>();
    p.reference = g["reference"].as<std::string>();
    p.skipped_reason = g["skipped_reason"].as<std::string>();
    for (auto [key, digest] : {std::pair{"provenance_digest", &p.provenance_digest}, {"digest", &p.digest}})
      if (g[key]) *digest = g[key].as<std::string>();
    p.iters = g["iters"].as<int>();
    p.ranks = g["ranks"].as<int>();
    if (p.iters < 0 || p.ranks < 0) fail("iters or ranks is negative");
    p.labels = g["labels"].as<std::map<std::string, std::string>>();
    p.metrics = g["metrics"].as<std::map<std::string, double>>();
    p.iter_seconds = read_column<double>(g, "iter_seconds");
    if (!p.iter_seconds.empty() && p.iter_seconds.size() != size_t(p.iters) * size_t(p.ranks))
      fail("iter_seconds is not iters x ranks");
    p.phase_seconds = g["phase_seconds"].as<std::map<std::string, std::vector<double>>>();
    p.peak_memory_bytes = read_column<double>(g, "peak_memory_bytes");
    p.bytes_sent_intra = read_column<double>(g, "bytes_sent_intra");
    p.bytes_sent_inter = read_column<double>(g, "bytes_sent_inter");
    for (const auto* per_rank : {&p.peak_memory_bytes, &p.bytes_sent_intra, &p.bytes_sent_inter})
      if (!per_rank->empty() && per_rank->size() != size_t(p.ranks))
        fail("a per-rank column does not have ranks values");
    p.verification = read_verification(g["verification"]);
    p.ring_timeline = read_timeline(g[rt::group]);
    return {index, std::move(p)};
  } catch (const YAML::Exception& e) {
    fail(std::string("not a point record: ") + e.what());
  }
}

}  // namespace minictx
