#pragma once

// Names in a minictx results file; outputs/README.md documents the layout they form.
namespace minictx::schema {

inline constexpr const char* kFormat = "minictx-results";
inline constexpr int kFormatVersion = 1;

}  // namespace minictx::schema
