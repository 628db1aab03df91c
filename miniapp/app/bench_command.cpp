#include "app/bench_command.hpp"

#include <mpi.h>

#include <cstdio>

#include "app/agree.hpp"
#include "app/output_path.hpp"
#include "app/provenance.hpp"
#include "bench/comm_bench.hpp"
#include "bench/device_bench.hpp"
#include "bench/kernel_bench.hpp"
#include "bench/kernel_bench_writer.hpp"
#include "comm/mpi_comm.hpp"
#include "core/error.hpp"
#include "device/device.hpp"
#include "report/table.hpp"

namespace minictx {
namespace {

// The deck's attention.kernels values, "auto | sm80 | ...".
std::string kernel_family_choices() {
  std::string s;
  for (int i = 0; i < enum_size(AttentionKernels{}); ++i)
    s += std::string(i ? " | " : "") + to_string(AttentionKernels(i));
  return s;
}

void check_options(const KernelBenchOptions& o, const std::string& mask, const std::string& clock) {
  auto positive = [](const char* name, int64_t v) {
    if (v < 1) input_error(std::string(name) + " must be at least 1, got " + std::to_string(v));
  };
  for (int64_t s : o.seq_lens) positive("--seq", s);
  for (int d : o.head_dims) positive("--head-dim", d);
  for (int64_t s : o.memory_seq_lens) positive("--memory-seq", s);
  for (int64_t s : o.gemm_sizes) positive("--gemm-sizes", s);
  positive("--heads", o.heads);
  positive("--block-q", o.block_q);
  positive("--block-k", o.block_k);
  positive("--layer-seq", o.layer_seq_len);
  if (clock != "wall" && clock != "cpu") input_error("--clock must be wall or cpu, not '" + clock + "'");
  if (mask != "causal" && mask != "full" && mask != "both")
    input_error("--mask must be causal, full or both, not '" + mask + "'");
}

std::vector<std::string> table_row(const KernelBenchRow& r) {
  const double mb = 1 << 20;
  const bool ew = r.kind == "elementwise";
  return {ew ? r.kind + " " + r.kernel : r.kind,
          std::to_string(r.seq_len),
          r.head_dim ? std::to_string(r.head_dim) : "-",
          r.head_dim ? (r.causal ? "yes" : "no") : "-",
          format_number(r.seconds * 1e3, 1),
          ew ? "-" : format_number(r.gflops, 2),
          ew ? format_number(r.bytes / r.seconds / 1e9, 2) : "-",
          format_number(r.calibration_gflops, 2),
          ew ? "-" : format_number(100.0 * r.fraction, 1) + " %",
          format_number(r.peak_tracked_bytes / mb, 1),
          format_number(r.peak_rss_bytes / mb, 1),
          format_number(r.core_share, 2)};
}

const std::vector<std::string> kHeader = {"kind",
                                          "S",
                                          "D",
                                          "causal",
                                          "time (ms)",
                                          "GFLOP/s",
                                          "GB/s",
                                          "calibration GFLOP/s",
                                          "of calibration",
                                          "peak tracked MB",
                                          "peak RSS MB",
                                          "core share"};

// The device bench's table: one row per attention measurement, its rate against the
// calibration GEMM of the same run (tools/compare-attention-gpu.py reads this table).
Table device_table(const KernelBenchResult& result) {
  Table t;
  t.header = {"S", "mask", "D", "pass", "time (ms)", "TFLOPS", "of GEMM"};
  for (const KernelBenchRow& r : result.rows) {
    if (r.kind != "attn_fwd" && r.kind != "attn_fwd_bwd") continue;
    t.rows.push_back({std::to_string(r.seq_len), r.causal ? "causal" : "full", std::to_string(r.head_dim),
                      r.kind == "attn_fwd" ? "fwd" : "fwd+bwd", format_number(r.seconds * 1e3, 3),
                      format_number(r.gflops / 1e3, 1), format_number(r.fraction, 3)});
  }
  return t;
}

}  // namespace

BenchCommand::BenchCommand(CLI::App& app) {
  cmd_ = app.add_subcommand(
      "bench",
      "measure sgemm calibration, attention, GEMM and element-wise kernels and a layer step on "
      "every rank at once (one rank: one core); with --device cuda, the GPU's attention forward and "
      "forward+backward against a GEMM calibration");
  cmd_->add_option("--device", device_,
                   "kokkos (the host kernels, GEMM and layer step) | cuda (attention against a bf16 GEMM on "
                   "the GPU: S 4096,16384,32768,65536, D 64,128, 16 heads unless given)");
  seq_opt_ = cmd_->add_option("--seq", opt_.seq_lens, "attention lengths S")->delimiter(',');
  head_dim_opt_ = cmd_->add_option("--head-dim", opt_.head_dims, "attention head dims")->delimiter(',');
  cmd_->add_option("--mask", mask_, "causal | full | both");
  heads_opt_ = cmd_->add_option("--heads", opt_.heads, "attention heads (= kv heads)");
  cmd_->add_option("--dtype", dtype_,
                   "with --device cuda: bf16 | fp16 | fp32, attention and calibration GEMM");
  cmd_->add_option("--kernels", kernels_,
                   "with --device cuda: the flash kernel family, as the deck's attention.kernels (" +
                       kernel_family_choices() + ")");
  cmd_->add_option("--calibration-size", calibration_side_,
                   "with --device cuda: side of the square calibration GEMM");
  cmd_->add_option("--block-q", opt_.block_q, "query tile of the kernel");
  cmd_->add_option("--block-k", opt_.block_k, "key tile of the kernel");
  cmd_->add_option("--memory-seq", opt_.memory_seq_lens, "lengths of the memory rows")->delimiter(',');
  cmd_->add_option("--layer-seq", opt_.layer_seq_len,
                   "sequence length of the layer step (and the rows of the element-wise rows)");
  cmd_->add_option("--gemm-sizes", opt_.gemm_sizes, "sides of the square sgemm rows")->delimiter(',');
  min_seconds_opt_ =
      cmd_->add_option("--min-seconds", opt_.min_seconds, "repeat a shape until this much time was spent");
  cmd_->add_option("--clock", clock_,
                   "wall | cpu (thread CPU time: leaves out other load on a shared machine)");
  cmd_->add_option("-o,--output", output_, "write the rows to this HDF5 file");
  cmd_->add_flag("--force", force_, "replace an existing output file");
  cmd_->add_flag(
      "--comm", comm_,
      "measure the comm instead (2+ ranks): exchange bandwidth and latency per link class, all-to-all, "
      "all-reduce; the file is a calibration for `minictx project --calibration`");
  cmd_->add_option("--ranks-per-node", ranks_per_node_, "with --comm: emulate nodes of this many ranks");
  cmd_->add_option("--sizes", comm_sizes_, "with --comm: message sizes in bytes")->delimiter(',');
}

int BenchCommand::run_comm(const std::string& command_line) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    if (device_ != "kokkos") input_error("--comm measures MPI between host buffers; --device does not apply");
    for (double s : comm_sizes_)
      if (!(s >= 4)) input_error("--sizes must be at least 4 bytes, got " + std::to_string(s));
    if (comm_sizes_.size() < 2) input_error("--sizes needs two sizes or more (latency and bandwidth)");
    auto world = MpiComm::world(ranks_per_node_);
    if (world->size() < 2) input_error("bench --comm needs at least 2 ranks (mpiexec -n 2 or more)");
    // Rank 0 writes the file: its name is checked before the bench, and every rank learns the answer.
    if (!agree([&] {
          if (rank == 0 && !output_.empty()) prepare_output_path(output_, force_, "results file");
        }))
      return 2;
    auto device = make_host_device(world->topology());
    const Provenance prov = collect_provenance(*world, *device, command_line, "");
    const CommBenchResult r = run_comm_bench(*world, comm_sizes_, opt_.min_seconds);
    if (rank != 0) return 0;
    Table t;
    t.header = {"kind", "link", "bytes", "time (us)", "GB/s"};
    for (const auto& row : r.rows)
      t.rows.push_back({row.kind, row.link, format_number(row.bytes, 0), format_number(row.seconds * 1e6, 2),
                        format_number(row.gb_s, 3)});
    std::printf("%s", render(t, TableFormat::markdown).c_str());
    for (const auto& [name, link] : {std::pair{"intra", r.intra}, std::pair{"inter", r.inter}})
      if (link.measured)
        std::printf(
            "%s-node link: latency %.2f us, bandwidth %.3f GB/s per direction, %.0f %% of a transfer under a "
            "kernel\n",
            name, link.latency_us, link.bandwidth_gb_s, 100.0 * link.overlap);
    if (!output_.empty()) {
      write_comm_bench(output_, prov, r, force_);
      std::printf("calibration: %s\n", output_.c_str());
    }
  } catch (const Error& e) {
    if (rank == 0) std::fprintf(stderr, "minictx: error: %s\n", e.what());
    return 2;
  }
  return 0;
}

DeviceBenchOptions BenchCommand::device_options() const {
  DeviceBenchOptions o;
  if (seq_opt_->count()) o.seq_lens = opt_.seq_lens;
  if (head_dim_opt_->count()) o.head_dims = opt_.head_dims;
  if (heads_opt_->count()) o.heads = opt_.heads;
  if (min_seconds_opt_->count()) o.min_seconds = opt_.min_seconds;
  if (mask_ == "causal") o.causal = {true};
  if (mask_ == "full") o.causal = {false};
  if (!parse_enum(dtype_, o.dtype)) input_error("--dtype must be bf16, fp16 or fp32, not '" + dtype_ + "'");
  if (!parse_enum(kernels_, o.kernels))
    input_error("--kernels must be one of " + kernel_family_choices() + ", not '" + kernels_ + "'");
  o.calibration_side = calibration_side_;
  return o;
}

int BenchCommand::run_device(const std::string& command_line) {
  const int rank = world_rank();
  std::unique_ptr<Comm> world;
  std::unique_ptr<Device> device;
  DeviceBenchOptions opt;
  DeviceKind kind{};
  try {
    if (!parse_enum(device_, kind)) input_error("--device must be kokkos or cuda, not '" + device_ + "'");
    check_options(opt_, mask_, clock_);
    // The host bench's own rows and clock have no counterpart here: refused, not ignored.
    for (const char* name :
         {"--memory-seq", "--layer-seq", "--gemm-sizes", "--block-q", "--block-k", "--clock"})
      if (cmd_->count(name))
        input_error(std::string(name) + " applies to the host bench, not --device " + device_);
    if (calibration_side_ < 1)
      input_error("--calibration-size must be at least 1, got " + std::to_string(calibration_side_));
    opt = device_options();
    world = MpiComm::world(0);
  } catch (const Error& e) {
    return input_error_exit(e.what());
  }
  // The device may fail on one rank only (no GPU there): every rank learns it.
  if (!agree([&] {
        device = make_device(kind, world->topology());
        device->configure({opt.dtype, opt.kernels, AttentionPartials::fp32});
      }))
    return 2;
  if (!agree([&] { check_device_bench_memory(opt, *world, *device); })) return 2;
  Provenance prov;
  try {
    prov = collect_provenance(*world, *device, command_line, "");
  } catch (const Error& e) {
    return input_error_exit(e.what());
  }
  if (!agree([&] {
        if (rank == 0 && !output_.empty()) prepare_output_path(output_, force_, "results file");
      }))
    return 2;
  try {
    if (rank == 0) {
      std::printf(
          "minictx bench on %s\nattention in %s, %d heads, batch 1, each row the best of %d calls or more "
          "(and "
          "%.3g s) after one warm-up, wall clock from an idle device to an idle device%s\n",
          device->description().c_str(), to_string(opt.dtype), opt.heads, opt.min_reps, opt.min_seconds,
          world->size() > 1 ? ", every rank at once (each row the slowest rank's)" : "");
      std::fflush(stdout);
    }
    const KernelBenchResult result = run_device_bench(opt, *world, *device, [rank](const KernelBenchRow& r) {
      if (rank != 0) return;
      if (r.head_dim == 0)
        std::printf("%-12s %lld^3 %10.3f ms %8.1f TFLOPS\n", r.kind.c_str(),
                    static_cast<long long>(r.seq_len), r.seconds * 1e3, r.gflops / 1e3);
      else
        std::printf("%-12s S=%-6lld D=%-3d causal=%d %10.3f ms %8.1f TFLOPS %6.1f %% of the GEMM\n",
                    r.kind.c_str(), static_cast<long long>(r.seq_len), r.head_dim, int(r.causal),
                    r.seconds * 1e3, r.gflops / 1e3, 100.0 * r.fraction);
      std::fflush(stdout);
    });
    if (rank != 0) return 0;
    std::printf(
        "\n%s\ncalibration: %s GEMM %lld^3 through the device (cuBLASLt on cuda, fp32 operands "
        "converted per call): %.1f TFLOPS at the start, %.1f TFLOPS at the end\n",
        render(device_table(result), TableFormat::markdown).c_str(), to_string(opt.dtype),
        static_cast<long long>(opt.calibration_side), result.calibration_gflops / 1e3,
        result.calibration_after_gflops / 1e3);
    if (!output_.empty()) {
      write_device_bench(output_, prov, opt, device->name(), result, force_);
      std::printf("results: %s\n", output_.c_str());
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "minictx: error: %s\n", e.what());
    return 2;
  }
  return 0;
}

int BenchCommand::run(const std::string& command_line) {
  if (comm_) return run_comm(command_line);
  if (device_ != "kokkos") return run_device(command_line);
  for (const char* name : {"--dtype", "--kernels", "--calibration-size"})
    if (cmd_->count(name)) return input_error_exit(std::string(name) + " applies to --device cuda only");
  int world_size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // The checks give the same answer on every rank, so each rank exits alike; the output
  // path, which rank 0 alone prepares, is agreed on.
  auto error = [&](const std::string& what) {
    if (rank == 0) std::fprintf(stderr, "minictx: error: %s\n", what.c_str());
    return 2;
  };
  std::unique_ptr<Comm> world;
  std::unique_ptr<Device> device;
  Provenance prov;
  try {
    check_options(opt_, mask_, clock_);
    opt_.clock = clock_ == "cpu" ? BenchClock::cpu : BenchClock::wall;
    if (mask_ == "causal") opt_.causal = {true};
    if (mask_ == "full") opt_.causal = {false};
    world = MpiComm::world(0);
    device = make_host_device(world->topology());
    check_kernel_bench_memory(opt_, *world, *device);
    prov = collect_provenance(*world, *device, command_line, "");
  } catch (const Error& e) {
    return error(e.what());
  }
  if (!agree([&] {
        if (rank == 0 && !output_.empty())
          prepare_output_path(output_, force_, "results file");  // before the bench
      }))
    return 2;
  try {
    if (rank == 0) {
      std::printf("minictx bench on %s", device->description().c_str());
      if (world_size > 1)
        std::printf(", %d ranks measuring at once (each row the slowest rank's)", world_size);
      std::printf("\n");
      std::fflush(stdout);
    }
    const KernelBenchResult result = run_kernel_bench(opt_, *world, *device, [rank](const KernelBenchRow& r) {
      if (rank != 0) return;
      if (r.kind == "elementwise")
        std::printf("%-12s %-11s rows=%-6lld %8.2f ms %8.2f GB/s, core share %.2f\n", r.kind.c_str(),
                    r.kernel.c_str(), static_cast<long long>(r.seq_len), r.seconds * 1e3,
                    r.bytes / r.seconds / 1e9, r.core_share);
      else
        std::printf(
            "%-12s S=%-6lld D=%-3d causal=%d %10.1f ms %8.2f GFLOP/s %6.1f %% of calibration, core share "
            "%.2f\n",
            r.kind.c_str(), static_cast<long long>(r.seq_len), r.head_dim, int(r.causal), r.seconds * 1e3,
            r.gflops, 100.0 * r.fraction, r.core_share);
      std::fflush(stdout);
    });
    if (rank != 0) return 0;
    Table t;
    t.header = kHeader;
    for (const auto& r : result.rows) t.rows.push_back(table_row(r));
    std::printf("\n%s\ncalibration (%s clock): %.2f GFLOP/s at the start, %.2f GFLOP/s at the end\n",
                render(t, TableFormat::markdown).c_str(), clock_.c_str(), result.calibration_gflops,
                result.calibration_after_gflops);
    if (!output_.empty()) {
      write_kernel_bench(output_, prov, opt_, result, force_);
      std::printf("results: %s\n", output_.c_str());
    }
  } catch (const Error& e) {
    return error(e.what());
  }
  return 0;
}

}  // namespace minictx
