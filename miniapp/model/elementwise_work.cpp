#include "model/elementwise_work.hpp"

namespace minictx {

const std::vector<Elementwise>& elementwise_kernels() {
  static const std::vector<Elementwise> all = {
      Elementwise::rmsnorm_fwd, Elementwise::rmsnorm_bwd, Elementwise::rope, Elementwise::swiglu_fwd,
      Elementwise::swiglu_bwd,  Elementwise::copy,        Elementwise::add,  Elementwise::fill};
  return all;
}

const char* to_string(Elementwise k) {
  switch (k) {
    case Elementwise::rmsnorm_fwd:
      return "rmsnorm_fwd";
    case Elementwise::rmsnorm_bwd:
      return "rmsnorm_bwd";
    case Elementwise::rope:
      return "rope";
    case Elementwise::swiglu_fwd:
      return "swiglu_fwd";
    case Elementwise::swiglu_bwd:
      return "swiglu_bwd";
    case Elementwise::copy:
      return "copy";
    case Elementwise::add:
      return "add";
    case Elementwise::fill:
      return "fill";
  }
  return "?";
}

double tensors_moved(Elementwise k) {
  switch (k) {
    case Elementwise::rmsnorm_fwd:
    case Elementwise::rope:
    case Elementwise::copy:
      return 2;
    case Elementwise::rmsnorm_bwd:
      return 4;
    case Elementwise::swiglu_fwd:
    case Elementwise::add:
      return 3;
    case Elementwise::swiglu_bwd:
      return 5;
    case Elementwise::fill:
      return 1;
  }
  return 0;
}

std::vector<ElementwiseCall> layer_elementwise(const ModelShape& m, double rows, bool backward) {
  const double d = m.d_model, q = double(m.heads) * m.head_dim, kv = double(m.kv_heads) * m.head_dim,
               f = m.ffn_hidden;
  if (!backward)
    return {{Elementwise::rmsnorm_fwd, rows, d}, {Elementwise::rope, rows, q},
            {Elementwise::rope, rows, kv},       {Elementwise::copy, rows, d},
            {Elementwise::rmsnorm_fwd, rows, d}, {Elementwise::swiglu_fwd, rows, f},
            {Elementwise::copy, rows, d}};
  return {{Elementwise::copy, rows, d},        {Elementwise::swiglu_bwd, rows, f},
          {Elementwise::rmsnorm_bwd, rows, d}, {Elementwise::rope, rows, q},
          {Elementwise::rope, rows, kv},       {Elementwise::rmsnorm_bwd, rows, d}};
}

}  // namespace minictx
