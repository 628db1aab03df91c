// The assessment as JSON (docs/benchmark.md, "The report's JSON"), written through
// nlohmann-json: the document tools/check-submission.py writes too, for a program to
// compare or gate on.
#include <nlohmann/json.hpp>

#include "submission/submission_report.hpp"

namespace minictx {
namespace {

using nlohmann::json;

json findings_json(const PointAudit& a) {
  json out = json::array();
  for (const Finding& f : a.findings) out.push_back({{"field", f.field}, {"detail", f.detail}});
  return out;
}

json run_json(const AssessedRun& a) {
  json not_allowed = json::array(), allowed = json::array();
  for (const Deviation& d : a.deviations)
    (d.rule.allowed ? allowed : not_allowed).push_back(d.difference.key);
  return {{"run", a.run.where()},
          {"file", a.run.file->path},
          {"point", a.run.point->name},
          {"class", a.run.class_name},
          {"fom", a.run.audit.fom},
          {"devices", a.run.point->ranks},
          {"verification", a.verification},
          {"status", to_string(a.status)},
          {"why", a.why},
          {"inconsistent", findings_json(a.run.audit)},
          {"not_allowed", not_allowed},
          {"allowed", allowed},
          {"digest", a.run.point->digest}};
}

json verification_json(const AssessedVerification& v) {
  return {{"run", v.run.where()},
          {"class", v.run.class_name},
          {"verdict", v.run.audit.verdict},
          {"reference", v.run.point->reference},
          {"consistent", v.run.audit.findings.empty()},
          {"inconsistent", findings_json(v.run.audit)},
          {"verifies", v.verifies}};
}

json class_json(const ClassEntry& e, const std::vector<AssessedRun>& runs) {
  json launches = json::array();
  for (size_t i : e.launches) launches.push_back(runs[i].run.where());
  return {{"class", e.class_name},
          {"configuration", e.configuration},
          {"launches", launches},
          {"copies", e.copies},
          {"fom_median", e.median},
          {"fom_min", e.min},
          {"fom_max", e.max},
          {"spread", e.spread},
          {"spread_flagged", e.spread_flagged},
          {"status", to_string(e.status)},
          {"why", e.why}};
}

}  // namespace

std::string submission_json(const Submission& s) {
  json doc = {{"format", "minictx-submission-assessment"},
              {"version", 1},
              {"status", to_string(s.status)},
              {"exit_code", exit_code(s.status)},
              {"why", s.why},
              {"required_launches", kRequiredLaunches},
              {"spread_bound", kSpreadBound}};
  doc["classes"] = json::array();
  for (const ClassEntry& e : s.classes) doc["classes"].push_back(class_json(e, s.runs));
  doc["runs"] = json::array();
  for (const AssessedRun& a : s.runs) doc["runs"].push_back(run_json(a));
  doc["verifications"] = json::array();
  for (const AssessedVerification& v : s.verifications) doc["verifications"].push_back(verification_json(v));
  doc["left_out"] = json::array();
  for (const LeftOut& l : s.left_out) doc["left_out"].push_back({{"run", l.where}, {"why", l.why}});
  // A string from a file that is not UTF-8 (a hostname, a flag) is written with U+FFFD, not refused.
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace minictx
