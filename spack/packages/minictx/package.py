# Copyright The minictx authors.
# SPDX-License-Identifier: BSD-3-Clause

from spack.package import *


class Minictx(CMakePackage, CudaPackage):
    """MPI mini-app for sequence-parallel long-context transformer training: a Llama-style
    layer stack whose attention runs on ring, Ulysses, USP, double-ring, BurstAttention or
    all-gather backends, verified against an fp64 reference, with HDF5 results, benchmark
    size classes and a submission report."""

    # No public URL yet: build a checkout with `spack dev-build` or `spack develop`
    # (docs/benchmark.md, "Building").
    license("BSD-3-Clause")

    version("0.9.0")

    variant("tests", default=False, description="Build the ctest suites (needs GoogleTest)")

    depends_on("cxx", type="build")
    depends_on("c", type="build")
    depends_on("cmake@3.20:", type="build")

    depends_on("mpi")
    depends_on("hdf5")
    depends_on("kokkos")
    # OpenBLAS itself, not any BLAS: the host device calls openblas_set_num_threads (one
    # thread per rank, whatever the build's threading) and names its kernels with
    # openblas_get_corename.
    depends_on("openblas")
    depends_on("yaml-cpp")
    depends_on("nlohmann-json@3.9:")
    depends_on("cli11")
    # SHA-256 of the results' points, the binary and the decks; the submission report's JSON.
    depends_on("openssl")
    depends_on("nlohmann-json")
    depends_on("googletest", type=("build", "test"), when="+tests")

    # The NVIDIA path: cuBLASLt and NCCL beside the CUDA toolkit.
    depends_on("nccl", when="+cuda")
    depends_on("cuda@11.8:", when="+cuda")
    for arch in CudaPackage.cuda_arch_values:
        depends_on(f"nccl cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")
    conflicts("cuda_arch=none", when="+cuda", msg="name the GPU: +cuda cuda_arch=80 (A100) or 90 (H100)")

    def cmake_args(self):
        args = [
            self.define_from_variant("MINICTX_ENABLE_CUDA", "cuda"),
            self.define_from_variant("MINICTX_BUILD_TESTS", "tests"),
            self.define("BLA_VENDOR", "OpenBLAS"),
        ]
        if self.spec.satisfies("+cuda"):
            # sm_90 devices get Hopper's arch-specific code (wgmma, TMA): 90a.
            archs = [a + "a" if a == "90" else a for a in self.spec.variants["cuda_arch"].value]
            args.append(self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(archs)))
        return args

    def check(self):
        with working_dir(self.build_directory):
            ctest("-L", "quick", "--output-on-failure")
