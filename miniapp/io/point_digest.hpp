#pragma once
// What makes a results point tamper-evident (outputs/README.md, "Digests"): SHA-256 over a
// canonical serialisation of the point's content (every attribute and dataset of its group
// by its path in the file, type class, shape and values, sorted by path), bound to the
// digest of the file's provenance. The serialisation depends on the content only, not on
// how the file stores it, so the digest of a point written now and of the same point read
// back are the same; tools/check-submission.py computes it from the HDF5 file on its own.
#include <string>

#include "io/results.hpp"

namespace minictx {

// The serialisations the digests hash (exposed for tests).
std::string canonical_point(const PointResult& p);
std::string canonical_provenance(const Provenance& p);

// SHA-256 (hex) of the provenance, and of the point with that provenance digest.
std::string provenance_digest(const Provenance& p);
std::string point_digest(const PointResult& p, const std::string& provenance_digest);

// Sets p.provenance_digest and p.digest: the writer seals each point as it records it.
void seal_point(PointResult& p, const Provenance& prov);

}  // namespace minictx
