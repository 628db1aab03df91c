#pragma once
#include <cstddef>
#include <utility>
#include <vector>

namespace minictx {

// Page-locked host buffers (cudaMallocHost) that a staged comm copies device data through,
// kept and reused for the comm's lifetime. Against a fresh pageable buffer per transfer
// they save its page faults and zero-fill and let the copies run at the link's speed
// (measured on an H100: docs/performance.md, "Four ranks sharing one GPU (staged MPI)").
class PinnedStaging {
 public:
  // A buffer of at least `bytes` on loan; it goes back to the pool when destroyed.
  class Loan {
   public:
    Loan() = default;
    Loan(PinnedStaging* pool, unsigned char* data) : pool_(pool), data_(data) {}
    Loan(Loan&& o) noexcept { *this = std::move(o); }
    Loan& operator=(Loan&& o) noexcept;
    Loan(const Loan&) = delete;
    Loan& operator=(const Loan&) = delete;
    ~Loan();
    unsigned char* data() const { return data_; }

   private:
    PinnedStaging* pool_ = nullptr;
    unsigned char* data_ = nullptr;
  };

  PinnedStaging() = default;
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;
  ~PinnedStaging();

  // The smallest free buffer that holds `bytes`, or a new one; no buffer for 0 bytes.
  Loan borrow(size_t bytes);

 private:
  struct Block {
    unsigned char* data;
    size_t bytes;
    bool lent;
  };
  void give_back(unsigned char* data);
  std::vector<Block> blocks_;
};

}  // namespace minictx
