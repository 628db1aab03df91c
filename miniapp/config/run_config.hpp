#pragma once
#include <cstdint>
#include <string>

namespace minictx {

enum class Mode { attention, model };
enum class Checkpointing { none, full, selective, selective_half };
enum class DType { f32, bf16, f16 };

const char* to_string(Mode);
const char* to_string(Checkpointing);
const char* to_string(DType);

// Shape of the decoder layer stack (Llama style, GQA).
struct ModelShape {
  std::string preset;  // name of the preset the values came from, or "custom"
  int layers = 2;
  int d_model = 256;
  int heads = 8;
  int kv_heads = 4;
  int head_dim = 32;
  int ffn_hidden = 688;
  double rms_eps = 1e-5;
  double rope_theta = 10000.0;

  // Parameters of the layer stack (norm gains included), as counted in MFU; saturates at
  // kSaturated (core/saturating.hpp) rather than overflow.
  int64_t n_params() const;
};

struct SequenceConfig {
  int64_t length = 1000;  // global tokens per sequence, before any padding
  int batch = 1;          // sequences per step (micro batch)
};

struct AttentionConfig {
  std::string backend = "local";
  bool causal = true;
  std::string ring_type = "basic";  // basic | zigzag | stripe
  int ulysses_degree = 1;           // usp, double_ring, burst(intra ulysses)
  int ring_degree = 0;              // 0 = world / ulysses_degree
  int window_size = 0;              // double_ring inner ring; 0 = ranks per node
  std::string intra = "ring";       // burst: ring | ulysses
  std::string bwd_comm = "q";       // burst: q (BurstAttention backward) | kv (ring backward)
  int block_q = 256;                // tile sizes of the block kernel (README, Performance)
  int block_k = 512;
};

struct RunSettings {
  Mode mode = Mode::model;
  bool fwd_only = false;
  int warmup = 1;
  int iters = 3;
  Checkpointing checkpointing = Checkpointing::none;
  DType dtype = DType::f32;
  std::string device = "kokkos";  // kokkos | cuda
  std::string comm = "mpi";       // mpi | nccl
  uint64_t seed = 1234;
  bool verify = false;
  std::string reference = "fp64";  // fp64 | single-device
  // A rank waiting longer than this in one communication call aborts the job (0 = never;
  // -1 = ten times the slowest step so far, at least 300 s): comm/watchdog.hpp.
  double watchdog_seconds = -1;
};

struct MachineConfig {
  std::string profile = "generic-cpu";  // a file in inputs/machines/, or "measure"
  double peak_tflops = 0.0;             // per device; 0 = take it from the profile
  std::string name;                     // device name shown in reports (filled from the profile)
};

struct TopologyConfig {
  int ranks_per_node = 0;  // 0 = from MPI_COMM_TYPE_SHARED
};

struct OutputConfig {
  std::string file;  // empty = outputs/minictx-<date>-<time>.h5
  bool overwrite = false;
};

struct RunConfig {
  ModelShape model;
  SequenceConfig sequence;
  AttentionConfig attention;
  RunSettings run;
  MachineConfig machine;
  TopologyConfig topology;
  OutputConfig output;
};

}  // namespace minictx
