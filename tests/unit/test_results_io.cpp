// The results file (writer, reader, crash-safety rules) and the report tables.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "core/single_line.hpp"
#include "io/array_dump.hpp"
#include "io/output_file.hpp"
#include "io/point_json.hpp"
#include "io/results_journal.hpp"
#include "io/results_reader.hpp"
#include "io/results_writer.hpp"
#include "report/compare.hpp"
#include "report/report.hpp"

namespace minictx {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

Provenance sample_provenance() {
  Provenance prov;
  prov.text = {{"git_sha", "abc123"},
               {"command_line", "minictx run inputs/ring.yaml --set a=1,b=2"},
               {"deck", "backend: ring\nseq_len: 4096\n"}};
  prov.numbers = {{"world_size", 2}, {"ranks_per_node", 2}, {"nodes", 1}};
  prov.hostnames = {"node-a", "node-b"};
  return prov;
}

// A point with every field filled.
PointResult full_point(const std::string& name) {
  PointResult p;
  p.name = name;
  p.deck = "backend: ring\nring_type: zigzag\n";
  p.labels = {{"backend", "ring"}, {"ring_type", "zigzag"}, {"mode", "attention"}, {"world_size", "2"},
              {"seq_len", "4096"}, {"batch", "2"},          {"fwd_only", "true"},  {"dtype", "fp32"}};
  p.metrics = {{"iters_per_s", 84.0192},
               {"latency_ms", 11.90199},
               {"tokens_per_s", 688283.3},
               {"tokens_per_s_per_device", 344141.6},
               {"tflops_per_device", 11.53},
               {"mfu", 0.425712},
               {"hfu", 0.5676},
               {"peak_memory_mb", 240.04},
               {"bytes_sent_intra_per_device", 3 * 1048576.0},
               {"bytes_sent_inter_per_device", 0.0}};
  p.iters = 3;
  p.ranks = 2;
  p.iter_seconds = {0.011, 0.012, 0.0105, 0.0125, 0.01, 0.1 / 3};
  p.phase_seconds = {{"attention", {0.02, 0.021}}, {"mlp", {0.005, 0.0051}}};
  p.peak_memory_bytes = {251699200, 251699300};
  p.bytes_sent_intra = {3145728, 3145728};
  p.bytes_sent_inter = {0, 0};
  p.verdict = "VALID";
  p.reference = "fp64";
  p.verification = {{"out", 1e-7, 2e-6, 3e-8, 1e-4, true, 1.5e-6, 4e-7, 2e-7},
                    {"dq, rank 1", 0.5, 0.2, 0.1, 1e-4, false, 0.15, 0.05, 0.04}};
  p.ring_timeline.iteration = 2;
  p.ring_timeline.clock = "host steady_clock";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  p.ring_timeline.steps = {{0, 0, WalkPass::forward, 0, 0, 0, 0.001, 0.002, 0.0009, 0.0025},
                           {0, 0, WalkPass::forward, 0, 1, 1, 0.003, 0.004, nan, nan},
                           {1, 1, WalkPass::recompute, 0, 1, 0, 0.0031, 0.0042, 0.003, 0.0045},
                           {1, 1, WalkPass::backward, 0, 0, 1, 0.005, 0.006, 0.0049, 0.0062}};
  p.ring_timeline.outer = {{0, 0, WalkPass::forward, 0, OuterCarries::block, 0.0008, 0.0041},
                           {1, 1, WalkPass::backward, 0, OuterCarries::sums, 0.0063, 0.0071}};
  p.ring_timeline.phases = {{0, 0, "attention_fwd", 0.0009, 0.0041},
                            {0, 0, "forward", 0.0001, 0.0048},
                            {1, 1, "backward", 0.0049, 0.0072}};
  return p;
}

PointResult skipped_point(const std::string& name) {
  PointResult p;
  p.name = name;
  p.deck = "backend: ulysses\n";
  p.labels = {{"backend", "ulysses"}, {"seq_len", "4096"}};
  p.iters = 5;
  p.ranks = 4;
  p.verdict = "UNVERIFIED";
  p.skipped_reason = "heads (6) not divisible by the Ulysses degree (4)";
  return p;
}

// A BurstAttention point as labelled by the runner (variant: the paper's name, which the
// backend gives; test_labels); tokens/s per device = 1000 x the causal MFU, the whole world's
// the world size times that; MPT's MFU (whole square) is twice the causal one.
PointResult burst_point(const std::string& model, int seq, int world, const std::string& variant,
                        double mfu) {
  PointResult p;
  p.labels = {{"backend", "burst"},
              {"variant", variant},
              {"model", model},
              {"seq_len", std::to_string(seq)},
              {"world_size", std::to_string(world)},
              {"gpu", "a100-80gb"}};
  p.metrics = {{"mfu", 2 * mfu},
               {"mfu_causal", mfu},
               {"tokens_per_s_per_device", 1000 * mfu},
               {"tokens_per_s", 1000 * mfu * world}};
  return p;
}

void expect_same(const PointResult& a, const PointResult& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.deck, b.deck);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.metrics, b.metrics);
  EXPECT_EQ(a.iters, b.iters);
  EXPECT_EQ(a.ranks, b.ranks);
  EXPECT_EQ(a.iter_seconds, b.iter_seconds);
  EXPECT_EQ(a.phase_seconds, b.phase_seconds);
  EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
  EXPECT_EQ(a.bytes_sent_intra, b.bytes_sent_intra);
  EXPECT_EQ(a.bytes_sent_inter, b.bytes_sent_inter);
  EXPECT_EQ(a.verdict, b.verdict);
  EXPECT_EQ(a.reference, b.reference);
  EXPECT_EQ(a.skipped_reason, b.skipped_reason);
  ASSERT_EQ(a.verification.size(), b.verification.size());
  for (size_t i = 0; i < a.verification.size(); ++i) {
    const VerifyRow& x = a.verification[i];
    const VerifyRow& y = b.verification[i];
    EXPECT_EQ(x.tensor, y.tensor);
    EXPECT_EQ(x.max_abs_err, y.max_abs_err);
    EXPECT_EQ(x.max_rel_err, y.max_rel_err);
    EXPECT_EQ(x.rmse, y.rmse);
    EXPECT_EQ(x.tolerance, y.tolerance);
    EXPECT_EQ(x.pass, y.pass);
    EXPECT_EQ(x.rms_rel_err, y.rms_rel_err);
    EXPECT_EQ(x.single_max_rel_err, y.single_max_rel_err);
    EXPECT_EQ(x.single_rms_rel_err, y.single_rms_rel_err);
  }
  EXPECT_EQ(a.ring_timeline.iteration, b.ring_timeline.iteration);
  EXPECT_EQ(a.ring_timeline.clock, b.ring_timeline.clock);
  ASSERT_EQ(a.ring_timeline.steps.size(), b.ring_timeline.steps.size());
  // NaN (a step without a transfer) must read back as NaN, which == cannot compare.
  const auto same = [](double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); };
  // What ring steps and outer transfers have in common.
  const auto same_shared = [&](const auto& x, const auto& y) {
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.layer, y.layer);
    EXPECT_EQ(x.pass, y.pass);
    EXPECT_EQ(x.round, y.round);
    return same(x.transfer_posted, y.transfer_posted) && same(x.transfer_done, y.transfer_done);
  };
  for (size_t i = 0; i < a.ring_timeline.steps.size(); ++i) {
    const RingStep& x = a.ring_timeline.steps[i];
    const RingStep& y = b.ring_timeline.steps[i];
    EXPECT_EQ(x.step, y.step);
    EXPECT_EQ(x.source, y.source);
    EXPECT_TRUE(same_shared(x, y) && same(x.compute_start, y.compute_start) &&
                same(x.compute_end, y.compute_end))
        << "ring step " << i;
  }
  ASSERT_EQ(a.ring_timeline.outer.size(), b.ring_timeline.outer.size());
  for (size_t i = 0; i < a.ring_timeline.outer.size(); ++i) {
    EXPECT_EQ(a.ring_timeline.outer[i].carries, b.ring_timeline.outer[i].carries);
    EXPECT_TRUE(same_shared(a.ring_timeline.outer[i], b.ring_timeline.outer[i])) << "outer transfer " << i;
  }
  ASSERT_EQ(a.ring_timeline.phases.size(), b.ring_timeline.phases.size());
  for (size_t i = 0; i < a.ring_timeline.phases.size(); ++i) {
    const PhaseRecord &x = a.ring_timeline.phases[i], &y = b.ring_timeline.phases[i];
    EXPECT_TRUE(x.rank == y.rank && x.iteration == y.iteration && x.phase == y.phase && x.start == y.start &&
                x.end == y.end)
        << "phase scope " << i;
  }
}

// Calls f, expects it to throw E, returns the message (which must be one line).
template <class E, class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    return what;
  }
  ADD_FAILURE() << "no exception";
  return "";
}

// A python3 that has h5py, or "".
std::string python_with_h5py() {
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    const std::string probe = std::string(candidate) + " -c 'import h5py' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return candidate;
  }
  return "";
}

class ResultsIo : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "minictx_io_XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    path_ = dir_ + "/results.h5";
    journal_ = path_ + ".journal";
  }
  void TearDown() override {
    // Every HDF5 object the code opened is closed again.
    EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
    fs::remove_all(dir_);
  }
  // The scratch files left in the directory (any process's).
  std::vector<std::string> scratch_files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().extension() == ".partial") names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  // A finished file of one point as minictx wrote it at format `version` (no journal then).
  void write_older_file(int64_t version) {
    {
      ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
      writer.add_point(full_point("point_0000"));
      writer.finish();
    }
    const hid_t f = H5Fopen(path_.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t attr = H5Aopen(f, "format_version", H5P_DEFAULT);
    EXPECT_GE(H5Awrite(attr, H5T_NATIVE_INT64, &version), 0);
    H5Aclose(attr);
    EXPECT_GE(H5Adelete(f, "journal_id"), 0);
    H5Fclose(f);
  }
  std::string dir_;
  std::string path_;
  std::string journal_;
};

// A damaged file's object name quoted in a warning or error: every character a terminal or
// a line reader breaks a line at becomes a space, ordinary UTF-8 (and the rest) stays.
TEST(SingleLine, KeepsADamagedNameOnOneLine) {
  const std::string damaged = std::string(
                                  "a\nb\rc\vd\fe\x1c"
                                  "f\x7fg\x01h") +
                              "\xc2\x85i\xe2\x80\xa8j\xe2\x80\xa9k";
  EXPECT_EQ(single_line(damaged), "a b c d e f g h i j k");
  EXPECT_EQ(single_line("S = 16384 \xc3\x97 D = 128 \xe2\x80\x94 ok \xc2"),
            "S = 16384 \xc3\x97 D = 128 \xe2\x80\x94 ok \xc2");
}

TEST_F(ResultsIo, RoundTripKeepsEveryFieldAndInsertionOrder) {
  // Insertion order differs from name order: the reader must follow `index`.
  std::vector<PointResult> written = {full_point("zeta"), skipped_point("alpha"), full_point("mid")};
  written[2].labels["note"] = "ünïcode, \"quoted\"";
  written[2].verification.clear();
  ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
  for (const PointResult& p : written) writer.add_point(p);
  ASSERT_EQ(writer.points().size(), 3u);
  EXPECT_TRUE(writer.has_point("alpha"));
  EXPECT_FALSE(writer.has_point("beta"));
  // As the sweep left them (appended after the HDF5 part, or in it), then all in the HDF5 part.
  for (bool finished : {false, true}) {
    if (finished) writer.finish();
    const ResultsFile file = read_results(path_);
    const Provenance expected = sample_provenance();
    EXPECT_EQ(file.provenance.text, expected.text);
    EXPECT_EQ(file.provenance.numbers, expected.numbers);
    EXPECT_EQ(file.provenance.hostnames, expected.hostnames);
    ASSERT_EQ(file.points.size(), written.size());
    for (size_t i = 0; i < written.size(); ++i) expect_same(file.points[i], written[i]);
    EXPECT_TRUE(file.unreadable.empty());
  }
  EXPECT_TRUE(scratch_files().empty());
}

TEST_F(ResultsIo, ASkippedSweepIsJournaledAtTheSameCostEachPoint) {
  // A skipped sweep of 2,000 points: each point writes its own record only, never the file.
  ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
  const ResultsWriter::Work start = writer.work();
  EXPECT_EQ(start.rewrites, 1u);  // the provenance, before the first point
  constexpr size_t n = 2000;
  uint64_t half_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i == n / 2) half_bytes = writer.work().bytes_written - start.bytes_written;
    char name[32];
    std::snprintf(name, sizeof name, "point_%05zu", i);
    writer.add_point(skipped_point(name));
  }
  const ResultsWriter::Work end = writer.work();
  EXPECT_EQ(end.rewrites, start.rewrites);
  EXPECT_EQ(end.appends, n);
  // The second half wrote what the first did: only the index grows a digit or so.
  const uint64_t appended = end.bytes_written - start.bytes_written, second_half = appended - half_bytes;
  EXPECT_GE(second_half, half_bytes);
  EXPECT_LE(second_half - half_bytes, n) << "bytes: more than two per point more";
  // About 900 bytes of keys and empty columns, and the two SHA-256 digests (about 170).
  EXPECT_LT(half_bytes / (n / 2), 1280u) << "bytes per skipped point";
  EXPECT_EQ(uint64_t(fs::file_size(journal_)), appended);
  const ResultsFile file = read_results(path_);
  ASSERT_EQ(file.points.size(), n);
  EXPECT_EQ(file.points[n - 1].name, "point_01999");
  EXPECT_EQ(file.points[n - 1].skipped_reason, skipped_point("x").skipped_reason);
  // Finishing writes them all into the file, once, and leaves no journal.
  writer.finish();
  EXPECT_EQ(writer.work().rewrites, start.rewrites + 1);
  EXPECT_FALSE(fs::exists(journal_));
  EXPECT_EQ(read_results(path_).points.size(), n);
}

TEST_F(ResultsIo, AFinishedFileIsOneOrdinaryHdf5FileWithEveryPoint) {
  ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
  writer.add_point(skipped_point("p0"));
  writer.add_point(full_point("p1"));
  writer.add_point(skipped_point("p2"));
  writer.finish();
  EXPECT_FALSE(fs::exists(journal_));
  const hid_t f = H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  haddr_t end = 0;
  EXPECT_GE(H5Fget_eoa(f, &end), 0);
  EXPECT_EQ(uint64_t(end), uint64_t(fs::file_size(path_)));  // nothing after the HDF5 part
  for (const char* name : {"points/p0", "points/p1", "points/p2"})
    EXPECT_GT(H5Lexists(f, name, H5P_DEFAULT), 0);
  H5Fclose(f);
  EXPECT_EQ(read_results(path_).points.size(), 3u);
}

TEST_F(ResultsIo, AJournalRecordCutShortIsNotReadAndADamagedOneIsNamed) {
  {
    ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
    for (const char* name : {"p0", "p1", "p2"}) writer.add_point(skipped_point(name));
  }  // killed: no finish
  const std::string whole = slurp(journal_);
  // Killed while appending p2: its record is cut short, and was never reported written.
  spit(journal_, whole.substr(0, whole.size() - 3));
  ResultsFile file = read_results(path_);
  ASSERT_EQ(file.points.size(), 2u);
  EXPECT_TRUE(file.unreadable.empty());
  // A byte of p1's record changed: p0 and p2 read, p1 is named unreadable.
  std::string damaged = whole;
  const size_t p1 = damaged.find("\"p1\"");
  ASSERT_NE(p1, std::string::npos);
  damaged[p1 + 1] = 'q';
  spit(journal_, damaged);
  file = read_results(path_);
  ASSERT_EQ(file.points.size(), 2u);
  EXPECT_EQ(file.points[0].name, "p0");
  EXPECT_EQ(file.points[1].name, "p2");
  ASSERT_EQ(file.unreadable.size(), 1u);
  EXPECT_NE(file.unreadable[0].find("journal record 2 unreadable: it fails its checksum"), std::string::npos)
      << file.unreadable[0];
}

TEST_F(ResultsIo, AVersionOneFileReads) {
  write_older_file(1);
  EXPECT_EQ(read_results(path_).points.size(), 1u);
}

// A file written before the timeline had its outer subgroup still reads, with no outer
// transfers and its ring steps intact.
TEST_F(ResultsIo, ATimelineWithoutOuterTransfersReads) {
  {
    ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
    writer.add_point(full_point("p0"));
    writer.finish();  // into the HDF5 part, where this test edits it
  }
  const hid_t f = H5Fopen(path_.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  EXPECT_GE(H5Ldelete(f, "points/p0/ring_timeline/outer", H5P_DEFAULT), 0);
  H5Fclose(f);
  const ResultsFile file = read_results(path_);
  ASSERT_EQ(file.points.size(), 1u);
  EXPECT_TRUE(file.points[0].ring_timeline.outer.empty());
  EXPECT_EQ(file.points[0].ring_timeline.steps.size(), full_point("p0").ring_timeline.steps.size());
}

TEST_F(ResultsIo, ProvenanceIsWrittenBeforeTheFirstPoint) {
  ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
  const ResultsFile file = read_results(path_);
  EXPECT_EQ(file.provenance.text, sample_provenance().text);
  EXPECT_TRUE(file.points.empty());
}

TEST_F(ResultsIo, RefusesToOverwriteAnExistingFile) {
  { ResultsWriter(path_, sample_provenance(), OnExisting::refuse).add_point(full_point("p0")); }
  const std::string before = slurp(path_);
  const std::string msg =
      error_of<InputError>([&] { ResultsWriter(path_, Provenance{}, OnExisting::refuse); });
  EXPECT_NE(msg.find(path_), std::string::npos) << msg;
  EXPECT_NE(msg.find("--force"), std::string::npos) << msg;
  EXPECT_EQ(slurp(path_), before);
}

TEST_F(ResultsIo, ResumeKeepsTheExistingPoints) {
  {
    ResultsWriter first(path_, sample_provenance(), OnExisting::refuse);
    first.add_point(full_point("p0"));
    first.add_point(skipped_point("p1"));
  }
  ResultsWriter resumed(path_, sample_provenance(), OnExisting::resume);
  ASSERT_EQ(resumed.points().size(), 2u);
  EXPECT_TRUE(resumed.has_point("p0"));
  EXPECT_TRUE(resumed.has_point("p1"));
  resumed.add_point(full_point("p2"));
  const ResultsFile file = read_results(path_);
  ASSERT_EQ(file.points.size(), 3u);
  expect_same(file.points[0], full_point("p0"));
  expect_same(file.points[1], skipped_point("p1"));
  expect_same(file.points[2], full_point("p2"));
  EXPECT_EQ(file.provenance.numbers.at("resumed_points"), 2.0);
}

TEST_F(ResultsIo, ResumeWithoutAFileStartsFresh) {
  ResultsWriter writer(path_, sample_provenance(), OnExisting::resume);
  EXPECT_TRUE(writer.points().empty());
  EXPECT_EQ(read_results(path_).provenance.numbers, sample_provenance().numbers);
}

TEST_F(ResultsIo, ResumeNeverReplacesAForeignFile) {
  spit(path_, "not results\n");
  error_of<Error>([&] { ResultsWriter(path_, Provenance{}, OnExisting::resume); });
  EXPECT_EQ(slurp(path_), "not results\n");
}

TEST_F(ResultsIo, AnotherProcessesScratchFileIsLeftAlone) {
  // A killed job's scratch, or a running job's: either way not this writer's to touch.
  const std::string other = path_ + ".otherhost-1.partial";
  spit(other, "another job's scratch");
  ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
  writer.add_point(full_point("p0"));
  EXPECT_EQ(read_results(path_).points.size(), 1u);
  EXPECT_EQ(scratch_files(), std::vector<std::string>{fs::path(other).filename().string()});
  EXPECT_EQ(slurp(other), "another job's scratch");
}

TEST_F(ResultsIo, ReplaceKeepsTheOldFileUntilTheFirstPoint) {
  { ResultsWriter(path_, sample_provenance(), OnExisting::refuse).add_point(full_point("old")); }
  const std::string before = slurp(path_);
  Provenance other;
  other.text["git_sha"] = "def456";
  ResultsWriter writer(path_, other, OnExisting::replace);
  EXPECT_FALSE(writer.written());
  EXPECT_EQ(slurp(path_), before);  // a run dying here loses nothing
  writer.add_point(full_point("new"));
  EXPECT_TRUE(writer.written());
  const ResultsFile file = read_results(path_);
  EXPECT_EQ(file.provenance.text, other.text);
  ASSERT_EQ(file.points.size(), 1u);
  expect_same(file.points[0], full_point("new"));
  EXPECT_TRUE(scratch_files().empty());
}

TEST_F(ResultsIo, OfWritersStartedTogetherOnOneNameExactlyOneGoesOn) {
  // Four processes released at once; each reports 1 if it got the file, 2 if refused.
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> children;
  for (int c = 0; c < 4; ++c) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(go[1]);
      char start;
      if (read(go[0], &start, 1) != 0) _exit(3);  // EOF: all released together
      try {
        Provenance prov = sample_provenance();
        prov.text["writer"] = std::to_string(c);
        ResultsWriter(path_, prov, OnExisting::refuse);
        _exit(1);
      } catch (const InputError&) {
        _exit(2);
      } catch (...) {
        _exit(4);
      }
    }
    children.push_back(child);
  }
  close(go[0]);
  close(go[1]);
  std::vector<int> codes;
  for (pid_t child : children) {
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    codes.push_back(WEXITSTATUS(status));
  }
  std::sort(codes.begin(), codes.end());
  EXPECT_EQ(codes, (std::vector<int>{1, 2, 2, 2}));
  EXPECT_EQ(read_results(path_).provenance.text.count("writer"), 1u);  // one whole file
  EXPECT_TRUE(scratch_files().empty());
}

TEST_F(ResultsIo, ReplacingAnEmptyFileWritesTheProvenanceAtOnce) {
  spit(path_, "");
  ResultsWriter writer(path_, sample_provenance(), OnExisting::replace);
  EXPECT_TRUE(writer.written());
  EXPECT_EQ(read_results(path_).provenance.text, sample_provenance().text);
}

TEST_F(ResultsIo, ASpecialFileIsRefusedByTypeWhateverTheMode) {
  const std::string fifo = dir_ + "/fifo.h5";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  for (OnExisting mode : {OnExisting::refuse, OnExisting::replace, OnExisting::resume}) {
    EXPECT_NE(error_of<InputError>([&] { ResultsWriter(fifo, Provenance{}, mode); }).find("is a FIFO"),
              std::string::npos);
    EXPECT_NE(error_of<InputError>([&] { ResultsWriter(dir_, Provenance{}, mode); }).find("is a directory"),
              std::string::npos);
  }
  EXPECT_TRUE(scratch_files().empty());
}

TEST_F(ResultsIo, BadPointsAreRejectedAndTheFileKept) {
  ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
  writer.add_point(full_point("p0"));
  const std::string before = slurp(path_);
  EXPECT_NE(error_of<Error>([&] { writer.add_point(full_point("p0")); }).find("already has"),
            std::string::npos);
  error_of<Error>([&] { writer.add_point(full_point("a/b")); });
  PointResult ragged = full_point("p1");
  ragged.iter_seconds.pop_back();
  EXPECT_NE(error_of<Error>([&] { writer.add_point(ragged); }).find("iters x ranks"), std::string::npos);
  EXPECT_EQ(writer.points().size(), 1u);
  EXPECT_EQ(slurp(path_), before);
}

TEST_F(ResultsIo, AFailedWriteLeavesTheWriterConsistent) {
  ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
  writer.add_point(full_point("p0"));
  PointResult bad = full_point("p1");
  bad.labels[""] = "an attribute needs a name";
  error_of<Error>([&] { writer.add_point(bad); });
  EXPECT_EQ(writer.points().size(), 1u);
  EXPECT_TRUE(scratch_files().empty());
  EXPECT_EQ(read_results(path_).points.size(), 1u);
}

TEST_F(ResultsIo, AKilledWriterLeavesEveryCompletedPoint) {
  // A child writes points for ever and acknowledges each add_point; after 5 acks it is
  // killed, most likely in the middle of writing the next one.
  int acks[2];
  ASSERT_EQ(pipe(acks), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(acks[0]);
    try {
      ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
      for (int i = 0;; ++i) {
        writer.add_point(full_point("p" + std::to_string(i)));
        const char ack = 1;
        if (write(acks[1], &ack, 1) != 1) _exit(2);
      }
    } catch (...) {
      _exit(1);
    }
  }
  close(acks[1]);
  int acked = 0;
  char ack;
  while (acked < 5 && read(acks[0], &ack, 1) == 1) ++acked;
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(acks[0]);
  ASSERT_EQ(acked, 5);
  const ResultsFile file = read_results(path_);
  ASSERT_GE(file.points.size(), 5u);
  for (size_t i = 0; i < file.points.size(); ++i)
    expect_same(file.points[i], full_point("p" + std::to_string(i)));
}

TEST_F(ResultsIo, BurstTableMergesSeveralFiles) {
  // Variants measured in separate jobs, as on a cluster: one file each, one table.
  const std::vector<std::string> variants = {
      "(A) BurstAttention w. DoubleRing w/o Selective Checkpointing",
      "(B) BurstAttention w. Ulysses(intra node) w/o Selective Checkpointing",
      "(C) BurstAttention w. DoubleRing", "(D) BurstAttention w. Ulysses(intra node)"};
  std::vector<PointResult> merged;
  for (size_t v = 0; v < variants.size(); ++v) {
    const std::string file = dir_ + "/burst_" + std::to_string(v) + ".h5";
    ResultsWriter w(file, sample_provenance(), OnExisting::refuse);
    PointResult p = burst_point("llama-13b", 1024000, 32, variants[v], 0.1 * double(v + 1));
    p.name = "point_0000";
    w.add_point(p);
    const ResultsFile r = read_results(file);
    merged.insert(merged.end(), r.points.begin(), r.points.end());
  }
  std::reverse(merged.begin(), merged.end());
  const Table t = burst_table(merged);
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[0][4], "(A) BurstAttention w. DoubleRing w/o Selective Checkpointing");
  EXPECT_EQ(t.rows[0][5], "10.00");
  EXPECT_EQ(t.rows[3][4], "(D) BurstAttention w. Ulysses(intra node)");
  EXPECT_EQ(t.rows[3][5], "40.00");
}

TEST_F(ResultsIo, ReadingAMissingFileFails) {
  const std::string msg = error_of<Error>([&] { read_results(dir_ + "/nope.h5"); });
  EXPECT_NE(msg.find("not found"), std::string::npos) << msg;
}

TEST_F(ResultsIo, ReadingANonHdf5FileFails) {
  spit(path_, "just text\n");
  const std::string msg = error_of<Error>([&] { read_results(path_); });
  EXPECT_NE(msg.find(path_), std::string::npos) << msg;
}

TEST_F(ResultsIo, ReadingAnHdf5FileThatIsNotOursFails) {
  const hid_t f = H5Fcreate(path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  H5Fclose(f);
  const std::string msg = error_of<Error>([&] { read_results(path_); });
  EXPECT_NE(msg.find("not a minictx results file"), std::string::npos) << msg;
}

// The one-line h5py recipes of outputs/README.md, run on a real file.
TEST_F(ResultsIo, H5pyReadsEveryDatasetInOneLine) {
  const std::string python = python_with_h5py();
  if (python.empty()) GTEST_SKIP() << "no python3 with h5py";
  {
    ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
    writer.add_point(full_point("point_0000"));
    writer.add_point(skipped_point("point_0001"));
    writer.finish();
  }
  const std::string script = dir_ + "/check.py";
  spit(script, R"(import sys, h5py
f = h5py.File(sys.argv[1], 'r')
assert f.attrs['format'] == 'minictx-results'
assert f.attrs['format_version'] == 3
assert f['provenance'].attrs['git_sha'] == 'abc123'
assert f['provenance'].attrs['world_size'] == 2.0
assert f['provenance/hostnames'].asstr()[:].tolist() == ['node-a', 'node-b']
assert f['provenance/hostnames'][:].tolist() == [b'node-a', b'node-b']
p = f['points/point_0000']
assert p.attrs['index'] == 0 and f['points/point_0001'].attrs['index'] == 1
assert p.attrs['verdict'] == 'VALID' and p.attrs['reference'] == 'fp64'
assert p.attrs['skipped_reason'] == '' and p.attrs['iters'] == 3 and p.attrs['ranks'] == 2
assert p.attrs['deck'].startswith('backend: ring')
assert f['points/point_0000/labels'].attrs['ring_type'] == 'zigzag'
assert f['points/point_0000/metrics'].attrs['tokens_per_s'] == 688283.3
assert f['points/point_0000/iter_seconds'][:].shape == (3, 2)
assert f['points/point_0000/iter_seconds'][2, 1] == 0.1 / 3
assert f['points/point_0000/phase_seconds/attention'][:].tolist() == [0.02, 0.021]
assert f['points/point_0000/peak_memory_bytes'][:].tolist() == [251699200, 251699300]
assert f['points/point_0000/bytes_sent_intra'][:].tolist() == [3145728, 3145728]
assert f['points/point_0000/bytes_sent_inter'][:].tolist() == [0, 0]
summed = 'summed over the timed iterations (iters)'
assert f['points/point_0000/iter_seconds'].attrs['unit'] == 'seconds, each timed iteration'
assert f['points/point_0000/phase_seconds'].attrs['unit'] == 'seconds, ' + summed
assert f['points/point_0000/phase_seconds/attention'].attrs['unit'] == 'seconds, ' + summed
assert f['points/point_0000/peak_memory_bytes'].attrs['unit'] == 'bytes, peak of the point (warm-up included)'
assert f['points/point_0000/bytes_sent_intra'].attrs['unit'] == 'bytes, ' + summed
assert f['points/point_0000/bytes_sent_inter'].attrs['unit'] == 'bytes, ' + summed
assert f['points/point_0000/verification/tensor'].asstr()[:].tolist() == ['out', 'dq, rank 1']
assert f['points/point_0000/verification/max_abs_err'][:].tolist() == [1e-7, 0.5]
assert f['points/point_0000/verification/max_rel_err'][:].tolist() == [2e-6, 0.2]
assert f['points/point_0000/verification/rmse'][:].tolist() == [3e-8, 0.1]
assert f['points/point_0000/verification/tolerance'][:].tolist() == [1e-4, 1e-4]
assert f['points/point_0000/verification/pass'][:].astype(bool).tolist() == [True, False]
assert f['points/point_0000/verification/rms_rel_err'][:].tolist() == [1.5e-6, 0.15]
assert f['points/point_0000/verification/single_max_rel_err'][:].tolist() == [4e-7, 0.05]
assert f['points/point_0000/verification/single_rms_rel_err'][:].tolist() == [2e-7, 0.04]
t = f['points/point_0000/ring_timeline']
assert t.attrs['iteration'] == 2 and t.attrs['clock'] == 'host steady_clock'
assert t['rank'][:].tolist() == [0, 0, 1, 1] and t['layer'][:].tolist() == [0, 0, 1, 1]
assert t['pass'].asstr()[:].tolist() == ['forward', 'forward', 'recompute', 'backward']
assert t['step'][:].tolist() == [0, 1, 1, 0] and t['source'][:].tolist() == [0, 1, 0, 1]
assert t['compute_start'][0] == 0.001 and t['transfer_done'][3] == 0.0062
assert t['transfer_posted'][1] != t['transfer_posted'][1]
o = t['outer']
assert o['rank'][:].tolist() == [0, 1] and o['layer'][:].tolist() == [0, 1] and o['round'][:].tolist() == [0, 0]
assert o['pass'].asstr()[:].tolist() == ['forward', 'backward']
assert o['carries'].asstr()[:].tolist() == ['block', 'sums']
assert o['transfer_posted'][0] == 0.0008 and o['transfer_done'][1] == 0.0071
ph = t['phases']
assert ph['rank'][:].tolist() == [0, 0, 1] and ph['iteration'][:].tolist() == [0, 0, 1]
assert ph['phase'].asstr()[:].tolist() == ['attention_fwd', 'forward', 'backward']
assert ph['start'][1] == 0.0001 and ph['end'][2] == 0.0072
q = f['points/point_0001']
assert q.attrs['skipped_reason'].startswith('heads (6)')
assert q['iter_seconds'].shape == (0, 4) and q['peak_memory_bytes'].shape == (0,)
assert q['bytes_sent_intra'].attrs['unit'] == 'bytes, ' + summed
assert len(q['phase_seconds']) == 0 and q['verification/pass'].shape == (0,)
assert q['ring_timeline'].attrs['iteration'] == -1 and q['ring_timeline/rank'].shape == (0,)
assert q['ring_timeline/outer/carries'].shape == (0,) and 'phases' not in q['ring_timeline']
)");
  EXPECT_EQ(std::system((python + " " + script + " " + path_).c_str()), 0);
}

// A run killed mid-sweep: the points in its journal survive h5py opening the file "r+"
// and adding an attribute (which cuts whatever follows the HDF5 part), and the few-line
// reader of outputs/README.md reads them without HDF5.
TEST_F(ResultsIo, AKilledRunsPointsSurviveH5pyRPlusAndReadWithoutHdf5) {
  const std::string python = python_with_h5py();
  if (python.empty()) GTEST_SKIP() << "no python3 with h5py";
  {
    ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
    for (const char* name : {"p0", "p1", "p2", "p3"}) writer.add_point(skipped_point(name));
  }  // killed: no finish
  const std::string script = dir_ + "/touch.py";
  spit(script, R"(import sys, h5py
sys.path.insert(0, sys.argv[2])
from journal_points import journal_points
with h5py.File(sys.argv[1], "r+") as f:
    f.attrs["reviewed_by"] = "someone"
with h5py.File(sys.argv[1], "a") as f:
    f["provenance"].attrs["note"] = "checked"
    journal_id = f.attrs["journal_id"]
assert [p["name"] for p in journal_points(sys.argv[1], journal_id)] == ["p0", "p1", "p2", "p3"]
assert journal_points(sys.argv[1], "another run") == []
)");
  EXPECT_EQ(std::system((python + " " + script + " " + path_ + " " + MINICTX_OUTPUTS_DIR).c_str()), 0);
  const ResultsFile file = read_results(path_);
  ASSERT_EQ(file.points.size(), 4u);
  for (size_t i = 0; i < 4; ++i) expect_same(file.points[i], skipped_point("p" + std::to_string(i)));
  EXPECT_EQ(file.provenance.text.at("note"), "checked");
}

TEST_F(ResultsIo, ResumeWritesAKilledRunsJournalIntoTheFile) {
  {
    ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
    writer.add_point(full_point("p0"));
    writer.add_point(skipped_point("p1"));
  }  // killed
  ASSERT_TRUE(fs::exists(journal_));
  ResultsWriter resumed(path_, sample_provenance(), OnExisting::resume);
  EXPECT_FALSE(fs::exists(journal_));
  const hid_t f = H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GT(H5Lexists(f, "points/p1", H5P_DEFAULT), 0);
  H5Fclose(f);
  EXPECT_EQ(read_results(path_).points.size(), 2u);
}

// A journal is its run's: after a --force run has replaced the file (and a crash kept the
// old journal from being removed), the old points never join the new file.
TEST_F(ResultsIo, AnotherRunsJournalIsNeverMixedIn) {
  {
    ResultsWriter old(path_, sample_provenance(), OnExisting::refuse);
    for (const char* name : {"p0", "p1", "p2"}) old.add_point(skipped_point(name));
  }
  const std::string old_journal = slurp(journal_);
  ResultsWriter writer(path_, sample_provenance(), OnExisting::replace);
  writer.add_point(full_point("p0"));
  spit(journal_, old_journal);
  const ResultsFile file = read_results(path_);
  ASSERT_EQ(file.points.size(), 1u);
  expect_same(file.points[0], full_point("p0"));
  EXPECT_TRUE(file.unreadable.empty());
}

TEST_F(ResultsIo, ANewFileIsRefusedWhileItsOrphanJournalHoldsPoints) {
  {
    ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
    writer.add_point(skipped_point("p0"));
  }
  fs::remove(path_);
  const std::string journal = slurp(journal_);
  for (OnExisting mode : {OnExisting::refuse, OnExisting::resume})
    EXPECT_NE(error_of<InputError>([&] {
                ResultsWriter(path_, sample_provenance(), mode);
              }).find("move the journal away"),
              std::string::npos);
  EXPECT_EQ(slurp(journal_), journal);
}

// A format-version-2 file: points appended after its HDF5 part as YAML records
// (outputs/README.md, "Files of format version 2").
class OldFormat : public ResultsIo {
 protected:
  static uint64_t fnv1a64(const std::string& bytes) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
    return h;
  }
  static std::string u64(uint64_t v) {
    std::string out;
    for (int i = 0; i < 8; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
    return out;
  }
  static std::string record(const std::string& yaml) {
    return "MCTXPT01" + u64(yaml.size()) + yaml + u64(fnv1a64(yaml));
  }
  static std::string skipped_yaml(const std::string& name, int index) {
    return "name: \"" + name + "\"\nindex: " + std::to_string(index) +
           "\ndeck: \"backend: ulysses\\n\"\nverdict: \"UNVERIFIED\"\nreference: \"\"\n"
           "skipped_reason: \"heads (6) not divisible by the Ulysses degree (4)\"\niters: 5\nranks: 4\n"
           "labels: {\"backend\": \"ulysses\", \"seq_len\": \"4096\"}\nmetrics: {}\niter_seconds: []\n"
           "phase_seconds: {}\npeak_memory_bytes: []\nbytes_sent_intra: []\nbytes_sent_inter: []\n"
           "verification: {tensor: [], max_abs_err: [], max_rel_err: [], rmse: [], tolerance: [], "
           "rms_rel_err: [], single_max_rel_err: [], single_rms_rel_err: [], pass: []}\n"
           "ring_timeline: {iteration: -1, clock: \"\", rank: [], layer: [], pass: [], round: [], "
           "transfer_posted: [], transfer_done: [], step: [], source: [], compute_start: [], compute_end: "
           "[], "
           "outer: {rank: [], layer: [], pass: [], round: [], transfer_posted: [], transfer_done: [], "
           "carries: []}}\n";
  }
  // A format-version-2 file of one point, then `tail` appended.
  void write_version_2(const std::string& tail) {
    write_older_file(2);
    std::ofstream(path_, std::ios::binary | std::ios::app) << tail;
  }
};

TEST_F(OldFormat, AppendedPointsReadAndACutOrDamagedRecordEndsThem) {
  const std::string r1 = record(skipped_yaml("point_0001", 1)), r2 = record(skipped_yaml("point_0002", 2));
  write_version_2(r1 + r2);
  ResultsFile file = read_results(path_);
  ASSERT_EQ(file.points.size(), 3u);
  expect_same(file.points[1], [] {
    PointResult p = skipped_point("point_0001");
    p.verdict = "UNVERIFIED";
    return p;
  }());
  EXPECT_TRUE(file.unreadable.empty());
  const std::string whole = slurp(path_);
  spit(path_, whole.substr(0, whole.size() - 3));  // killed while appending point_0002
  file = read_results(path_);
  EXPECT_EQ(file.points.size(), 2u);
  EXPECT_TRUE(file.unreadable.empty());
  std::string damaged = whole;
  damaged[whole.size() - r2.size() - 30] ^= 1;  // inside point_0001's record
  spit(path_, damaged);
  file = read_results(path_);
  EXPECT_EQ(file.points.size(), 1u);
  ASSERT_EQ(file.unreadable.size(), 1u);
  EXPECT_NE(file.unreadable[0].find("fails its checksum"), std::string::npos) << file.unreadable[0];
}

// 225 KB of YAML whose 5,000 phases each alias one list of 20,000 values: expanded, 10^8
// doubles. Refused at the first alias, in no time, with one line.
TEST_F(OldFormat, AnAliasBombIsRefusedAtOnceWithOneLine) {
  std::string yaml = skipped_yaml("point_0001", 1);
  std::string list = "&times [";
  for (int i = 0; i < 20000; ++i) list += (i ? ",1" : "1");
  list += "]";
  std::string phases = "phase_seconds: {\"p0\": " + list;
  for (int i = 1; i < 5000; ++i) phases += ", \"p" + std::to_string(i) + "\": *times";
  phases += "}";
  yaml.replace(yaml.find("phase_seconds: {}"), std::string("phase_seconds: {}").size(), phases);
  ASSERT_GT(yaml.size(), 80000u);
  write_version_2(record(yaml));
  const auto start = std::chrono::steady_clock::now();
  const ResultsFile file = read_results(path_);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  EXPECT_EQ(file.points.size(), 1u);
  ASSERT_EQ(file.unreadable.size(), 1u);
  EXPECT_NE(file.unreadable[0].find("appended point 1 unreadable: it holds a YAML anchor"), std::string::npos)
      << file.unreadable[0];
}

TEST_F(OldFormat, DeepNestingAndTagsAreRefused) {
  std::string deep = skipped_yaml("point_0001", 1);
  deep.replace(deep.find("metrics: {}"), 11, "metrics: " + std::string(5000, '[') + std::string(5000, ']'));
  std::string tagged = skipped_yaml("point_0002", 2);
  tagged.replace(tagged.find("iters: 5"), 8, "iters: !!int 5");
  write_version_2(record(deep) + record(tagged));
  const ResultsFile file = read_results(path_);
  EXPECT_EQ(file.points.size(), 1u);
  ASSERT_EQ(file.unreadable.size(), 2u);
  EXPECT_NE(file.unreadable[0].find("nested deeper than 8 levels"), std::string::npos) << file.unreadable[0];
  EXPECT_NE(file.unreadable[1].find("YAML tag"), std::string::npos) << file.unreadable[1];
}

// Journal records a writer never makes: bounded and refused point by point.
TEST_F(ResultsIo, HostileJournalRecordsCostOneLineEach) {
  {
    ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
    writer.add_point(skipped_point("p0"));
  }
  std::string journal = slurp(journal_);
  const std::string id_start = "\"journal_id\":\"";
  const size_t id_at = journal.find(id_start) + id_start.size();
  const std::string id = journal.substr(id_at, journal.find('"', id_at) - id_at);
  // Re-signed records, as a hand-made journal would be.
  const auto signed_line = [](const std::string& rest) {
    char crc[16];
    std::snprintf(crc, sizeof crc, "%08x", crc32(rest.data(), rest.size()));
    return "{\"crc32\":\"" + std::string(crc) + "\"," + rest;
  };
  json negative = point_json(full_point("p1"), 1);
  negative["iter_seconds"] = json::array({{-1.0, 0.01}, {0.01, 0.01}, {0.01, 0.01}});
  journal += signed_line("\"journal_id\":\"" + id + "\",\"point\":" + negative.dump() + "}\n");
  journal += signed_line("\"journal_id\":\"" + id + "\",\"point\":" + std::string(100000, '[') +
                         std::string(100000, ']') + "}\n");
  journal += journal_record(id, point_json(full_point("p3"), 3));
  spit(journal_, journal);
  const ResultsFile file = read_results(path_);
  ASSERT_EQ(file.points.size(), 2u);
  EXPECT_EQ(file.points[1].name, "p3");
  ASSERT_EQ(file.unreadable.size(), 2u);
  EXPECT_NE(
      file.unreadable[0].find("journal record 2 unreadable: iter_seconds holds -1, which is not the time"),
      std::string::npos)
      << file.unreadable[0];
  EXPECT_NE(file.unreadable[1].find("journal record 3 unreadable: nested deeper than 8 levels"),
            std::string::npos)
      << file.unreadable[1];
}

// -- the claim every writer takes ---------------------------------------------------------

class Claim : public ResultsIo {
 protected:
  // A finished results file at path_, and its bytes.
  std::string finished_file() {
    ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
    writer.add_point(full_point("p0"));
    writer.finish();
    return slurp(path_);
  }
  // Every way a writer can meet path_: each refused with one line holding `why`, nothing written.
  void expect_refused(const std::string& why) {
    for (OnExisting mode : {OnExisting::resume, OnExisting::replace})
      EXPECT_NE(error_of<InputError>([&] { ResultsWriter(path_, sample_provenance(), mode); }).find(why),
                std::string::npos);
    EXPECT_NE(error_of<InputError>([&] {
                write_output_file(path_, "results file", true, "bench", "exists");
              }).find(why),
              std::string::npos);
  }
};

TEST_F(Claim, ALockLinkedToTheResultsFileIsRefusedAndTruncatesNothing) {
  const std::string before = finished_file();
  fs::create_symlink(path_, path_ + ".lock");
  expect_refused("its lock file " + path_ + ".lock is a symbolic link");
  EXPECT_EQ(slurp(path_), before);
  fs::remove(path_ + ".lock");
  fs::create_hard_link(path_, path_ + ".lock");
  expect_refused("is a hard link");
  EXPECT_EQ(slurp(path_), before);
}

TEST_F(Claim, ALockLinkedToAnotherFileOrOnAnotherFileSystemIsRefused) {
  const std::string before = finished_file();
  // Another file, in another directory and on another file system where there is one.
  const std::string other =
      (fs::exists("/dev/shm") ? "/dev/shm/" : dir_ + "/") + fs::path(dir_).filename().string();
  spit(other, "someone's notes\n");
  fs::create_symlink(other, path_ + ".lock");
  expect_refused("is a symbolic link");
  fs::remove(path_ + ".lock");
  spit(path_ + ".lock", "someone's notes\n");
  expect_refused("holds something other than a claim");
  EXPECT_EQ(slurp(path_ + ".lock"), "someone's notes\n");
  EXPECT_EQ(slurp(other), "someone's notes\n");
  EXPECT_EQ(slurp(path_), before);
  fs::remove(other);
  fs::remove(path_ + ".lock");
  // A file of another file system mounted at the lock's name (needs root; skipped without).
  spit(path_ + ".lock", "");
  const std::string shm = "/dev/shm/minictx-lock-" + std::to_string(getpid());
  spit(shm, "host 1\n");
  if (std::system(("mount --bind " + shm + " " + path_ + ".lock 2>/dev/null").c_str()) == 0) {
    expect_refused("is on another file system than its directory");
    EXPECT_EQ(slurp(shm), "host 1\n");
    EXPECT_EQ(std::system(("umount " + path_ + ".lock").c_str()), 0);
  }
  fs::remove(shm);
}

TEST_F(Claim, AStaleLockOfAKilledRunIsTakenOver) {
  spit(path_ + ".lock", "node-7 12345\n");
  ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
  writer.add_point(full_point("p0"));
  EXPECT_EQ(read_results(path_).points.size(), 1u);
}

// bench, verify --dump and report --csv write through write_output_file: none of them may
// write a file a run is writing, --force or not.
TEST_F(Claim, EveryWriterTakesTheClaim) {
  const std::string before = finished_file();
  const OutputClaim run(path_);
  const std::string line =
      error_of<OutputInUse>([&] { write_output_file(path_, "results file", true, "bench rows", "exists"); });
  EXPECT_NE(line.find("is being written by another run"), std::string::npos) << line;
  error_of<OutputInUse>([&] { write_array_dump(path_, {}, {}); });
  error_of<OutputInUse>([&] { ResultsWriter(path_, sample_provenance(), OnExisting::replace); });
  EXPECT_EQ(slurp(path_), before);
  EXPECT_TRUE(scratch_files().empty());
}

// -- report ------------------------------------------------------------------------------

TEST(Report, RendersMarkdownLikeTheSeeds) {
  const Table t{{"ring type", "seq_len"}, {{"basic", "4096"}, {"a|b", "x"}}};
  EXPECT_EQ(render(t, TableFormat::markdown),
            "| ring type | seq_len |\n"
            "| :----: | :----: |\n"
            "| basic | 4096 |\n"
            "| a\\|b | x |\n");
}

TEST(Report, RendersCsvWithRfc4180Quoting) {
  const Table t{{"point", "verdict"}, {{"p0", "skipped: a, b"}, {"p1", "say \"hi\""}}};
  EXPECT_EQ(render(t, TableFormat::csv),
            "point,verdict\n"
            "p0,\"skipped: a, b\"\n"
            "p1,\"say \"\"hi\"\"\"\n");
}

TEST(Report, RejectsARaggedTable) {
  const Table t{{"a", "b"}, {{"only one"}}};
  EXPECT_THROW(render(t, TableFormat::markdown), Error);
}

TEST(Report, ParsesTableFormats) {
  EXPECT_EQ(parse_table_format("markdown"), TableFormat::markdown);
  EXPECT_EQ(parse_table_format("md"), TableFormat::markdown);
  EXPECT_EQ(parse_table_format("csv"), TableFormat::csv);
  EXPECT_THROW(parse_table_format("xlsx"), InputError);
}

TEST(Report, FormatsNumbersWithAtLeastThreeSignificantDigits) {
  EXPECT_EQ(format_number(11.90199, 3), "11.902");
  EXPECT_EQ(format_number(7518.94, 1), "7518.9");
  EXPECT_EQ(format_number(0.0123456, 1), "0.0123");
  EXPECT_EQ(format_number(5.2, 0), "5.20");
  EXPECT_EQ(format_number(688283.3, 0), "688283");
  EXPECT_EQ(format_number(0.0, 2), "0.00");
  EXPECT_EQ(format_number(-3.14159, 2), "-3.14");
  EXPECT_EQ(format_number(1.5e-9, 2), "1.50e-09");
  EXPECT_EQ(format_number(std::nan(""), 2), "nan");
  EXPECT_EQ(format_number(-HUGE_VAL, 2), "-inf");
}

// The error columns verify added later are absent from older files: read as NaN, and the
// columns every file has are read as before.
TEST_F(ResultsIo, VerificationColumnsAddedLaterReadAsNanFromOlderFiles) {
  {
    ResultsWriter writer(path_, sample_provenance(), OnExisting::refuse);
    writer.add_point(full_point("p"));
    writer.finish();  // the point into the HDF5 part, where an older file holds it
  }
  {
    const hid_t f = H5Fopen(path_.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    for (const VerifyColumn& c : verify_columns()) {
      if (!c.added) continue;
      ASSERT_GE(H5Ldelete(f, ("points/p/verification/" + std::string(c.name)).c_str(), H5P_DEFAULT), 0);
    }
    H5Fclose(f);
  }
  const ResultsFile file = read_results(path_);
  ASSERT_EQ(file.points.size(), 1u);
  const VerifyRow& r = file.points[0].verification[1];
  EXPECT_EQ(r.tensor, "dq, rank 1");
  EXPECT_EQ(r.max_rel_err, 0.2);
  EXPECT_TRUE(std::isnan(r.rms_rel_err) && std::isnan(r.single_max_rel_err) &&
              std::isnan(r.single_rms_rel_err));
}

// report --columns errors: the worst output and gradient errors of each point; n/a where a
// point has no verification rows, nan where an output was NaN.
TEST(Report, ErrorsTableTakesTheWorstOutputAndGradientErrors) {
  PointResult p = full_point("p");
  p.labels["partials"] = "storage";
  p.labels["grad_reduce_dtype"] = "fp32";
  p.labels["layers"] = "2";
  p.labels["documents"] = "[100,28]";
  p.verification = {{"outputs/o", 1e-3, 2e-3, 1e-4, 0.035, true, 1e-3, 5e-4, 4e-4},
                    {"outputs/lse", 1e-4, 1e-4, 1e-5, 0.035, true, 1e-5, 1e-4, 1e-5},
                    {"grads/q", 1e-3, 3e-3, 1e-4, 0.035, true, 2e-3, 6e-3, 1e-3},
                    {"grads/k", 1e-3, 7e-3, 1e-4, 0.035, true, 4e-3, 5e-3, 1e-3}};
  PointResult unchecked = full_point("u");
  unchecked.verification.clear();
  PointResult broken = full_point("b");
  broken.verification = {{"outputs/o", NAN, NAN, NAN, 0.035, false},
                         {"grads/q", 1e-3, 3e-3, 1e-4, 0.035, true}};
  const Table t = make_table("errors", {p, unchecked, broken});
  EXPECT_EQ(t.header, (std::vector<std::string>{
                          "world", "backend", "ring_type", "mode", "dtype", "partials", "grad sums", "layers",
                          "documents", "out max rel", "out rms rel", "grad max rel", "grad rms rel",
                          "out rms rel vs 1 device", "grad rms rel vs 1 device", "verdict"}));
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"2", "ring", "zigzag", "attention", "fp32", "storage",
                                                 "fp32", "2", "[100,28]", "0.00200", "0.00100", "0.00700",
                                                 "0.00400", "0.000400", "0.00100", "VALID"}));
  for (size_t c = 9; c < 15; ++c) EXPECT_EQ(t.rows[1][c], "n/a") << t.header[c];
  EXPECT_EQ(t.rows[2][9], "nan");  // the NaN output
  EXPECT_EQ(t.rows[2][11], "0.00300");
  EXPECT_EQ(t.rows[2][13], "nan");  // a NaN output is NaN against any run
  EXPECT_EQ(t.rows[2][14], "n/a");  // no single-device comparison ran
}

TEST(Report, SummaryTablePrintsEveryColumn) {
  const Table t = summary_table({full_point("point_0000")});
  EXPECT_EQ(render(t, TableFormat::markdown),
            "| point | backend | ring_type | mode | world | seq_len | batch | fwd_only | iters/s "
            "| latency(ms) | tokens/s | tokens/s/device | TFLOPS/device | MFU (MPT, full mask) | HFU (MPT, "
            "full mask) | peak "
            "MB/device | sent MB/device/step (intra) | sent MB/device/step (inter) | verdict |\n"
            "| :----: | :----: | :----: | :----: | :----: | :----: | :----: | :----: | :----: "
            "| :----: | :----: | :----: | :----: | :----: | :----: | :----: | :----: | :----: "
            "| :----: |\n"
            "| point_0000 | ring | zigzag | attention | 2 | 4096 | 2 | True | 84.019 | 11.902 | "
            "688283 | 344142 | 11.53 | 42.57 | 56.76 | 240.0 | 3.00 | 0.0 | VALID |\n");
}

TEST(Report, SummaryTablePrintsNaForMissingValuesAndTheSkipReason) {
  PointResult bare;
  bare.name = "p";
  bare.labels["backend"] = "ring";
  bare.metrics["latency_ms"] = 2.5;
  const Table t = summary_table({bare, skipped_point("q")});
  ASSERT_EQ(t.rows.size(), 2u);
  ASSERT_EQ(t.rows[0].size(), t.header.size());
  for (size_t c = 0; c < t.header.size(); ++c) {
    const std::string& h = t.header[c];
    const std::string& cell = t.rows[0][c];
    if (h == "point")
      EXPECT_EQ(cell, "p");
    else if (h == "backend")
      EXPECT_EQ(cell, "ring");
    else if (h == "latency(ms)")
      EXPECT_EQ(cell, "2.500");
    else
      EXPECT_EQ(cell, "n/a") << h;
  }
  EXPECT_EQ(t.rows[1].back(), "skipped: heads (6) not divisible by the Ulysses degree (4)");
  EXPECT_EQ(t.rows[1][t.header.size() - 2], "n/a");
}

TEST(Report, SeedTablesHaveTheSeedColumns) {
  PointResult p = full_point("p");
  p.labels["ring_type"] = "basic";
  p.labels["ulysses_degree"] = "2";
  p.labels["ring_degree"] = "4";
  p.labels["context_size"] = "8";
  p.labels["window_size"] = "4";
  // The seed's speed is the whole job's: 8 devices at 1.4375 TFLOPS each print 11.5.
  p.labels["world_size"] = "8";
  p.metrics["tflops_per_device"] = 1.4375;
  EXPECT_EQ(render(usp_table({p}), TableFormat::markdown),
            "| ring type | seq_len | ulysses_degree | ring_degree | fwd_only | "
            "throughput(iters/s) | latency(ms/iter) | peak memory(MB/device) | speed(TFLOPS) |\n"
            "| :----: | :----: | :----: | :----: | :----: | :----: | :----: | :----: | :----: |\n"
            "| basic | 4096 | 2 | 4 | True | 84.019 | 11.902 | 240.0 | 11.5 |\n");
  const Table dr = make_table("double_ring", {p});
  EXPECT_EQ(dr.header[2], "context_size");
  EXPECT_EQ(dr.header[3], "window_size");
  EXPECT_EQ(dr.rows[0][2], "8");
  EXPECT_EQ(dr.rows[0][3], "4");
  EXPECT_EQ(dr.rows[0].back(), "11.5");
  p.labels.erase("world_size");
  EXPECT_EQ(usp_table({p}).rows[0].back(), "n/a");
  EXPECT_EQ(make_table("summary", {p}).header, summary_table({p}).header);
  const std::string msg = error_of<InputError>([&] { make_table("xlsx", {p}); });
  EXPECT_NE(msg.find("usp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("burst"), std::string::npos) << msg;
}

// A model-mode point as the runner labels it (app/labels.cpp) with the MPT seed's first
// row's numbers: 70b, 2048 tokens, 64 H100s.
PointResult mpt_point() {
  PointResult p;
  p.name = "point_0000";
  p.labels = {{"model", "llama-7b"},     {"seq_len", "2048"}, {"world_size", "64"},
              {"gpu", "h100-80gb"},      {"batch", "8"},      {"dtype", "bf16"},
              {"checkpointing", "full"}, {"backend", "ring"}, {"ring_type", "zigzag"}};
  p.metrics = {{"mfu", 0.4257},
               {"hfu", 0.5676},
               {"tflops_per_device", 421.2583},
               {"sequences_per_s", 32.48},
               {"tokens_per_s", 66523.0},
               {"tokens_per_s_per_device", 1039.4},
               {"n_params", 64862437376.0}};
  return p;
}

TEST(Report, MptTableHasTheSeedColumnsAndNaForWhatIsNotModelled) {
  const std::string md = render(make_table("mpt", {mpt_point()}), TableFormat::markdown);
  EXPECT_EQ(
      md,
      "| Model | SeqLen (T) | # GPUs | GPU | MFU (MPT, full mask) | HFU (MPT, full mask) | Model TFLOP | "
      "MicroBatchSize | GradAccum | "
      "GlobalBatchSize | Throughput (S/s) | Throughput (T/s) | Throughput (T/s/GPU) | GlobalBatchSize (T) | "
      "Precision | MP Mode | Sharding Strategy | Activation Checkpointing | Activation CPUOffload | "
      "NumParams |\n"
      "| :----: | :----: | :----: | :----: | :----: | :----: | :----: | :----: | :----: | :----: | :----: "
      "| :----: | :----: | :----: | :----: | :----: | :----: | :----: | :----: | :----: |\n"
      "| llama-7b | 2048 | 64 | h100-80gb | 42.57 | 56.76 | 421.258 | 8 | 1 | 8 | 32.48 | 66523 | 1039 | "
      "16384 | bf16 | n/a | n/a | True | n/a | 64862437376 |\n");
  PointResult selective = mpt_point();
  selective.labels["checkpointing"] = "selective";
  PointResult none = mpt_point();
  none.labels["checkpointing"] = "none";
  none.metrics.erase("n_params");
  const Table t = mpt_table({selective, none});
  EXPECT_EQ(t.rows[0][17], "selective");
  EXPECT_EQ(t.rows[1][17], "False");
  EXPECT_EQ(t.rows[1][19], "n/a");
}

// The variant column: the paper's name where the backend gives one, else the backend and
// its ring layout.
TEST(Report, VariantsComeFromTheLabels) {
  EXPECT_EQ(point_variant(burst_point("llama-7b", 1, 1, "(C) BurstAttention w. DoubleRing", 0)),
            "(C) BurstAttention w. DoubleRing");
  EXPECT_EQ(point_variant(full_point("p")), "ring (zigzag)");
}

TEST(Report, AttentionModeBurstPointsNameNoModel) {
  PointResult p = burst_point("", 1, 1, "BurstAttention w. DoubleRing", 0);
  p.labels.erase("model");
  const Table t = make_table("burst", {p});
  EXPECT_EQ(t.rows[0][0], "n/a");  // Model: none ran
}

TEST(Report, CompareMatchesAttentionPointsOfFilesThatStillCarryModelLabels) {
  PointResult older;  // attention mode, written when every point carried the model labels
  older.name = "point_0000";
  older.labels = {{"backend", "ring"}, {"mode", "attention"}, {"seq_len", "4096"},      {"heads", "8"},
                  {"model", "custom"}, {"layers", "2"},       {"checkpointing", "none"}};
  older.metrics = {{"latency_ms", 2.0}};
  PointResult projected = older;
  for (const char* key : {"model", "layers", "checkpointing"}) projected.labels.erase(key);
  projected.metrics = {{"latency_ms", 1.0}};
  EXPECT_EQ(compare_table({older}, {projected}).rows.at(0).at(9), format_number(2.0, 3));
  // In model mode the layer stack tells configurations apart.
  older.labels["mode"] = projected.labels["mode"] = "model";
  EXPECT_EQ(compare_table({older}, {projected}).rows.at(0).at(9), "n/a");
}

TEST(Report, ComparePhasesSetsEachPhaseAndRingStepBesideItsProjection) {
  PointResult m;  // two ranks, two iterations, one forward walk of two steps each
  m.name = "point_0000";
  m.iters = 2;
  m.labels = {{"backend", "ring"}, {"mode", "attention"}, {"seq_len", "4096"}};
  m.phase_seconds = {{"attention_fwd", {0.010, 0.012}}, {"attention_bwd", {0.030, 0.020}}};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // rank, layer, pass, round, step, source, compute start and end, transfer posted and done
  m.ring_timeline.steps = {{0, 0, WalkPass::forward, 0, 0, 0, 0.001, 0.002, 0.0005, 0.004},
                           {0, 0, WalkPass::forward, 0, 1, 1, 0.004, 0.006, nan, nan},
                           {1, 0, WalkPass::forward, 0, 0, 1, 0.001, 0.003, 0.0005, 0.0035},
                           {1, 0, WalkPass::forward, 0, 1, 0, 0.0035, 0.0055, nan, nan}};
  PointResult p = m;
  p.iters = 1;
  p.ring_timeline = {};
  p.phase_seconds = {{"attention_fwd", {0.004, 0.004}}, {"attention_bwd", {0.006, 0.006}}};
  p.metrics = {{"projected_ring_step_forward_compute_s", 0.0015},
               {"projected_ring_step_forward_transfer_s", 0.001},
               {"projected_ring_step_forward_exposed_s", 0.0}};
  const Table t = compare_phases_table({m}, {p});
  ASSERT_EQ(t.rows.size(), 5u) << render(t, TableFormat::markdown);
  // Per step on the slowest rank: 12 ms / 2 iterations of attention_fwd, 30 / 2 backward.
  EXPECT_EQ(t.rows[0][1], "attention_fwd");
  EXPECT_EQ(t.rows[0][2], format_number(6.0, 3));
  EXPECT_EQ(t.rows[0][3], format_number(4.0, 3));
  EXPECT_EQ(t.rows[1][4], format_number(9.0, 3));  // 15 - 6 ms: the largest gap
  EXPECT_EQ(t.rows[1][6], "<-");
  EXPECT_EQ(t.rows[0][6], "");
  // Rank 0 is slower (3 ms compute + 2 ms exposed over 2 steps against rank 1's 4 + 0.5):
  // per step 1.5 ms compute, 3.5 / 2 ms transfer, 1 ms exposed.
  EXPECT_EQ(t.rows[2][1], "ring step, forward: compute");
  EXPECT_EQ(t.rows[2][2], format_number(1.5, 3));
  EXPECT_EQ(t.rows[3][2], format_number(1.75, 3));
  EXPECT_EQ(t.rows[4][2], format_number(1.0, 3));
  EXPECT_EQ(t.rows[4][3], format_number(0.0, 3));
  EXPECT_EQ(t.rows[4][5], "n/a");  // no ratio to a zero
}

TEST(Report, BurstTableGroupsSettingsAndOrdersVariants) {
  // Two settings, the variants in scrambled order across them.
  const std::vector<PointResult> points = {burst_point("llama-7b", 2048000, 32, "(D) ...", 0.40),
                                           burst_point("llama-13b", 1024000, 32, "(A) ...", 0.20),
                                           burst_point("llama-7b", 2048000, 32, "(A) ...", 0.30),
                                           burst_point("llama-7b", 2048000, 32, "(C) ...", 0.35),
                                           burst_point("llama-7b", 2048000, 32, "(B) ...", 0.31)};
  const Table t = make_table("burst", points);
  EXPECT_EQ(t.header, (std::vector<std::string>{"Model", "SeqLen (T)", "# GPUs", "GPU", "Variant",
                                                "MFU (causal)", "Tokens/s/GPU"}));
  ASSERT_EQ(t.rows.size(), 5u);
  const std::vector<std::string> order = {"(A)", "(B)", "(C)", "(D)", "(A)"};
  for (size_t r = 0; r < 5; ++r) {
    EXPECT_EQ(t.rows[r][4].substr(0, 3), order[r]) << r;
    EXPECT_EQ(t.rows[r][0], r < 4 ? "llama-7b" : "llama-13b") << r;
  }
  EXPECT_EQ(t.rows[0][5], "30.00");
  EXPECT_EQ(t.rows[0][6], "300.0");
  EXPECT_EQ(t.rows[3][5], "40.00");
  EXPECT_EQ(render(t, TableFormat::csv).substr(0, 62),
            "Model,SeqLen (T),# GPUs,GPU,Variant,MFU (causal),Tokens/s/GPU\n");
}

}  // namespace
}  // namespace minictx
