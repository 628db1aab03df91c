#pragma once
#include <functional>

#include "device/device.hpp"

namespace minictx {

// Packed documents on a device whose attention kernels mask by position only (causality
// and padding). Positions grow along a block and a document is a range of positions, so
// the rows of one document form one row range of the block: the block is run as its
// (document, same document) sub-blocks, each by the kernel with no document mask, and the
// rows no sub-block holds are left as they were (masked). Batch rows with different
// packings are run one at a time, on copies of their rows.
using AttnFwdKernel = std::function<void(const AttnShape&, const AttnFwdBlock&)>;
using AttnBwdKernel = std::function<void(const AttnShape&, const AttnBwdBlock&)>;

// s.documents must be set; `kernel` gets shapes without documents.
void attn_fwd_by_documents(Device& dev, const AttnShape& s, const AttnFwdBlock& blk,
                           const AttnFwdKernel& kernel);
void attn_bwd_by_documents(Device& dev, const AttnShape& s, const AttnBwdBlock& blk,
                           const AttnBwdKernel& kernel);

}  // namespace minictx
