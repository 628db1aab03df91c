#include "bench/kernel_bench_writer.hpp"

#include <functional>

#include "core/error.hpp"
#include "io/hdf5_util.hpp"
#include "io/output_file.hpp"
#include "io/results_writer.hpp"

namespace minictx {

namespace {

// The file: the provenance and /bench, its attributes by `attributes`, one 1-D dataset per
// column of the rows (outputs/README.md, "Benchmark files").
void write_bench_file(const std::string& path, const Provenance& prov, const KernelBenchResult& result,
                      bool overwrite, const std::function<void(hid_t)>& attributes) {
  h5::QuietErrors quiet;
  const std::string image = h5::file_image([&](hid_t file) {
    write_provenance(file, prov);
    h5::Handle b = h5::create_group(file, "bench");
    h5::write_attribute(b.get(), "calibration_gflops", result.calibration_gflops);
    h5::write_attribute(b.get(), "calibration_after_gflops", result.calibration_after_gflops);
    h5::write_attribute(b.get(), "ranks", int64_t(result.ranks));
    attributes(b.get());

    std::vector<std::string> kind, kernel;
    std::vector<double> seq_len, head_dim, seconds, gflops, calibration, fraction, tracked, rss, share, bytes;
    std::vector<int8_t> causal;
    for (const KernelBenchRow& r : result.rows) {
      kind.push_back(r.kind);
      kernel.push_back(r.kernel);
      bytes.push_back(r.bytes);
      seq_len.push_back(double(r.seq_len));
      head_dim.push_back(double(r.head_dim));
      causal.push_back(r.causal ? 1 : 0);
      seconds.push_back(r.seconds);
      gflops.push_back(r.gflops);
      calibration.push_back(r.calibration_gflops);
      fraction.push_back(r.fraction);
      tracked.push_back(r.peak_tracked_bytes);
      rss.push_back(r.peak_rss_bytes);
      share.push_back(r.core_share);
    }
    const std::vector<hsize_t> n{result.rows.size()};
    h5::write_strings(b.get(), "kind", kind);
    h5::write_doubles(b.get(), "seq_len", seq_len, n);
    h5::write_doubles(b.get(), "head_dim", head_dim, n);
    h5::write_int8s(b.get(), "causal", causal);
    h5::write_doubles(b.get(), "seconds", seconds, n);
    h5::write_doubles(b.get(), "gflops", gflops, n);
    h5::write_doubles(b.get(), "calibration_gflops", calibration, n);
    h5::write_doubles(b.get(), "fraction_of_calibration", fraction, n);
    h5::write_doubles(b.get(), "peak_tracked_bytes", tracked, n);
    h5::write_doubles(b.get(), "peak_rss_bytes", rss, n);
    h5::write_doubles(b.get(), "core_share", share, n);
    h5::write_strings(b.get(), "kernel", kernel);
    h5::write_doubles(b.get(), "bytes", bytes, n);
    b.close("write " + path);
  });
  write_output_file(path, "results file", overwrite, image,
                    "results file " + path + " exists; pass --force to replace it");
}

}  // namespace

void write_kernel_bench(const std::string& path, const Provenance& prov, const KernelBenchOptions& opt,
                        const KernelBenchResult& result, bool overwrite) {
  write_bench_file(path, prov, result, overwrite, [&](hid_t b) {
    h5::write_attribute(b, "device", "kokkos");
    h5::write_attribute(b, "clock", opt.clock == BenchClock::cpu ? "cpu" : "wall");
    h5::write_attribute(b, "attention_heads", int64_t(opt.heads));
    h5::write_attribute(b, "block_q", int64_t(opt.block_q));
    h5::write_attribute(b, "block_k", int64_t(opt.block_k));
    const ModelShape& m = opt.layer_model;
    h5::write_attribute(b, "layer_model",
                        "layers=" + std::to_string(m.layers) + " d_model=" + std::to_string(m.d_model) +
                            " heads=" + std::to_string(m.heads) + " kv_heads=" + std::to_string(m.kv_heads) +
                            " head_dim=" + std::to_string(m.head_dim) +
                            " ffn_hidden=" + std::to_string(m.ffn_hidden));
  });
}

void write_device_bench(const std::string& path, const Provenance& prov, const DeviceBenchOptions& opt,
                        const std::string& device, const KernelBenchResult& result, bool overwrite) {
  write_bench_file(path, prov, result, overwrite, [&](hid_t b) {
    h5::write_attribute(b, "device", device);
    h5::write_attribute(b, "clock", "wall");
    h5::write_attribute(b, "dtype", to_string(opt.dtype));
    h5::write_attribute(b, "attention_heads", int64_t(opt.heads));
    h5::write_attribute(b, "batch", int64_t(1));
    h5::write_attribute(b, "calibration_side", opt.calibration_side);
    h5::write_attribute(b, "min_reps", int64_t(opt.min_reps));
    h5::write_attribute(b, "min_seconds", opt.min_seconds);
  });
}

}  // namespace minictx
