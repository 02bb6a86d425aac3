#!/usr/bin/env bash
# build_kokkos4.sh: build and install Kokkos 4 and Kokkos Kernels (BLAS
# component only) from source trees, for one backend, into one prefix.
#
# Usage:
#   tools/build_kokkos4.sh --backend cuda|openmp|serial \
#       --kokkos SRC --kernels SRC --prefix DIR \
#       [--build DIR] [--jobs N] [--cxx-standard 17|20]
#
#   --backend       cuda   : Kokkos CUDA + Serial backends, Hopper (sm_90),
#                            compiled through Kokkos' nvcc_wrapper; Kokkos
#                            Kernels with the cuBLAS TPL.
#                   openmp : Kokkos OpenMP + Serial; Kokkos Kernels with the
#                            host BLAS TPL (OpenBLAS).
#                   serial : Kokkos Serial only; host BLAS TPL as for openmp.
#   --kokkos SRC    Kokkos source tree (read only: it is copied first).
#   --kernels SRC   Kokkos Kernels source tree (read only: copied first).
#   --prefix DIR    install prefix for both packages.
#   --build DIR     scratch directory (default: a new mktemp -d directory).
#                   It gets src/{kokkos,kokkos-kernels} (the copies) and
#                   build/{kokkos,kokkos-kernels} (the CMake build trees). Keep
#                   it for the cuda backend: the installed Kokkos CMake package
#                   records the compiler path inside the copied tree.
#   --jobs N        parallel build jobs (default: nproc).
#   --cxx-standard  17 (default) or 20.
#
# Environment (optional):
#   CUDA_HOME        CUDA toolkit root for --backend cuda (default /usr/local/cuda).
#   CXX              host C++ compiler for openmp/serial (default g++).
#   NVCC_WRAPPER_DEFAULT_COMPILER  host compiler nvcc_wrapper uses (default g++).
#   BLAS_LIBRARIES   BLAS library for the host BLAS TPL (default openblas).
#
# Steps, and why each exists:
#   1. Copy both source trees into the scratch directory, so the caller's
#      trees are never modified (the cuda backend edits two files).
#   2. cuda only: make Kokkos build with CUDA 13.
#      a. CUDA 13 changed two runtime API calls that Kokkos' Cuda instance
#         wrappers (core/src/Cuda/Kokkos_Cuda_Instance.hpp) make:
#         cudaGraphAddDependencies takes an extra edge-data argument (nullptr
#         keeps the old meaning), and cudaMemPrefetchAsync takes a
#         cudaMemLocation and a flags argument instead of a device number.
#         The edit adds a CUDART_VERSION >= 13000 branch at each call site;
#         it stops with an error if the expected call sites are not there and
#         does nothing where the calls already use the CUDA 13 forms.
#      b. nvcc_wrapper compiles for a built-in default arch when no -arch is
#         given (CMake's compiler checks, downstream projects); its sm_70 is
#         not supported by CUDA 13, so it becomes sm_90.
#   3. Configure, build and install Kokkos. With GCC < 13 as the host
#      compiler the legacy View is forced (Kokkos_ENABLE_IMPL_VIEW_LEGACY=ON):
#      GCC 12 miscompiles the mdspan-based View that is the default from
#      Kokkos 4.6.99 on (default-constructed Views crash when assigned).
#   4. Configure, build and install Kokkos Kernels against that install:
#      BLAS component only, explicit instantiation for float and LayoutRight
#      only (ordinal/offset types left at their defaults), cuBLAS (cuda) or
#      the host BLAS (openmp/serial) as TPL, to keep the build short.
#   5. Print one summary line: prefix, versions, elapsed time.

set -euo pipefail

prog=$(basename "$0")

usage() {
  # The header comment from "Usage:" up to the line before "Environment".
  sed -n '/^# Usage:/,/^# Environment/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
}

die() {
  echo "$prog: error: $*" >&2
  exit 1
}

log() {
  echo "[$prog] $*"
}

backend=""
kokkos_src=""
kernels_src=""
prefix=""
scratch=""
jobs=$(nproc 2>/dev/null || echo 2)
cxx_std=17

while [[ $# -gt 0 ]]; do
  case "$1" in
    --backend) backend=${2:?--backend needs a value}; shift 2 ;;
    --kokkos) kokkos_src=${2:?--kokkos needs a value}; shift 2 ;;
    --kernels) kernels_src=${2:?--kernels needs a value}; shift 2 ;;
    --prefix) prefix=${2:?--prefix needs a value}; shift 2 ;;
    --build) scratch=${2:?--build needs a value}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a value}; shift 2 ;;
    --cxx-standard) cxx_std=${2:?--cxx-standard needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done

case "$backend" in
  cuda|openmp|serial) ;;
  "") usage >&2; die "--backend is required" ;;
  *) die "--backend must be cuda, openmp or serial (got '$backend')" ;;
esac
[[ -n "$kokkos_src" && -n "$kernels_src" && -n "$prefix" ]] ||
  { usage >&2; die "--kokkos, --kernels and --prefix are required"; }
[[ -f "$kokkos_src/CMakeLists.txt" && -f "$kokkos_src/bin/nvcc_wrapper" ]] ||
  die "$kokkos_src does not look like a Kokkos source tree"
[[ -f "$kernels_src/CMakeLists.txt" && -d "$kernels_src/blas" ]] ||
  die "$kernels_src does not look like a Kokkos Kernels source tree"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer (got '$jobs')"
[[ "$cxx_std" == 17 || "$cxx_std" == 20 ]] || die "--cxx-standard must be 17 or 20 (got '$cxx_std')"
command -v cmake >/dev/null || die "cmake not found"
command -v python3 >/dev/null || die "python3 not found"

kokkos_src=$(cd "$kokkos_src" && pwd -P)
kernels_src=$(cd "$kernels_src" && pwd -P)
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd -P)
if [[ -z "$scratch" ]]; then
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/build_kokkos4.$backend.XXXXXX")
fi
scratch=$(realpath -m "$scratch")
# The copies and build trees under --build are deleted and recreated, so the
# scratch directory and the given sources must not overlap that way.
for src in "$kokkos_src" "$kernels_src"; do
  case "$scratch/" in
    "$src"/*) die "--build ($scratch) must not lie inside a source tree ($src)" ;;
  esac
  case "$src/" in
    "$scratch/src/"* | "$scratch/build/"*)
      die "source tree $src lies under $scratch/src or $scratch/build, which this script deletes" ;;
  esac
done
mkdir -p "$scratch"

t_start=$SECONDS
src_dir="$scratch/src"
bld_dir="$scratch/build"
kokkos_copy="$src_dir/kokkos"
kernels_copy="$src_dir/kokkos-kernels"

# --- 1. copy the sources --------------------------------------------------
log "copying sources into $src_dir"
rm -rf "$kokkos_copy" "$kernels_copy" "$bld_dir/kokkos" "$bld_dir/kokkos-kernels"
mkdir -p "$src_dir" "$bld_dir"
cp -a "$kokkos_src" "$kokkos_copy"
cp -a "$kernels_src" "$kernels_copy"
chmod -R u+w "$kokkos_copy" "$kernels_copy"

# --- 2. CUDA 13 fixes (cuda only) -------------------------------------------
patch_cuda13() {
  local instance="$kokkos_copy/core/src/Cuda/Kokkos_Cuda_Instance.hpp"
  [[ -f "$instance" ]] || die "$instance not found"
  python3 - "$instance" <<'PY'
import re
import sys

path = sys.argv[1]
with open(path) as f:
    text = f.read()


def calls(name):
    """Argument lists of every call to `name` in the file."""
    out = []
    for m in re.finditer(r"\b" + name + r"\s*\(([^;]*?)\)\s*;", text):
        out.append([a.strip() for a in m.group(1).split(",")])
    return out


def fix(name, old_nargs, new_nargs, build):
    """Rewrite the one `return name(...)` statement with old_nargs arguments."""
    global text
    found = calls(name)
    # A call with the CUDA 13 argument count means the file was fixed before
    # (by this script, which keeps the old call under #else, or upstream).
    if any(len(args) == new_nargs for args in found):
        print(f"  {name}: CUDA 13 form already present, left as is")
        return
    arg = r"\s*([A-Za-z_]\w*)\s*"
    pattern = re.compile(
        r"^([ \t]*)return\s+" + name + r"\(" + ",".join([arg] * old_nargs) + r"\)\s*;[ \t]*$",
        re.M,
    )
    matches = list(pattern.finditer(text))
    if len(matches) != 1:
        sys.exit(
            f"patch_cuda13: expected exactly one 'return {name}(<{old_nargs} args>);' "
            f"in {path}, found {len(matches)} (calls seen: {found}); "
            "this Kokkos version needs a new edit"
        )
    m = matches[0]
    indent, args = m.group(1), list(m.groups()[1:])
    old_line = m.group(0)
    new_lines = build(indent, args)
    block = (
        "#if CUDART_VERSION >= 13000\n"
        + "\n".join(new_lines)
        + "\n#else\n"
        + old_line
        + "\n#endif"
    )
    text = text[: m.start()] + block + text[m.end():]
    print(f"  {name}: call site rewritten for CUDA >= 13")


def graph_deps(indent, a):
    graph, src, dst, count = a
    # CUDA 13: (graph, from, to, edgeData, numDependencies); nullptr edge
    # data means default edges, i.e. the CUDA 12 behaviour.
    return [f"{indent}return cudaGraphAddDependencies({graph}, {src}, {dst}, nullptr, {count});"]


def prefetch(indent, a):
    ptr, count, device, stream = a
    # CUDA 13: (ptr, count, cudaMemLocation, flags, stream).
    return [
        f"{indent}cudaMemLocation prefetch_location{{}};",
        f"{indent}if ({device} == cudaCpuDeviceId) {{",
        f"{indent}  prefetch_location.type = cudaMemLocationTypeHost;",
        f"{indent}  prefetch_location.id   = 0;",
        f"{indent}}} else {{",
        f"{indent}  prefetch_location.type = cudaMemLocationTypeDevice;",
        f"{indent}  prefetch_location.id   = {device};",
        f"{indent}}}",
        f"{indent}return cudaMemPrefetchAsync({ptr}, {count}, prefetch_location, 0, {stream});",
    ]


fix("cudaGraphAddDependencies", 4, 5, graph_deps)
fix("cudaMemPrefetchAsync", 4, 5, prefetch)

with open(path, "w") as f:
    f.write(text)
PY

  local wrapper="$kokkos_copy/bin/nvcc_wrapper"
  local current
  current=$(sed -n 's/^default_arch="\([^"]*\)".*/\1/p' "$wrapper")
  case "$current" in
    sm_90) log "  nvcc_wrapper: default arch already sm_90" ;;
    sm_*)
      sed -i 's/^default_arch="'"$current"'"/default_arch="sm_90"/' "$wrapper"
      grep -q '^default_arch="sm_90"' "$wrapper" || die "could not set nvcc_wrapper's default arch"
      log "  nvcc_wrapper: default arch $current -> sm_90" ;;
    *) die "nvcc_wrapper: no single active default_arch=\"sm_NN\" line found (got '$current')" ;;
  esac
}

# Is the compiler GCC older than 13? (clang also defines __GNUC__, so check it.)
is_gcc_below_13() {
  local macros major
  macros=$("$1" -dM -E -x c++ /dev/null) || die "cannot run the compiler $1"
  if grep -q '__clang__' <<<"$macros"; then return 1; fi
  major=$(sed -n 's/^#define __GNUC__ \([0-9]*\)$/\1/p' <<<"$macros")
  [[ -n "$major" && "$major" -lt 13 ]]
}

cmake_common=(
  -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_INSTALL_PREFIX="$prefix"
  -DCMAKE_CXX_STANDARD="$cxx_std"
  -DCMAKE_CXX_EXTENSIONS=OFF
)
kokkos_opts=(-DKokkos_ENABLE_SERIAL=ON)
kernels_tpls=()

if [[ "$backend" == cuda ]]; then
  cuda_home=${CUDA_HOME:-/usr/local/cuda}
  [[ -x "$cuda_home/bin/nvcc" ]] || die "nvcc not found in $cuda_home/bin (set CUDA_HOME)"
  export PATH="$cuda_home/bin:$PATH"
  export CUDA_ROOT="$cuda_home"
  log "applying CUDA 13 fixes to the copy"
  patch_cuda13
  cxx="$kokkos_copy/bin/nvcc_wrapper"
  host_cxx=${NVCC_WRAPPER_DEFAULT_COMPILER:-g++}
  kokkos_opts+=(
    -DKokkos_ENABLE_CUDA=ON
    -DKokkos_ARCH_HOPPER90=ON
    -DCUDAToolkit_ROOT="$cuda_home"
  )
  # Deprecated (lambdas are always on) but still accepted in Kokkos 4.
  if grep -q 'CUDA_LAMBDA' "$kokkos_copy/cmake/kokkos_enable_options.cmake"; then
    kokkos_opts+=(-DKokkos_ENABLE_CUDA_LAMBDA=ON)
  fi
  kernels_tpls=(
    -DKokkosKernels_ENABLE_TPL_CUBLAS=ON
    -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF
    -DKokkosKernels_ENABLE_TPL_CUSOLVER=OFF
    -DKokkosKernels_ENABLE_TPL_BLAS=OFF
    -DKokkosKernels_ENABLE_TPL_LAPACK=OFF
  )
else
  cxx=${CXX:-g++}
  host_cxx=$cxx
  if [[ "$backend" == openmp ]]; then
    kokkos_opts+=(-DKokkos_ENABLE_OPENMP=ON)
  fi
  # OpenBLAS (Debian's libopenblas-dev) with gfortran's name mangling
  # (lower case, trailing underscore), so no Fortran compiler is needed.
  kernels_tpls=(
    -DKokkosKernels_ENABLE_TPL_BLAS=ON
    -DBLAS_LIBRARIES="${BLAS_LIBRARIES:-openblas}"
    "-DF77_BLAS_MANGLE=(name,NAME) name ## _"
    -DKokkosKernels_ENABLE_TPL_LAPACK=OFF
  )
fi

if is_gcc_below_13 "$host_cxx"; then
  log "host compiler $host_cxx is GCC < 13: using the legacy View"
  kokkos_opts+=(-DKokkos_ENABLE_IMPL_VIEW_LEGACY=ON)
fi

# --- 3. Kokkos --------------------------------------------------------------
t0=$SECONDS
log "configuring Kokkos ($backend)"
cmake -S "$kokkos_copy" -B "$bld_dir/kokkos" \
  "${cmake_common[@]}" -DCMAKE_CXX_COMPILER="$cxx" "${kokkos_opts[@]}"
log "building Kokkos with $jobs jobs"
cmake --build "$bld_dir/kokkos" --parallel "$jobs"
cmake --install "$bld_dir/kokkos"
t_kokkos=$((SECONDS - t0))

# --- 4. Kokkos Kernels --------------------------------------------------------
t0=$SECONDS
log "configuring Kokkos Kernels ($backend)"
cmake -S "$kernels_copy" -B "$bld_dir/kokkos-kernels" \
  "${cmake_common[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" -DKokkos_ROOT="$prefix" \
  -DKokkosKernels_ENABLE_ALL_COMPONENTS=OFF \
  -DKokkosKernels_ENABLE_COMPONENT_BLAS=ON \
  -DKokkosKernels_INST_FLOAT=ON \
  -DKokkosKernels_INST_DOUBLE=OFF \
  -DKokkosKernels_INST_COMPLEX_FLOAT=OFF \
  -DKokkosKernels_INST_COMPLEX_DOUBLE=OFF \
  -DKokkosKernels_INST_LAYOUTRIGHT=ON \
  -DKokkosKernels_INST_LAYOUTLEFT=OFF \
  -DKokkosKernels_ENABLE_TESTS=OFF \
  -DKokkosKernels_ENABLE_EXAMPLES=OFF \
  "${kernels_tpls[@]}"
log "building Kokkos Kernels with $jobs jobs"
cmake --build "$bld_dir/kokkos-kernels" --parallel "$jobs"
cmake --install "$bld_dir/kokkos-kernels"
t_kernels=$((SECONDS - t0))

# --- 5. summary ---------------------------------------------------------------
# Versions as the installed headers state them (MAJOR*10000 + MINOR*100 + PATCH).
version_of() {
  local major minor patch
  major=$(sed -n "s/^#define $2_VERSION_MAJOR \([0-9]*\).*/\1/p" "$1" | head -n 1)
  minor=$(sed -n "s/^#define $2_VERSION_MINOR \([0-9]*\).*/\1/p" "$1" | head -n 1)
  patch=$(sed -n "s/^#define $2_VERSION_PATCH \([0-9]*\).*/\1/p" "$1" | head -n 1)
  echo "${major:-?}.${minor:-?}.${patch:-?}"
}
kokkos_version=$(version_of "$prefix/include/KokkosCore_config.h" KOKKOS)
kernels_version=$(version_of "$prefix/include/KokkosKernels_config.h" KOKKOSKERNELS)
echo "build_kokkos4: backend=$backend prefix=$prefix Kokkos=$kokkos_version" \
  "KokkosKernels=$kernels_version cxx_standard=$cxx_std" \
  "time: kokkos ${t_kokkos}s, kernels ${t_kernels}s, total $((SECONDS - t_start))s" \
  "(scratch: $scratch)"
