// Invariants of the time model behind `minictx project` (miniapp/project/): memory is
// the run's estimate, compute-bound time follows the FLOP count, and a point turns
// link-bound as the profile's link bandwidth drops.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "bench/kernel_bench_writer.hpp"
#include "config/machine_profile.hpp"
#include "core/error.hpp"
#include "core/phase_names.hpp"
#include "installed_backends.hpp"
#include "io/results_schema.hpp"
#include "model/flops.hpp"
#include "model/memory_estimate.hpp"
#include "project/calibration.hpp"
#include "project/step_model.hpp"

namespace minictx {
namespace {

ProjectionProfile shipped(const std::string& name) {
  return load_projection_profile(std::string(MINICTX_MACHINES_DIR) + "/" + name + ".yaml", {});
}
ProjectionProfile a100() { return shipped("a100-80gb-hdr"); }

StepProjection project(const RunConfig& cfg, const Topology& t, const ProjectionProfile& p) {
  const KernelRates rates(p, cfg.run.dtype);
  return project_step(cfg, t, rates, {p.intra, p.inter}, p.memory_gib * double(1 << 30));
}

// Llama-7b-like attention (32 heads of 128, GQA 8), bf16, zigzag ring.
RunConfig attention_point(int64_t seq) {
  RunConfig c;
  c.run.mode = Mode::attention;
  c.run.dtype = DType::bf16;
  c.model.heads = 32;
  c.model.kv_heads = 8;
  c.model.head_dim = 128;
  c.attention.backend = "ring";
  c.attention.options.set("attention.ring_type", std::string("zigzag"));
  c.sequence.length = seq;
  return c;
}

TEST(Project, ShippedProfilesLoadWithSources) {
  for (const char* name : {"a100-80gb-hdr", "rtx-4090d-pcie4", "rtx-4090d-pcie4-nop2p", "h100-sxm-ndr"}) {
    const ProjectionProfile p = shipped(name);
    EXPECT_GT(p.peak_tflops.at("bf16"), 0) << name;
    EXPECT_GT(p.intra.bandwidth_gb_s, 0) << name;
    EXPECT_GT(p.inter.bandwidth_gb_s, 0) << name;
    for (const char* group : {"peaks", "node", "memory", "intra_node", "inter_node", "call_overhead",
                              "gemm_efficiency", "attention_efficiency", "attention_block_size"})
      EXPECT_FALSE(p.sources.at(group).empty()) << name << " " << group;
  }
}

// The A100 profile with the line starting `cut` taken out, loaded: the error it gives.
std::string refusal_without(const std::string& cut, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "minictx_test_project";
  std::filesystem::create_directories(dir);
  const auto file = dir / name;
  std::ifstream in(std::filesystem::path(a100().file));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find(cut);
  if (at == std::string::npos) return "no line " + cut;
  text.erase(at, text.find('\n', at) - at + 1);
  std::ofstream(file) << text;
  try {
    load_projection_profile(file.string(), {});
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Project, AFigureWithoutItsSourceIsRefused) {
  const std::string inter = refusal_without("    source: \"Mellanox", "nosource.yaml");
  EXPECT_NE(inter.find("projection.inter_node has no 'source:'"), std::string::npos) << inter;
  const std::string size = refusal_without("    source: \"assumed: the length shape", "nosizesource.yaml");
  EXPECT_NE(size.find("projection.attention_block_size has no 'source:'"), std::string::npos) << size;
}

// A group given twice would be read from its first copy (yaml-cpp keeps both): refused,
// naming the key and both lines.
TEST(Project, AKeyGivenTwiceIsRefused) {
  const auto file = std::filesystem::temp_directory_path() / "minictx_test_project_twice.yaml";
  std::ifstream in(std::filesystem::path(a100().file));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string again = "  memory:\n    capacity_gib: 1\n    bandwidth_gb_s: 1\n    source: \"a copy\"\n";
  std::ofstream(file) << text + again;
  const int first = 1 + int(std::count(text.begin(), text.begin() + long(text.find("  memory:")), '\n'));
  const int second = 1 + int(std::count(text.begin(), text.end(), '\n'));
  try {
    load_projection_profile(file.string(), {});
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "machine profile " + file.string() + " line " + std::to_string(second) +
                                         ": projection.memory is given twice (lines " +
                                         std::to_string(first) + " and " + std::to_string(second) + ")");
  }
  std::filesystem::remove(file);
}

// A profile name or path the system cannot look up says why.
TEST(Project, AProfileNameTooLongSaysSo) {
  for (const std::string& name : {std::string(300, 'p'), "/tmp/" + std::string(300, 'p') + ".yaml"}) {
    try {
      load_projection_profile(name, {});
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), "--machine " + name + ": File name too long");
    }
  }
}

// The attention efficiency table: exact at its points, linear in log2 of the head dim and
// of the length between them, constant beyond the ends, per pass and mask.
TEST(Project, AttentionEfficiencyInterpolatesInLogHeadDimAndLength) {
  AttentionEfficiency e;
  e.head_dim = {32, 128};
  e.length = {256, 1024, 4096};
  e.fwd_causal = {0.1, 0.2, 0.3, 0.3, 0.4, 0.6};
  e.fwd_full = {0.2, 0.2, 0.2, 0.5, 0.5, 0.5};
  e.bwd_causal = {0.05, 0.1, 0.15, 0.15, 0.2, 0.3};
  e.bwd_full = {0.1, 0.1, 0.1, 0.25, 0.25, 0.25};
  EXPECT_DOUBLE_EQ(e.at(false, true, 32, 1024), 0.2);
  EXPECT_DOUBLE_EQ(e.at(false, true, 128, 4096), 0.6);
  EXPECT_DOUBLE_EQ(e.at(false, true, 32, 512), 0.15);  // halfway in log2 between 256 and 1024
  EXPECT_DOUBLE_EQ(e.at(false, true, 64, 1024), 0.3);  // halfway in log2 between 32 and 128
  EXPECT_DOUBLE_EQ(e.at(false, true, 64, 512), 0.25);  // both
  EXPECT_DOUBLE_EQ(e.at(false, true, 16, 100), 0.1);   // below both ends
  EXPECT_DOUBLE_EQ(e.at(false, true, 256, 1e6), 0.6);  // above both ends
  EXPECT_DOUBLE_EQ(e.at(false, false, 64, 2048), 0.35);
  EXPECT_DOUBLE_EQ(e.at(true, true, 128, 1024), 0.2);
  EXPECT_DOUBLE_EQ(e.at(true, false, 32, 4096), 0.1);
}

// A profile's table is the head dim's figures times the length factors of the mask.
TEST(Project, ProfileAttentionTableIsHeadDimTimesLengthFactor) {
  const ProjectionProfile p = a100();
  const AttentionEfficiency& e = p.attention;
  ASSERT_EQ(e.fwd_causal.size(), e.head_dim.size() * e.length.size());
  EXPECT_DOUBLE_EQ(e.at(false, false, 128, 16384), 0.70);
  EXPECT_DOUBLE_EQ(e.at(false, true, 128, 512), 0.70 * 0.54);
  EXPECT_DOUBLE_EQ(e.at(true, false, 64, 1024), 0.45 * 0.95);
  EXPECT_DOUBLE_EQ(e.at(false, true, 128, 1 << 20), 0.70 * 0.91);  // constant past the last length
}

TEST(Project, MemoryIsTheRunsEstimate) {
  const ProjectionProfile p = a100();
  for (const char* backend : {"ring", "ulysses", "allgather", "burst"}) {
    RunConfig c = attention_point(65536);
    c.attention.backend = backend;
    const Topology t{16, 8};
    EXPECT_EQ(project(c, t, p).memory_bytes, double(estimate_memory_bytes(c, t))) << backend;
  }
  RunConfig m;
  m.run.mode = Mode::model;
  m.run.checkpointing = Checkpointing::full;
  m.sequence.length = 8192;
  EXPECT_EQ(project(m, {4, 4}, p).memory_bytes, double(estimate_memory_bytes(m, {4, 4})));
}

TEST(Project, ComputeBoundTimeFollowsTheFlopCount) {
  const ProjectionProfile p = a100();
  const Topology t{8, 8};
  double last_time = 0, last_flops = 0;
  for (int64_t seq : {131072, 262144, 524288}) {
    const RunConfig c = attention_point(seq);
    const StepProjection s = project(c, t, p);
    EXPECT_EQ(s.bound, "compute") << seq;
    const double flops = step_flops(c).attention;
    if (last_time > 0) {
      EXPECT_NEAR(s.total.seconds() / last_time, flops / last_flops, 0.02 * flops / last_flops) << seq;
    }
    last_time = s.total.seconds();
    last_flops = flops;
  }
}

// The LM head runs in the forward: three GEMMs of rows × vocab × d_model with the
// backward (logits, dL/dy, the head's gradient), one without, in the gemm term.
TEST(Project, TheLmHeadAddsItsGemmsToTheForward) {
  const ProjectionProfile p = a100();
  const Topology t{8, 8};
  RunConfig c;
  c.model = {"llama-3-8b", 2, 4096, 32, 8, 128, 14336, 1e-5, 500000.0};
  c.run.dtype = DType::bf16;
  c.attention.backend = "ring";
  c.sequence.length = 65536;
  const KernelRates rates(p, c.run.dtype);
  const double rows = 65536.0 / 8, one = rates.gemm_seconds(rows, 128256, 4096);
  for (bool fwd_only : {false, true}) {
    c.run.fwd_only = fwd_only;
    c.model.vocab = 0;
    const StepProjection none = project(c, t, p);
    c.model.vocab = 128256;
    const StepProjection head = project(c, t, p);
    const double gemms =
        head.terms.at(schema::projected_term::gemm) - none.terms.at(schema::projected_term::gemm);
    EXPECT_NEAR(gemms, (fwd_only ? 1 : 3) * one, 1e-9 * one) << fwd_only;
    EXPECT_GT(head.phases.at(phase::forward) - none.phases.at(phase::forward), gemms) << fwd_only;
  }
}

// The GEMM phases split the GEMM term by pass: the forward's (the head's logits among
// them) and the backward's (the head's other two), adding up to it; a checkpointing
// recompute runs the forward's again, which the recompute term holds.
TEST(Project, TheGemmPhasesSplitTheGemmTermByPass) {
  const ProjectionProfile p = a100();
  const Topology t{8, 8};
  RunConfig c;
  c.model = {"llama-3-8b", 2, 4096, 32, 8, 128, 14336, 1e-5, 500000.0};
  c.model.vocab = 128256;
  c.run.dtype = DType::bf16;
  c.attention.backend = "ring";
  c.sequence.length = 65536;
  const KernelRates rates(p, c.run.dtype);
  const double head = rates.gemm_seconds(65536.0 / 8, 128256, 4096);
  const StepProjection plain = project(c, t, p);
  const double fwd = plain.phases.at(phase::gemm_fwd), bwd = plain.phases.at(phase::gemm_bwd);
  const double gemm = plain.terms.at(schema::projected_term::gemm);
  EXPECT_NEAR(fwd + bwd, gemm, 1e-12 * gemm);
  EXPECT_NEAR(bwd, 2 * fwd, 1e-12 * gemm);  // each forward GEMM's two gradients, the head's too
  EXPECT_LT(fwd, plain.phases.at(phase::forward));
  c.run.checkpointing = Checkpointing::full;
  const StepProjection full = project(c, t, p);
  EXPECT_NEAR(full.phases.at(phase::gemm_fwd), 2 * fwd - head, 1e-12 * gemm);
  EXPECT_NEAR(full.phases.at(phase::gemm_bwd), bwd, 1e-12 * gemm);
  c.run.fwd_only = true;
  c.run.checkpointing = Checkpointing::none;
  const StepProjection forward_only = project(c, t, p);
  EXPECT_NEAR(forward_only.phases.at(phase::gemm_fwd), fwd, 1e-12 * gemm);
  EXPECT_EQ(forward_only.phases.at(phase::gemm_bwd), 0);
}

TEST(Project, APointTurnsLinkBoundAsTheLinkSlows) {
  ProjectionProfile p = a100();
  const RunConfig c = attention_point(262144);
  // Two nodes of 8: the ring crosses nodes twice per round.
  const Topology two_nodes{16, 8};
  ASSERT_EQ(project(c, two_nodes, p).bound, "compute");
  double last = project(c, two_nodes, p).total.seconds();
  std::string bound;
  for (double bw = p.inter.bandwidth_gb_s; bw > 0.01 && bound != "inter-node link"; bw /= 2) {
    p.inter.bandwidth_gb_s = bw;
    const StepProjection s = project(c, two_nodes, p);
    EXPECT_GE(s.total.seconds(), last * (1 - 1e-12));
    last = s.total.seconds();
    bound = s.bound;
  }
  EXPECT_EQ(bound, "inter-node link");

  // One node: the intra-node link.
  p = a100();
  const Topology one_node{8, 8};
  ASSERT_EQ(project(c, one_node, p).bound, "compute");
  for (double bw = p.intra.bandwidth_gb_s; bw > 0.01 && bound != "intra-node link"; bw /= 2) {
    p.intra.bandwidth_gb_s = bw;
    bound = project(c, one_node, p).bound;
  }
  EXPECT_EQ(bound, "intra-node link");
}

// A `minictx bench` file as a calibration: the peak is its highest GEMM rate, the GEMM
// curve its gemm rows, the attention tables its attention rows by head dim, length and
// mask (the backward from the forward+backward row's time beyond the forward's), the
// element-wise kernels their measured rates.
TEST(Project, CalibrationReadsTheBenchRows) {
  KernelBenchResult r;
  r.calibration_gflops = 80;
  r.calibration_after_gflops = 70;
  auto row = [&](const std::string& kind, int64_t s, int d, bool causal, double seconds, double gflops) {
    KernelBenchRow x;
    x.kind = kind;
    x.seq_len = s;
    x.head_dim = d;
    x.causal = causal;
    x.seconds = seconds;
    x.gflops = gflops;
    x.calibration_gflops = 75;
    r.rows.push_back(x);
  };
  row("sgemm", 1024, 0, false, 0.03, 80);
  row("gemm", 256, 0, false, 0.001, 60);
  row("gemm", 1024, 0, false, 0.02, 100);  // the highest rate: the peak
  for (bool causal : {true, false})
    for (int64_t s : {512, 2048}) {
      const double f = causal ? 20 : 40;            // forward GFLOP/s
      const double t = (s == 512 ? 0.001 : 0.016);  // forward seconds
      row("attn_fwd", s, 64, causal, t, s == 512 ? f : 2 * f);
      row("attn_fwd_bwd", s, 64, causal, 3 * t, 10);  // the backward: 2.5 F in 2 t
    }
  KernelBenchRow ew;
  ew.kind = "elementwise";
  ew.kernel = "rope";
  ew.seq_len = 1024;
  ew.bytes = 2e6;
  ew.seconds = 1e-3;  // 2 GB/s
  r.rows.push_back(ew);

  const auto file = std::filesystem::temp_directory_path() / "minictx_test_calibration.h5";
  write_kernel_bench(file.string(), Provenance{}, KernelBenchOptions{}, r, true);
  ProjectionProfile p = shipped("generic-cpu");
  apply_calibration(p, file.string());
  EXPECT_DOUBLE_EQ(p.peak_tflops.at("fp32"), 0.1);
  EXPECT_DOUBLE_EQ(p.gemm.at(256), 0.6);
  EXPECT_DOUBLE_EQ(p.gemm.at(1024), 1.0);
  const AttentionEfficiency& e = p.attention;
  EXPECT_EQ(e.length, (std::vector<double>{512, 2048}));
  EXPECT_DOUBLE_EQ(e.at(false, true, 64, 512), 0.2);
  EXPECT_DOUBLE_EQ(e.at(false, true, 64, 2048), 0.4);
  EXPECT_DOUBLE_EQ(e.at(false, false, 64, 512), 0.4);
  EXPECT_DOUBLE_EQ(e.at(false, false, 64, 1024), 0.6);  // halfway in log2
  EXPECT_DOUBLE_EQ(e.at(true, true, 64, 512), 2.5 * 0.2 / 2);
  EXPECT_DOUBLE_EQ(e.at(true, false, 64, 2048), 2.5 * 0.8 / 2);
  EXPECT_DOUBLE_EQ(p.elementwise_gb_s.at("rope"), 2.0);
  EXPECT_NE(p.sources.at("attention_block_size").find("measured"), std::string::npos);
  // The element-wise time of a call is its bytes at that rate (plus the call).
  const KernelRates rates(p, DType::f32);
  EXPECT_NEAR(rates.elementwise_seconds({Elementwise::rope, 1000, 1000}),
              8e6 / 2e9 + p.call_overhead_us * 1e-6, 1e-12);
  std::filesystem::remove(file);
}

// A transfer posted before a kernel: the fraction `overlap` of it runs under the kernel,
// the rest after it; the longer of the kernel and the overlapped part counts against
// what it was, the rest against the link.
TEST(Project, TransferOverlapsTheKernelByItsFraction) {
  EXPECT_DOUBLE_EQ(overlapped(3, 2, Bound::intra, 1).seconds(), 3);
  EXPECT_DOUBLE_EQ(overlapped(3, 2, Bound::intra, 1).intra, 0);
  EXPECT_DOUBLE_EQ(overlapped(2, 3, Bound::intra, 1).seconds(), 3);
  EXPECT_DOUBLE_EQ(overlapped(2, 3, Bound::intra, 1).intra, 3);
  EXPECT_DOUBLE_EQ(overlapped(3, 2, Bound::inter, 0).seconds(), 5);
  EXPECT_DOUBLE_EQ(overlapped(3, 2, Bound::inter, 0).inter, 2);
  EXPECT_DOUBLE_EQ(overlapped(3, 2, Bound::intra, 0.5).seconds(), 4);  // 1 under the kernel, 1 after
  EXPECT_DOUBLE_EQ(overlapped(1, 4, Bound::intra, 0.5).seconds(), 4);  // 2 under (longer), 2 after
  EXPECT_DOUBLE_EQ(overlapped(1, 4, Bound::intra, 0.5).compute, 0);
}

// Without overlap (a host MPI without asynchronous progress) every ring step waits for its
// transfer after the kernel: the step time grows by the transfers, bytes unchanged.
TEST(Project, NoOverlapAddsTheTransfers) {
  ProjectionProfile p = a100();
  const RunConfig c = attention_point(262144);
  const Topology t{8, 8};
  const StepProjection full = project(c, t, p);
  p.intra.overlap = 0;
  const StepProjection none = project(c, t, p);
  EXPECT_GT(none.total.seconds(), full.total.seconds());
  EXPECT_NEAR(none.total.seconds() - full.total.seconds(), none.total.intra - full.total.intra, 1e-12);
  EXPECT_EQ(none.total.bytes_intra, full.total.bytes_intra);
}

// The gradient sums: after the backward all of them are exposed; overlapped, what the link
// can move under the backward of the layers below is hidden, but never the last layer's
// sum. Bytes are the same either way.
TEST(Project, OverlappedGradientSumsHideUnderTheLayersBelow) {
  ProjectionProfile p = a100();
  RunConfig c = attention_point(32768);
  c.run.mode = Mode::model;
  c.model.layers = 4;
  c.model.d_model = 4096;
  c.model.ffn_hidden = 11008;
  const Topology t{8, 8};
  c.run.grad_reduce = GradReduce::after_backward;
  const StepProjection after = project(c, t, p);
  c.run.grad_reduce = GradReduce::overlap;
  const StepProjection hidden = project(c, t, p);
  const double all = after.phases.at("grad_allreduce"), left = hidden.phases.at("grad_allreduce");
  ASSERT_GT(all, 0);
  // Every layer's sum is shorter than a layer's backward here: only the last stays.
  EXPECT_NEAR(left, all / c.model.layers, 1e-12 * all);
  EXPECT_NEAR(after.total.seconds() - hidden.total.seconds(), all - left, 1e-9 * all);
  EXPECT_EQ(hidden.total.bytes_intra, after.total.bytes_intra);
  // A link that moves nothing under a kernel hides nothing.
  p.intra.overlap = 0;
  EXPECT_NEAR(project(c, t, p).phases.at("grad_allreduce"), all, 1e-12 * all);
}

// Packed documents: the attention time follows the work the documents leave (half of it
// with two documents of S/2: the rate stays), and many short documents run at the
// efficiency of their length, with a kernel call each.
TEST(Project, PackedDocumentsSetTheAttentionWork) {
  const ProjectionProfile p = a100();
  for (const char* backend : {"ring", "allgather"}) {
    const Topology t{8, 8};
    RunConfig whole = attention_point(1 << 20);
    whole.attention.backend = backend;
    RunConfig halves = whole;
    halves.sequence.documents.lengths = {{1 << 19, 1 << 19}};
    const double ratio = project(halves, t, p).total.seconds() / project(whole, t, p).total.seconds();
    ASSERT_DOUBLE_EQ(step_flops(halves).attention / step_flops(whole).attention, 0.5);
    EXPECT_NEAR(ratio, 0.5, 0.02) << backend;
  }
  // On one device (no transfers to hide under), pieces of 512 rows run at the profile's
  // causal factor at 512 against that of 16k and beyond, and launch once per document.
  RunConfig whole = attention_point(1 << 16);
  whole.attention.backend = "local";
  RunConfig short_docs = whole;
  short_docs.sequence.documents.lengths = {std::vector<int64_t>(1 << 7, 1 << 9)};
  auto seconds_per_flop = [&](const RunConfig& c) {
    return project(c, {1, 1}, p).total.seconds() / step_flops(c).attention;
  };
  const double slower = seconds_per_flop(short_docs) / seconds_per_flop(whole);
  EXPECT_GT(slower, 0.91 / 0.54);
  EXPECT_LT(slower, 0.91 / 0.54 * 1.5);  // launch overhead included
}

// Shorter ring blocks run at a lower efficiency: at a fixed FLOP count per step the time
// grows as the blocks shrink, by the profile's length factors (causal zigzag on 8 ranks:
// diagonal blocks of S/8 and off-diagonal halves).
TEST(Project, ShortBlocksRunSlowerPerFlop) {
  const ProjectionProfile p = a100();
  const Topology t{8, 8};
  auto seconds_per_flop = [&](int64_t seq) {
    const RunConfig c = attention_point(seq);
    return project(c, t, p).total.seconds() / step_flops(c).attention;
  };
  const double long_blocks = seconds_per_flop(262144), short_blocks = seconds_per_flop(4096);
  // Blocks of 32k against blocks of 512 (diagonal) and 256 x 512 (off-diagonal).
  EXPECT_GT(short_blocks / long_blocks, 1.0 / 0.85);
  EXPECT_LT(short_blocks / long_blocks, 0.91 / 0.54 * 1.5);  // launch overhead included
}

// The sweep the issue asks for reaches 1M tokens on 1024 devices: the walk is replayed
// step by step (1024 x 1024 active-block rules per pass), so check it stays whole there.
// Its time (well under a second in a Release build) is in docs/projection.md, "The model", not asserted here.
TEST(Project, ReachesAMillionTokensOnAThousandDevices) {
  const ProjectionProfile p = a100();
  RunConfig c = attention_point(1 << 20);
  c.run.mode = Mode::model;
  c.run.checkpointing = Checkpointing::selective;
  c.attention.backend = "burst";
  const StepProjection s = project(c, {1024, 8}, p);
  EXPECT_GT(s.total.seconds(), 0);
  EXPECT_GT(s.total.bytes_intra, 0);
  EXPECT_GT(s.total.bytes_inter, 0);
}

}  // namespace
}  // namespace minictx
