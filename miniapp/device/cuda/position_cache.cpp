#include "device/cuda/position_cache.hpp"

#include <algorithm>
#include <utility>

#include "core/cuda/cuda_check.hpp"
#include "device/cuda/tuned_layer_kernels.hpp"

namespace minictx::cuda {
namespace {

// FNV-1a over the values: a quick first test before the full comparison.
uint64_t digest_of(const int64_t* v, int64_t n) {
  uint64_t h = 14695981039346656037ULL;
  for (int64_t i = 0; i < n; ++i) h = (h ^ uint64_t(v[i])) * 1099511628211ULL;
  return h;
}

int64_t table_bytes(int64_t n, int head_dim) { return n * (head_dim / 2) * int64_t(sizeof(float2)); }

}  // namespace

PositionCache::PositionCache(cudaStream_t stream, std::function<void*(int64_t)> acquire,
                             std::function<void(void*, int64_t)> release)
    : stream_(stream), acquire_(std::move(acquire)), release_(std::move(release)) {}

PositionCache::Entry& PositionCache::entry(const int64_t* host, int64_t n) {
  const uint64_t digest = digest_of(host, n);
  for (Entry& e : entries_)
    if (e.digest == digest && int64_t(e.host.size()) == n && std::equal(e.host.begin(), e.host.end(), host)) {
      e.last_use = ++uses_;
      return e;
    }
  if (entries_.size() == kMaxEntries) {
    const auto oldest =
        std::min_element(entries_.begin(), entries_.end(),
                         [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
    release(*oldest);
    entries_.erase(oldest);
  }
  Entry e;
  e.host.assign(host, host + n);
  e.digest = digest;
  e.last_use = ++uses_;
  e.device = static_cast<int64_t*>(acquire_(std::max<int64_t>(n, 1) * int64_t(sizeof(int64_t))));
  // From the entry's own copy, which lives as long as the device array.
  CUDA_CHECK(
      cudaMemcpyAsync(e.device, e.host.data(), size_t(n) * sizeof(int64_t), cudaMemcpyHostToDevice, stream_));
  entries_.push_back(std::move(e));
  return entries_.back();
}

const int64_t* PositionCache::positions(const int64_t* host, int64_t n) { return entry(host, n).device; }

const float2* PositionCache::rope_table(const int64_t* host, int64_t n, int head_dim, double theta) {
  Entry& e = entry(host, n);
  for (const Table& t : e.tables)
    if (t.head_dim == head_dim && t.theta == theta) return t.device;
  auto* table = static_cast<float2*>(acquire_(std::max<int64_t>(table_bytes(n, head_dim), 1)));
  cuda::rope_table(table, e.device, n, head_dim, theta, stream_);
  CUDA_CHECK(cudaGetLastError());
  e.tables.push_back({head_dim, theta, table});
  return table;
}

void PositionCache::release(Entry& e) {
  const int64_t n = int64_t(e.host.size());
  for (const Table& t : e.tables) release_(t.device, std::max<int64_t>(table_bytes(n, t.head_dim), 1));
  release_(e.device, std::max<int64_t>(n, 1) * int64_t(sizeof(int64_t)));
  e.tables.clear();
  e.device = nullptr;
}

void PositionCache::clear() {
  for (Entry& e : entries_) release(e);
  entries_.clear();
}

}  // namespace minictx::cuda
