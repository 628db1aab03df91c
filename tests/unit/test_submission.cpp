// The submission report's building blocks: the digests of a point written and read back,
// the audit of a point (every edit it must see), and the resolved class decks that
// tools/check-submission.py reads from inputs/benchmark/resolved/.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "bench/labels.hpp"
#include "bench/metrics.hpp"
#include "config/class_decks.hpp"
#include "config/deck.hpp"
#include "device/device.hpp"
#include "driver/verification.hpp"
#include "installed_backends.hpp"
#include "io/point_digest.hpp"
#include "io/results_reader.hpp"
#include "io/results_schema.hpp"
#include "io/results_writer.hpp"
#include "submission/assessment.hpp"
#include "submission/point_audit.hpp"

namespace minictx {
namespace {

namespace fs = std::filesystem;
namespace mk = schema::metric_key;

// Resolving a deck asks what each device kind can do, as in the program.
struct InstalledDevices : ::testing::Environment {
  void SetUp() override { install_deck_devices(); }
};
const auto* const installed_devices = ::testing::AddGlobalTestEnvironment(new InstalledDevices);

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The tiny twin's measurement or verification as a run would record it on one rank.
struct Recorded {
  Provenance prov;
  PointResult point;
};

Recorded recorded_run(const std::string& role) {
  Recorded r;
  const std::string deck_yaml = *resolved_class_deck("tiny-twin", role);
  const RunConfig cfg = Deck::from_string(deck_yaml, "resolved").resolve();
  r.prov.text = {{"deck", deck_yaml}, {"version", "0.9.0"}, {"device", "kokkos"}};
  r.prov.numbers = {{"world_size", 1}, {"ranks_per_node", 1}, {"nodes", 1}};
  r.prov.hostnames = {"node-a"};
  PointResult& p = r.point;
  p.name = "point_0000";
  p.deck = deck_yaml;
  p.iters = cfg.run.iters;
  p.ranks = 1;
  for (int i = 0; i < p.iters; ++i) p.iter_seconds.push_back(0.5 + 0.1 * i);
  for (const std::string& phase : phase_names()) p.phase_seconds[phase] = {0.1};
  p.peak_memory_bytes = {3.0e8};
  p.bytes_sent_intra = {0};
  p.bytes_sent_inter = {0};
  RunConfig with_peak = cfg;
  with_peak.machine.peak_tflops = 0.07;
  p.metrics = derive_metrics(with_peak, p);
  p.labels = point_labels(cfg, Topology{1, 1});
  p.labels[schema::label_key::gpu] = "measured";
  p.verdict = "UNVERIFIED";
  if (cfg.run.verify) {
    p.verdict = "VALID";
    p.reference = "fp64";
    for (const std::string& tensor : verification_tensor_names(cfg)) {
      VerifyRow row;
      row.tensor = tensor;
      row.max_rel_err = 1e-6;
      row.tolerance = 1e-4;
      row.pass = true;
      p.verification.push_back(row);
    }
  }
  seal_point(p, r.prov);
  return r;
}

std::vector<std::string> fields(const PointAudit& a) {
  std::vector<std::string> out;
  for (const Finding& f : a.findings) out.push_back(f.field);
  return out;
}

bool names(const PointAudit& a, const std::string& field) {
  const auto f = fields(a);
  return std::find(f.begin(), f.end(), field) != f.end();
}

TEST(PointDigest, SameForThePointAsWrittenAndAsReadBack) {
  const fs::path dir = fs::temp_directory_path() / ("minictx_digest_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "r.h5").string();
  Recorded r = recorded_run("verification");
  PointResult unsealed = r.point;
  unsealed.digest.clear();
  unsealed.provenance_digest.clear();
  {
    ResultsWriter writer(path, r.prov, OnExisting::refuse);
    writer.add_point(unsealed);  // appended after the HDF5 part: read back from its record
    PointResult second = unsealed;
    second.name = "point_0001";
    writer.add_point(second);
    const ResultsFile appended = read_results(path);
    ASSERT_EQ(appended.points.size(), 2u);
    EXPECT_EQ(appended.points[0].digest, r.point.digest);
    writer.finish();  // now in the HDF5 part
  }
  const ResultsFile back = read_results(path);
  ASSERT_EQ(back.points.size(), 2u);
  for (const PointResult& p : back.points) {
    EXPECT_EQ(p.provenance_digest, provenance_digest(r.prov));
    EXPECT_EQ(p.digest, point_digest(p, p.provenance_digest));
  }
  EXPECT_EQ(back.points[0].digest, r.point.digest);
  // Neither the name nor the place in the file is content: a copied point keeps its digest.
  EXPECT_EQ(back.points[1].digest, back.points[0].digest);
  fs::remove_all(dir);
}

TEST(PointDigest, EveryValueCounts) {
  const Recorded r = recorded_run("measurement");
  const std::string digest = point_digest(r.point, r.point.provenance_digest);
  PointResult p = r.point;
  p.iter_seconds[0] = std::nextafter(p.iter_seconds[0], 1.0);
  EXPECT_NE(point_digest(p, p.provenance_digest), digest);
  p = r.point;
  p.labels["gpu"] = "H100";
  EXPECT_NE(point_digest(p, p.provenance_digest), digest);
  p = r.point;
  p.verdict = "VALID";
  EXPECT_NE(point_digest(p, p.provenance_digest), digest);
  Provenance prov = r.prov;
  prov.text["gpu_name"] = "H100";
  EXPECT_NE(provenance_digest(prov), r.point.provenance_digest);
}

TEST(PointAudit, AnHonestPointIsConsistent) {
  for (const char* role : {"measurement", "verification"}) {
    const Recorded r = recorded_run(role);
    const PointAudit a = audit_point(r.point, r.prov);
    EXPECT_TRUE(a.findings.empty()) << role << ": " << a.findings.front().field << " "
                                    << a.findings.front().detail;
    EXPECT_NEAR(a.fom, r.point.metrics.at(mk::tokens_per_s_per_device), 1e-9);
  }
}

// Each edit is named by its field even when the digest is made again over it.
TEST(PointAudit, NamesTheFieldOfEachEdit) {
  const auto edited = [](const char* role, const std::function<void(Recorded&)>& edit) {
    Recorded r = recorded_run(role);
    edit(r);
    seal_point(r.point, r.prov);
    return audit_point(r.point, r.prov);
  };
  EXPECT_TRUE(
      names(edited("measurement", [](Recorded& r) { r.point.metrics[mk::tokens_per_s_per_device] = 9999; }),
            "metrics/tokens_per_s_per_device"));
  EXPECT_TRUE(
      names(edited("measurement", [](Recorded& r) { r.point.metrics.erase(mk::mfu); }), "metrics/mfu"));
  EXPECT_TRUE(names(edited("measurement",
                           [](Recorded& r) {
                             const auto at = r.point.deck.find("length: 2048");
                             r.point.deck.replace(at, 12, "length: 1024");
                           }),
                    "deck"));
  EXPECT_TRUE(names(edited("measurement", [](Recorded& r) { r.point.labels["seq_len"] = "4096"; }),
                    "labels/seq_len"));
  EXPECT_TRUE(
      names(edited("measurement", [](Recorded& r) { r.point.iter_seconds.pop_back(); }), "iter_seconds"));
  EXPECT_TRUE(
      names(edited("measurement", [](Recorded& r) { r.point.iter_seconds[0] = -1; }), "iter_seconds"));
  EXPECT_TRUE(names(edited("measurement", [](Recorded& r) { r.prov.numbers["world_size"] = 8; }),
                    "provenance/world_size"));
  EXPECT_TRUE(names(edited("measurement", [](Recorded& r) { r.prov.text["gpu_name"] = "NVIDIA H100"; }),
                    "provenance/gpu_name"));
  EXPECT_TRUE(names(edited("verification",
                           [](Recorded& r) {
                             for (VerifyRow& row : r.point.verification) row.max_rel_err = 1.0;
                           }),
                    "verification/pass"));
  const PointAudit failed = edited("verification", [](Recorded& r) {
    for (VerifyRow& row : r.point.verification) {
      row.max_rel_err = 1.0;
      row.pass = false;
    }
  });
  EXPECT_TRUE(names(failed, "verdict")) << "VALID over errors of 1.0";
  EXPECT_EQ(failed.verdict, "INVALID");
  EXPECT_TRUE(names(edited("verification", [](Recorded& r) { r.point.verification.pop_back(); }),
                    "verification/tensor"));
  EXPECT_TRUE(names(edited("verification", [](Recorded& r) { r.point.verification[2].tolerance = 1.0; }),
                    "verification/tolerance"));
  EXPECT_TRUE(
      names(edited("verification", [](Recorded& r) { r.point.reference = "single-device"; }), "reference"));
}

TEST(PointAudit, AnEditWithoutANewDigestIsNamedByTheDigest) {
  Recorded r = recorded_run("measurement");
  r.point.metrics[mk::loss] = 0.5;  // not recomputable: only the digest sees it
  EXPECT_EQ(fields(audit_point(r.point, r.prov)), std::vector<std::string>{"digest"});
  r = recorded_run("measurement");
  r.prov.text["cpu_model"] = "another CPU";
  EXPECT_EQ(fields(audit_point(r.point, r.prov)), std::vector<std::string>{"provenance_digest"});
  r = recorded_run("measurement");
  r.point.digest.clear();
  EXPECT_EQ(fields(audit_point(r.point, r.prov)), std::vector<std::string>{"digest"});
}

// A file that lost a label every table of a class run shows is named, not map::at.
TEST(Assessment, AClassRunWithoutItsWorldLabelIsInconsistentNamingIt) {
  Recorded r = recorded_run("measurement");
  r.point.labels.erase("world_size");
  seal_point(r.point, r.prov);
  const std::vector<SubmissionFile> files = {{"sent.h5", ResultsFile{r.prov, {r.point}, {}}}};
  const Submission s = assess_submission(files);
  ASSERT_EQ(s.runs.size(), 1u);
  EXPECT_EQ(s.runs[0].status, Status::inconsistent);
  EXPECT_TRUE(names(s.runs[0].run.audit, "labels/world_size"));
}

// tools/check-submission.py compares runs with these files; they are the compiled-in class
// decks resolved. MINICTX_WRITE_RESOLVED_CLASSES=1 writes them anew after a deck change.
TEST(ResolvedClassDecks, AreTheClassDecksResolved) {
  const fs::path dir = fs::path(MINICTX_SOURCE_DIR) / "inputs" / "benchmark" / "resolved";
  const bool write = std::getenv("MINICTX_WRITE_RESOLVED_CLASSES") != nullptr;
  for (const ClassDeck& d : class_decks()) {
    const std::string resolved = *resolved_class_deck(d.name, "measurement");
    const fs::path file = dir / (std::string(d.name) + ".yaml");
    if (write) std::ofstream(file, std::ios::binary) << resolved;
    EXPECT_EQ(slurp(file), resolved) << file << " is not class " << d.name
                                     << " resolved; MINICTX_WRITE_RESOLVED_CLASSES=1 rewrites it";
  }
}

}  // namespace
}  // namespace minictx
