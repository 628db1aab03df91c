#pragma once
#include <cstdint>
#include <string>

#include "config/attention_window.hpp"
#include "config/backend_options.hpp"
#include "config/documents.hpp"
#include "core/dtype.hpp"
#include "core/enum_names.hpp"

namespace minictx {

enum class Mode { attention, model };
enum class Checkpointing { none, full, selective, selective_half };
enum class GradReduce { overlap, after_backward };  // when a layer's weight-gradient sum starts
enum class DeviceKind { kokkos, cuda };
enum class CommKind { mpi, nccl };
enum class Reference { fp64, single_device };
// The flash attention kernels on a GPU, one family per architecture as FlashAttention-3
// pairs an sm80 and an sm90 mainloop: auto takes the one measured fastest and VALID on the
// GPU at hand (docs/nvidia.md, "Kernel families"). The -documents variants mask packed
// documents inside the kernels instead of splitting blocks by document (opt-in);
// sm90-onepass pairs the sm90 forward with a backward of one kernel that forms dQ beside dK
// and dV (opt-in).
enum class AttentionKernels { automatic, sm80, sm90, sm80_documents, sm90_documents, sm90_onepass };
// How a block's attention result joins the running sums: fp32 keeps every partial in
// fp32; storage rounds each block's output, and its gradient contributions, to the run's
// dtype first, as a ring built on a kernel with 16-bit outputs does; accumulator also
// holds the running sums themselves in the run's dtype, rounded after every block, as a
// ring with a 16-bit running accumulator does (docs/algorithms.md, "The partials'
// precision").
enum class AttentionPartials { fp32, storage, accumulator };
// The precision of the layer stack's weight gradients, their accumulation over the
// backward and their sum over the group: fp32 buffers (Megatron's main_grad) or the run's
// dtype (docs/numerics.md, "Weight-gradient sums").
enum class GradReduceDtype { fp32, storage };
// The layer stack's element-wise and row kernels on a GPU (RMSNorm, RoPE, conversions,
// residual adds): standard, the set proven on GPUs, or tuned, the reworked set (a parallel
// RMSNorm gain gradient, positions kept on the device, RoPE in fp32, residuals in the GEMM
// epilogue): opt-in until a GPU proves it (docs/nvidia.md, "Layer kernels").
enum class LayerKernels { standard, tuned };

// The deck's spellings ("single-device"), so printed values paste back into a deck.
const char* to_string(Mode);
const char* to_string(Checkpointing);
const char* to_string(GradReduce);
const char* to_string(DType);
const char* to_string(DeviceKind);
const char* to_string(CommKind);
const char* to_string(Reference);
const char* to_string(AttentionKernels);
const char* to_string(AttentionPartials);
const char* to_string(GradReduceDtype);
const char* to_string(LayerKernels);

// How many values each enum has (its values are 0..n-1), for parsing by name.
constexpr int enum_size(Mode) { return 2; }
constexpr int enum_size(Checkpointing) { return 4; }
constexpr int enum_size(GradReduce) { return 2; }
constexpr int enum_size(DType) { return 3; }
constexpr int enum_size(DeviceKind) { return 2; }
constexpr int enum_size(CommKind) { return 2; }
constexpr int enum_size(Reference) { return 2; }
constexpr int enum_size(AttentionKernels) { return 6; }
constexpr int enum_size(AttentionPartials) { return 3; }
constexpr int enum_size(GradReduceDtype) { return 2; }
constexpr int enum_size(LayerKernels) { return 2; }

// Shape of the decoder layer stack (Llama style, GQA).
struct ModelShape {
  std::string preset;  // name of the preset the values came from, or "custom"
  int layers = 2;
  int d_model = 256;
  int heads = 8;
  int kv_heads = 4;
  int head_dim = 32;  // of queries and keys
  int ffn_hidden = 688;
  double rms_eps = 1e-5;
  double rope_theta = 10000.0;
  int head_dim_v = 0;  // of values (and the attention output); 0: head_dim (MLA: 128 against 192)
  // The LM head: an output projection [d_model, vocab] of the last layer's output and a
  // cross-entropy loss over generated labels (model mode); 0 = none, the loss a fixed
  // random projection of the output (docs/design.md, "The model").
  int vocab = 0;

  int value_dim() const { return head_dim_v > 0 ? head_dim_v : head_dim; }
  // Parameters of the layer stack (norm gains included) and the LM head, as counted in
  // MFU; saturates at kSaturated (core/saturating.hpp) rather than overflow. `sinks`: with
  // each layer's per-head sink logits (attention.sinks).
  int64_t n_params(bool sinks) const;
};

struct SequenceConfig {
  int64_t length = 1000;      // global tokens per sequence, before any padding
  int batch = 1;              // sequences per step (micro batch)
  DocumentPacking documents;  // none: each sequence is one document
};

struct AttentionConfig {
  std::string backend = "local";
  bool causal = true;
  int block_q = 256;  // tile sizes of the block kernel (docs/nvidia.md, "Tiles")
  int block_k = 512;
  AttentionKernels kernels = AttentionKernels::automatic;  // the cuda device's flash kernels
  AttentionPartials partials = AttentionPartials::fp32;
  AttentionWindow window;  // sliding windows per layer; none: every layer global
  // A learned logit per query head that joins every softmax denominator once, as gpt-oss's
  // attention sinks (docs/algorithms.md, "Attention sinks").
  bool sinks = false;
  // The keys a backend declares as its own (ring_type, ulysses_degree, window_size, ...):
  // BackendInfo::keys, read through the backend's accessors.
  BackendOptions options;
};

struct RunSettings {
  Mode mode = Mode::model;
  bool fwd_only = false;
  int warmup = 1;
  int iters = 3;
  Checkpointing checkpointing = Checkpointing::none;
  // overlap: each layer's gradients are summed over the group from the end of its
  // backward, under the backward of the layers below; after_backward: all once the
  // backward is done (LayerStack::step).
  GradReduce grad_reduce = GradReduce::overlap;
  // fp32: in a 16-bit run the weight-gradient GEMMs accumulate into fp32 buffers, summed
  // over the group in fp32 (Megatron's main_grad); storage: in the run's dtype, rounded at
  // each step of the sum. The same in an fp32 run.
  GradReduceDtype grad_reduce_dtype = GradReduceDtype::fp32;
  DType dtype = DType::f32;
  LayerKernels layer_kernels = LayerKernels::standard;  // the cuda device's; the host has one set
  // The loss is multiplied by this before the backward, so that fp16 gradients stay above
  // fp16's smallest normal (6.1e-5), as fp16 training's loss scaling does; a power of two,
  // so that scaling and unscaling are exact. A number is a fixed scale; kDynamicLossScale
  // (the deck's `dynamic`) is AMP's dynamic scaling in fp16, starting at
  // initial_loss_scale, halved on an overflow (model/loss_scaler.hpp), and no scaling in
  // fp32 and bf16, whose exponent range is fp32's.
  static constexpr double kDynamicLossScale = 0;
  double loss_scale = kDynamicLossScale;
  double initial_loss_scale = 65536;  // PyTorch GradScaler's init_scale
  DeviceKind device{};                // the first kind, kokkos: the host device every build has
  CommKind comm = CommKind::mpi;
  uint64_t seed = 1234;
  // Multiplies the generated inputs (attention mode q, k, v, dO; model mode x), a power of
  // two: large values make large attention logits (core/synthetic_data.hpp, input_value).
  double input_scale = 1.0;
  // Attention mode: the keys take this many directions shared by the sequence, so that
  // large logits tie (core/synthetic_data.hpp, shared_direction_key); 0: the keys are
  // drawn like the other inputs.
  int key_directions = 0;
  bool verify = false;
  Reference reference = Reference::fp64;
  // Rows of this rank's tokens the LM head turns into logits at a time (model.vocab > 0),
  // so that no more than loss_chunk × vocab logits exist at once; 0 = automatic: chunks
  // of as many logits as the last layer's output has elements (LayerStack).
  int64_t loss_chunk = 0;
  // A rank waiting longer than this in one communication call aborts the job (0 = never;
  // -1 = ten times the slowest step so far, at least 300 s): comm/watchdog.hpp.
  double watchdog_seconds = -1;
  // Record every rank's ring steps in the last timed iteration (the results file's
  // ring_timeline). Off by default: the gathered records grow as ranks² · layers.
  bool ring_timeline = false;
};

struct MachineConfig {
  std::string profile = "generic-cpu";  // a file in inputs/machines/, or measure_profile
  double peak_tflops = 0.0;             // per device; 0 = take it from the profile
  std::string name;                     // device name shown in reports (filled from the profile)

  // profile: measure times the device's GEMM at run time instead of reading a file.
  static constexpr const char* measure_profile = "measure";
  bool measures_peak() const;
};

struct TopologyConfig {
  int ranks_per_node = 0;  // 0 = from MPI_COMM_TYPE_SHARED
  int world_size = 0;      // the ranks the deck is written for (run refuses others, project uses it); 0 = any
};

// The benchmark size class a deck belongs to (docs/benchmark.md). `role: verification`
// turns a class deck into its verification run: the same ranks, backend and kernels at
// the class's verification scale, checked against the reference (config/benchmark.hpp).
struct BenchmarkConfig {
  std::string class_name;            // "" = not a class run
  std::string role = "measurement";  // measurement | verification
  int64_t verify_length = 0;         // the verification run's sequence.length
  int verify_layers = 0;             // the verification run's model.layers (0 = the deck's)
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
  BenchmarkConfig benchmark;
  OutputConfig output;

  // The scale the first step's loss is multiplied by: run.loss_scale, or where dynamic
  // initial_loss_scale in fp16 and 1 in fp32 and bf16.
  double loss_scale() const;
  // Whether the scale halves on an overflow (dynamic, fp16).
  bool dynamic_loss_scale() const;
  // Whether each step checks its weight gradients for Inf and NaN: wherever the loss is
  // scaled (dynamic in fp16, or a fixed run.loss_scale), as AMP's GradScaler does.
  bool checks_gradients() const;
  // The dtype of the layer stack's weight gradients and of their sum (grad_reduce_dtype).
  DType grad_dtype() const;
};

}  // namespace minictx
