#!/usr/bin/env bash
# Cross-builds distzo for the GPU here and packs what perf/device_check.sh
# needs on the lent GPU machine, which is bare and offline (CUDA, cuBLAS and
# NCCL through its PyTorch install; no MPICH, HDF5 or yaml-cpp).
#
#   perf/device_bundle.sh KOKKOS_PREFIX [BUILD_DIR] [OUT_DIR]
#
# KOKKOS_PREFIX: a Kokkos 4 + Kokkos Kernels install with the CUDA backend,
#   e.g. from tools/build_kokkos4.sh --backend cuda (its bin/nvcc_wrapper
#   compiles distzo);
# BUILD_DIR (default build-cuda): configured and built here (all targets);
# OUT_DIR (default .device, which .git/info/exclude should ignore): receives
#   bundle.tar.xz — the executables (distzo, test_*, bench_*), mpiexec, and
#   every shared library they need that the GPU machine lacks — and
#   bundle.txt, what is in it. CUDA's own libraries (libcuda, cuBLAS, NCCL) and
#   the C/C++ runtime stay behind: the GPU machine has newer ones.
# Carry OUT_DIR to the device (`carry: [".device"]`) and run
# `bash perf/device_check.sh .device` there.
#
# The host code is built for DISTZO_HOST_ARCH (default x86-64-v3: AVX2, which
# every x86-64 GPU server has), not this machine's -march=native: the GPU
# machine's CPU is another one, and a binary with this CPU's AVX-512 would die
# there with an illegal instruction. BUILD_DIR is reconfigured to it, and the
# bundle is refused if its executables still hold AVX-512 (zmm) instructions.
set -euo pipefail
prefix=${1:?usage: perf/device_bundle.sh KOKKOS_PREFIX [BUILD_DIR] [OUT_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-$root/build-cuda}
out=${3:-$root/.device}
prefix=$(cd "$prefix" && pwd)
[ -x "$prefix/bin/nvcc_wrapper" ] || { echo "device_bundle: $prefix/bin/nvcc_wrapper not found" >&2; exit 2; }

host_arch=${DISTZO_HOST_ARCH-x86-64-v3}
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper" -DCMAKE_PREFIX_PATH="$prefix" \
    -DDISTZO_HOST_ARCH="$host_arch"
else
  cmake "$build" -DDISTZO_HOST_ARCH="$host_arch" > /dev/null
fi
cmake --build "$build" -j"${JOBS:-2}"

stage=$(mktemp -d "${TMPDIR:-/tmp}/distzo-bundle.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/tests" "$stage/perf" "$stage/lib"
cp "$build/distzo" "$stage/bin/"
find "$build/tests" -maxdepth 1 -type f -name 'test_*' -perm -u+x -exec cp {} "$stage/tests/" \;
find "$build/perf" -maxdepth 1 -type f -name 'bench_*' -perm -u+x -exec cp {} "$stage/perf/" \;
for tool in mpiexec.hydra hydra_pmi_proxy; do
  path=$(command -v "$tool" || true)
  [ -n "$path" ] && cp "$(readlink -f "$path")" "$stage/bin/$tool"
done
[ -x "$stage/bin/mpiexec.hydra" ] && ln -s mpiexec.hydra "$stage/bin/mpiexec"

# A portable baseline holds no AVX-512: count zmm operands in distzo's own code.
if [ "$host_arch" = x86-64-v3 ] || [ -z "$host_arch" ]; then
  zmm=$(objdump -d --no-show-raw-insn "$stage/bin/distzo" | grep -c '%zmm' || true)
  [ "$zmm" -eq 0 ] || { echo "device_bundle: distzo holds $zmm AVX-512 instructions with -march=${host_arch:-default}" >&2; exit 1; }
fi

# Shared libraries the executables load, less what the GPU machine brings.
skip='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libresolv|libnsl|libutil|libanl|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia)[.-]'
for exe in "$stage"/bin/* "$stage"/tests/* "$stage"/perf/*; do
  [ -L "$exe" ] && continue
  ldd "$exe" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  cp -L "$path" "$stage/lib/$name"
done

# The SmolLM2 quick deck's data (the demo template with SmolLM2's tokenizer,
# tools/make_real_model.sh; under 1 MiB) when made here: the device check runs
# the deck end to end on a random model of SmolLM2's shape (the real weights,
# 0.5 GB, exceed the carry limit).
data=$root/out/smollm2/data-demo-template
if [ -f "$data/train.h5" ] && [ -f "$data/test.h5" ]; then
  mkdir -p "$stage/smollm2" && cp "$data/train.h5" "$data/test.h5" "$stage/smollm2/"
fi

# Where the tests look for their fixtures (compiled in), so the device script
# can point that path at the working tree it runs in.
sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" > "$stage/source_dir.txt"
{
  echo "distzo device bundle, built $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+changes')"
  echo "kokkos prefix: $prefix"
  echo "host code: -march=${host_arch:-(compiler default)}"
  (cd "$stage" && find . -type f -o -type l | sort | while read -r f; do printf '%10d %s\n' "$(stat -c %s "$f")" "$f"; done)
} > "$stage/bundle.txt"

mkdir -p "$out"
tar -C "$stage" -cJf "$out/bundle.tar.xz" .
cp "$stage/bundle.txt" "$out/bundle.txt"
size=$(stat -c %s "$out/bundle.tar.xz")
echo "device_bundle: $out/bundle.tar.xz, $((size / 1048576)) MiB ($(wc -l < "$stage/bundle.txt") lines in bundle.txt)"
[ "$size" -lt $((60 * 1048576)) ] || { echo "device_bundle: over 60 MiB: the device tool carries 64 MiB in all" >&2; exit 1; }
