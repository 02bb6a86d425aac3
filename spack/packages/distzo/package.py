# Spack package for distzo. Use it with:
#   spack repo add <distzo checkout>/spack
#   spack install distzo +cuda cuda_arch=90      (H100/H200: CUDA Kokkos, cuBLAS, NCCL)
#   spack install distzo ~cuda                   (CPU: OpenMP Kokkos, Kokkos Kernels on BLAS)
#   spack install distzo ~cuda ~openmp           (CPU: Serial Kokkos)
#   spack install --test=root distzo ...         (also builds and runs the test suite)
# Written against Spack 0.23.0.dev0 (snapshot e8f8cf8543: builtin kokkos and
# kokkos-kernels 4.3.01, nccl 2.21); spack/check_specs.sh checks that the main
# variants concretize as intended.

from spack.package import *


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
    depends_on("mpi")
    depends_on("hdf5+mpi")
    depends_on("yaml-cpp@0.7:")

    # The test suite: GoogleTest (GTEST_SKIP, *_TEST_SUITE_P: 1.10 on; built as
    # C++17 like distzo), and h5diff from the HDF5 tools. type="test" deps come
    # with spack install --test=root; +tests builds the suite without running it.
    depends_on("googletest@1.10: cxxstd=17", type="build", when="+tests")
    depends_on("googletest@1.10: cxxstd=17", type="test")
    depends_on("hdf5+tools", type="test")

    depends_on("kokkos@4:")
    depends_on("kokkos-kernels@4:")

    # GPU: CUDA Kokkos (through nvcc_wrapper), Kokkos Kernels on cuBLAS, NCCL,
    # all for the same compute capability.
    depends_on("kokkos+cuda+cuda_lambda+wrapper", when="+cuda")
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
    # see it: in this Spack a when="^..." matches direct dependencies only.
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
