# Spack package for distzo. Use it with:
#   spack repo add <distzo checkout>/spack
#   spack install distzo +cuda cuda_arch=90      (H100/H200: CUDA Kokkos, cuBLAS, NCCL)
#   spack install distzo ~cuda                   (CPU: OpenMP Kokkos, Kokkos Kernels on BLAS)
#   spack install distzo ~cuda ~openmp           (CPU: Serial Kokkos)
#   spack install --test=root distzo ...         (also builds and runs the test suite)
# Written against Spack 1.1.1 with spack-packages v2025.11.0 (kokkos and
# kokkos-kernels 4.6.02, nccl 2.28); also checked with Spack develop of 2026-01
# and spack-packages develop of 2026-07 (Kokkos 5.1.1, which distzo takes with
# clang or GCC 13+), and still works in Spack 0.23.0.dev0 (snapshot e8f8cf8543:
# kokkos 4.3.01, nccl 2.21). spack/check_specs.sh checks that the main variants
# concretize as intended.
#
# This is a package API v1 repository (spack/repo.yaml names no `api`, and the
# package lives in packages/distzo/): Spack 1.x still loads those, and prepends
# `from spack_repo.builtin.build_systems._package_api_v1 import *` to this file,
# which brings CMakePackage and CudaPackage from spack-packages; Spack 0.x has
# them in spack.package. The API v2 layout (spack_repo/distzo/packages/...,
# importing spack_repo.builtin.build_systems explicitly) would not load in 0.x.

import spack
from spack.package import *

#: Spack 1.x, with the builtin packages of spack-packages; else Spack 0.x.
SPACK_1 = spack.spack_version_info >= (1, 0)


class Distzo(CMakePackage, CudaPackage):
    """Zeroth-order (MeZO / ZO2 / DistZO2) fine-tuning of OPT language models
    on many GPUs: Kokkos kernels, MPI mesh, HDF5 checkpoints, YAML decks."""

    homepage = "https://github.com/distzo/distzo"
    git = "https://github.com/distzo/distzo.git"

    maintainers("distzo")
    license("Apache-2.0")

    version("main", branch="main")

    # Kokkos builds for one GPU architecture only (its cuda_arch is single-valued),
    # so distzo takes exactly one too instead of CudaPackage's list.
    variant(
        "cuda_arch",
        description="CUDA compute capability of the GPUs (one value, e.g. 90 for H100/H200)",
        values=("none",) + CudaPackage.cuda_arch_values,
        default="none",
        multi=False,
        sticky=True,  # never chosen by the solver: a missing cuda_arch is an error
        when="+cuda",
    )
    variant("nccl", default=True, when="+cuda", description="NCCL collectives between GPUs")
    variant(
        "openmp",
        default=True,
        when="~cuda",
        description="OpenMP Kokkos backend for CPU builds (off: Serial)",
    )
    variant(
        "tests",
        default=False,
        description="Build the GoogleTest suite (spack install --test=root builds and runs it)",
    )

    conflicts(
        "cuda_arch=none",
        when="+cuda",
        msg="distzo +cuda needs the GPUs' compute capability, e.g. cuda_arch=90 (H100/H200)",
    )

    depends_on("cmake@3.20:", type="build")
    # The compilers (CMakeLists.txt: LANGUAGES C CXX). Spack 1.x gives a package
    # only the compilers it depends on, and none without these. Spack 0.x gives
    # every package its %compiler, and its 2024 snapshots fail to concretize a
    # root that depends on "c" (no such package there).
    if SPACK_1:
        depends_on("c", type="build")
        depends_on("cxx", type="build")
    depends_on("mpi")
    depends_on("hdf5+mpi")
    depends_on("yaml-cpp@0.7:")

    depends_on("kokkos@4:")
    depends_on("kokkos-kernels@4:")
    # Kokkos from 4.7.01 on has the mdspan-based View (4.7.00 is built with the
    # legacy one), which GCC 12 miscompiles: distzo's tests segfault (see
    # cmake/DistzoKokkos.cmake). With GCC 12 this steers the solver to an older
    # Kokkos; with GCC 13 or clang it takes the newest.
    conflicts(
        "%gcc@:12",
        when="^kokkos@4.7.01:",
        msg="Kokkos >= 4.7.01 (mdspan View) is miscompiled by GCC 12: use GCC 13 or clang",
    )

    # The test suite: GoogleTest (GTEST_SKIP, *_TEST_SUITE_P: 1.10 on), and h5diff
    # from the HDF5 tools. type="test" deps come with spack install --test=root;
    # +tests builds the suite without running it. GoogleTest is built in the C++
    # standard of Kokkos, which distzo takes too (see cmake_args): 17 for Kokkos 4,
    # 20 for Kokkos 5 (GoogleTest has no 23). The 2024 Spack 0.23 snapshot has no
    # Kokkos 5, and its googletest no cxxstd=20: it rejects the value even in a
    # condition that does not hold, so the recipe names it only in Spack 1.x.
    depends_on("googletest@1.10:", type="build", when="+tests")
    depends_on("googletest@1.10:", type="test")
    for std in ("17", "20") if SPACK_1 else ("17",):
        depends_on(f"googletest cxxstd={std}", type="build", when=f"+tests ^kokkos cxxstd={std}")
        depends_on(f"googletest cxxstd={std}", type="test", when=f"^kokkos cxxstd={std}")
    depends_on("hdf5+tools", type="test")

    # GPU: CUDA Kokkos (through nvcc_wrapper), Kokkos Kernels on cuBLAS, NCCL,
    # all for the same compute capability. Kokkos 4 compiles device lambdas only
    # with +cuda_lambda; Kokkos 5 always does and has no such variant.
    depends_on("kokkos+cuda+wrapper", when="+cuda")
    depends_on("kokkos+cuda_lambda", when="+cuda ^kokkos@:4")
    depends_on("kokkos-kernels+cuda+cublas", when="+cuda")
    depends_on("nccl", when="+nccl")
    for arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")
        depends_on(f"kokkos-kernels cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")
        depends_on(f"nccl cuda_arch={arch}", when=f"+nccl cuda_arch={arch}")

    # CPU: OpenMP (or Serial) Kokkos, and Kokkos Kernels on the BLAS library
    # (KokkosBlas::gemm then calls the vendor GEMM instead of its own kernel).
    depends_on("kokkos+openmp", when="+openmp")
    depends_on("kokkos-kernels+openmp", when="+openmp")
    depends_on("kokkos+serial", when="~cuda~openmp")
    depends_on("kokkos-kernels+serial", when="~cuda~openmp")
    depends_on("kokkos-kernels+blas", when="~cuda")
    # KokkosBlas::gemm's BLAS, also named here so that the condition below can
    # see it: in Spack 0.x a when="^..." matches direct dependencies only.
    depends_on("blas", when="~cuda")
    # OpenBLAS defaults to threads=none, which would run every BLAS GEMM on one
    # core of an OpenMP build: use its OpenMP build with OpenMP Kokkos.
    depends_on("openblas threads=openmp", when="+openmp ^[virtuals=blas] openblas")

    def cmake_args(self):
        spec = self.spec
        args = [
            # The suite is built with +tests and whenever Spack runs the tests
            # (spack install --test=root), which brings the googletest dependency.
            self.define("DISTZO_ENABLE_TESTS", spec.satisfies("+tests") or self.run_tests),
            self.define("DISTZO_ENABLE_PERF", False),
            # The C++ standard Kokkos was built with (CMakeLists.txt defaults to
            # 17): 20 for Kokkos 5, whose headers require it.
            self.define("CMAKE_CXX_STANDARD", spec["kokkos"].variants["cxxstd"].value),
        ]
        if spec.satisfies("+cuda"):
            args.append(self.define("CMAKE_CXX_COMPILER", spec["kokkos"].kokkos_cxx))
            args.append(self.define_from_variant("DISTZO_ENABLE_NCCL", "nccl"))
            if spec.satisfies("+nccl"):
                args.append(self.define("NCCL_ROOT", spec["nccl"].prefix))
        else:
            args.append(self.define("DISTZO_ENABLE_NCCL", False))
        return args

    def check(self):
        """Runs the test suite with ctest after the build (spack install --test=root)."""
        env = {}
        if self.spec.satisfies("^openmpi"):
            # The MPI tests start up to 4 ranks, as MPICH allows on any node; let
            # Open MPI 4 and 5 oversubscribe small build nodes too.
            env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
            env["PRTE_MCA_rmaps_default_mapping_policy"] = ":oversubscribe"
        with working_dir(self.build_directory):
            ctest("--output-on-failure", extra_env=env)
