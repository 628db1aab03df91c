#include "backends/engine/head_exchange.hpp"

#include "core/error.hpp"

namespace minictx {
namespace {

// Heads each rank of a group of u holds: an even split, or one replicated head.
int head_share(int heads, int u) { return heads >= u ? heads / u : 1; }
// First head of rank q's share; with replication ranks [g·u/heads, (g+1)·u/heads) get head g.
int first_head(int heads, int u, int q) { return int(int64_t(q) * heads / u); }

}  // namespace

void validate_head_split(int heads, int kv_heads, int degree, const std::string& what) {
  if (heads % degree != 0) input_error(what + " does not divide model.heads " + std::to_string(heads));
  if (kv_heads % degree != 0 && degree % kv_heads != 0)
    input_error(what + " neither divides nor is a multiple of model.kv_heads " + std::to_string(kv_heads));
}

AttnShape HeadExchange::head_shape(const AttnShape& s) const {
  AttnShape hs = s;
  hs.heads = s.heads / degree();
  hs.kv_heads = head_share(s.kv_heads, degree());
  return hs;
}

// The all-to-all needs one contiguous chunk per destination, so both directions pack
// before it and unpack after it with strided row copies:
//   chunk p of a to_heads send    = my rows, head block p           [B, L, share·D]
//   chunk p of a to_heads receive = rank p's rows, my head block    [B, L, share·D]
// and a batch's L rows of chunk p land at rows [p·L, (p+1)·L) of that batch's u·L.
// Head data travels in the run's dtype (packing converts it), softmax statistics in fp32.
Tensor HeadExchange::to_heads(const Tensor& x, int batch, int heads, int head_dim) {
  const int u = degree();
  const int64_t width = int64_t(heads) * head_dim, w = int64_t(head_share(heads, u)) * head_dim;
  const int64_t rows = x.numel() / width, len = rows / batch, chunk = rows * w;
  Tensor send = dev_.alloc({u * rows, w}, dev_.precision());
  for (int p = 0; p < u; ++p)
    dev_.copy_rows(send, p * chunk, w, x, first_head(heads, u, p) * int64_t(head_dim), width, rows, w);
  Tensor recv = dev_.alloc({u * rows, w}, dev_.precision());
  group_.all_to_all(send.raw(), recv.raw(), chunk * element_bytes(send.dtype()));
  Tensor out = dev_.alloc({u * rows, w});
  for (int p = 0; p < u; ++p)
    dev_.copy_rows(out, p * len * w, u * len * w, recv, p * chunk, len * w, batch, len * w);
  return out;
}

void HeadExchange::to_sequence(const Tensor& x, int batch, int heads, int head_dim, Tensor& out) {
  const int u = degree();
  const int64_t width = int64_t(heads) * head_dim, w = int64_t(head_share(heads, u)) * head_dim;
  const int64_t rows = out.numel() / width, len = rows / batch, chunk = rows * w;
  Tensor send = dev_.alloc({u * rows, w}, dev_.precision());
  for (int p = 0; p < u; ++p)
    dev_.copy_rows(send, p * chunk, len * w, x, p * len * w, u * len * w, batch, len * w);
  Tensor recv = dev_.alloc({u * rows, w}, dev_.precision());
  group_.all_to_all(send.raw(), recv.raw(), chunk * element_bytes(send.dtype()));
  // Ranks q ≡ c (mod rep) together hold every head once: copy the first such set into
  // `out` and add the other replica sets to it.
  const int rep = heads >= u ? 1 : u / heads;
  Tensor replica = rep > 1 ? dev_.alloc(out.shape()) : Tensor();
  for (int c = 0; c < rep; ++c) {
    Tensor& dst = c == 0 ? out : replica;
    for (int q = c; q < u; q += rep)
      dev_.copy_rows(dst, first_head(heads, u, q) * int64_t(head_dim), width, recv, q * chunk, w, rows, w);
    if (c > 0) dev_.add(out, replica);
  }
}

// Per-row vectors [B, heads, L]: chunk p = my rows of head block p, [B, heads/u, L].
Tensor HeadExchange::rows_to_heads(const Tensor& x, int batch, int heads) {
  const int u = degree();
  const int64_t hl = heads / u, len = x.numel() / (int64_t(batch) * heads), chunk = batch * hl * len;
  Tensor send = dev_.alloc({u * chunk});
  for (int p = 0; p < u; ++p)
    dev_.copy_rows(send, p * chunk, hl * len, x, p * hl * len, heads * len, batch, hl * len);
  Tensor recv = dev_.alloc({u * chunk});
  group_.all_to_all(send.raw(), recv.raw(), chunk * element_bytes(send.dtype()));
  Tensor out = dev_.alloc({int64_t(batch), hl, u * len});
  for (int p = 0; p < u; ++p) dev_.copy_rows(out, p * len, u * len, recv, p * chunk, len, batch * hl, len);
  return out;
}

void HeadExchange::rows_to_sequence(const Tensor& x, int batch, int heads, Tensor& out) {
  const int u = degree();
  const int64_t hl = heads / u, len = out.numel() / (int64_t(batch) * heads), chunk = batch * hl * len;
  Tensor send = dev_.alloc({u * chunk});
  for (int p = 0; p < u; ++p) dev_.copy_rows(send, p * chunk, len, x, p * len, u * len, batch * hl, len);
  Tensor recv = dev_.alloc({u * chunk});
  group_.all_to_all(send.raw(), recv.raw(), chunk * element_bytes(send.dtype()));
  for (int p = 0; p < u; ++p)
    dev_.copy_rows(out, p * hl * len, heads * len, recv, p * chunk, hl * len, batch, hl * len);
}

}  // namespace minictx
