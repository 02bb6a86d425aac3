# Spack package for distzo. Use it with:
#   spack repo add <distzo checkout>/spack
#   spack install distzo +cuda cuda_arch=90      (H100/H200)
#   spack install distzo ~cuda                   (CPU: Serial/OpenMP Kokkos)

from spack.package import *


class Distzo(CMakePackage, CudaPackage):
    """Zeroth-order (MeZO / ZO2 / DistZO2) fine-tuning of OPT language models
    on many GPUs: Kokkos kernels, MPI mesh, HDF5 checkpoints, YAML decks."""

    homepage = "https://github.com/distzo/distzo"
    git = "https://github.com/distzo/distzo.git"

    maintainers("distzo")
    license("Apache-2.0")

    version("main", branch="main")

    variant("nccl", default=True, when="+cuda", description="NCCL collectives between GPUs")
    variant("tests", default=False, description="Build the GoogleTest suite")

    depends_on("cmake@3.20:", type="build")
    depends_on("mpi")
    depends_on("hdf5+mpi")
    depends_on("yaml-cpp@0.7:")
    depends_on("googletest", type="build", when="+tests")

    depends_on("kokkos@4:")
    depends_on("kokkos-kernels@4:")
    depends_on("kokkos+cuda+cuda_lambda+wrapper", when="+cuda")
    depends_on("kokkos-kernels+cuda+cublas", when="+cuda")
    depends_on("nccl", when="+nccl")
    for arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")

    def cmake_args(self):
        args = [
            self.define_from_variant("DISTZO_ENABLE_TESTS", "tests"),
            self.define("DISTZO_ENABLE_PERF", False),
        ]
        if self.spec.satisfies("+cuda"):
            args.append(self.define("CMAKE_CXX_COMPILER", self.spec["kokkos"].kokkos_cxx))
            args.append(self.define_from_variant("DISTZO_ENABLE_NCCL", "nccl"))
        return args
