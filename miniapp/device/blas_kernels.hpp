#pragma once
#include <string>

namespace minictx {

// OpenBLAS chooses its kernels by CPU model when it loads. A model newer than the
// library gets its generic Prescott (SSE3) kernels, about 4× slower than the AVX2 or
// AVX-512 kernels the CPU runs (Debian 12's OpenBLAS 0.3.21 on Emerald Rapids: 32
// against 150 GFLOP/s per core). Before anything else runs, re-execute this program with
// OPENBLAS_CORETYPE naming the kernels the CPU's features allow, unless the user set it;
// the re-executed process keeps its name (`ps -C minictx` lists it). Returns only when no
// re-execution is needed or it failed.
void choose_blas_kernels(char** argv);

// The linked BLAS's configuration line, and whether choose_blas_kernels replaced the
// kernels OpenBLAS detected: the provenance and `minictx bench` print it.
std::string blas_description();

}  // namespace minictx
