#!/usr/bin/env bash
# The whole test suite against another Kokkos than Debian's Serial 3.4: a
# Kokkos 4 + Kokkos Kernels install made outside the repository by
# tools/build_kokkos4.sh. Under Serial Kokkos every Kokkos kernel runs on one
# thread; under OpenMP team kernels, reductions and distzo's host tasks run on
# several, so a race, a missing fence or a scratch-size mistake can show.
#
#   scripts/test-kokkos4.sh KOKKOS_PREFIX [BUILD_DIR]
#
# KOKKOS_PREFIX: the install (lib/cmake/Kokkos, lib/cmake/KokkosKernels);
# BUILD_DIR (default build-kokkos4): configured against it and built here,
# every target; a warning from distzo's own code (src/, tests/, perf/) in what
# this call compiles fails the script (CLEAN=1 rebuilds everything first, so
# that every file is seen).
#   - OpenMP (or Serial) backend: then, for each count in THREADS (default
#     "2 3": 3 oversubscribes a 2-core machine on purpose), the whole ctest
#     suite with OMP_NUM_THREADS set to it (Kokkos' threads, which are then
#     all of a rank's host threads: app/blas_threads.hpp), and the demo deck
#     cut to STEPS steps (default 300), whose digest must equal that of the
#     Serial build in SERIAL_BUILD (default build, made by the README's
#     commands; skipped when it has no distzo): the bits depend on neither the
#     Kokkos version, its backend nor the thread count (docs/formats.md,
#     "What reproducible means").
#   - CUDA backend (the prefix has bin/nvcc_wrapper and Kokkos was built with
#     CUDA): compiled with nvcc_wrapper, built only: nothing runs without a
#     GPU (perf/device_bundle.sh and perf/device_check.sh take it from there).
# Extra arguments for ctest go in CTEST_ARGS (e.g. "-E slurm_").
# Exit status: 0 when the build had no warning of ours, every run passed and
# every digest matched.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: scripts/test-kokkos4.sh KOKKOS_PREFIX [BUILD_DIR] (see the top of the script)" >&2
  exit 2
fi
prefix=$1
build=${2:-$root/build-kokkos4}
threads=${THREADS:-"2 3"}
steps=${STEPS:-300}
serial=${SERIAL_BUILD:-$root/build}
[ -d "$prefix/lib/cmake/Kokkos" ] || [ -d "$prefix/lib64/cmake/Kokkos" ] || {
  echo "test-kokkos4: no Kokkos CMake package under $prefix (make one with tools/build_kokkos4.sh)" >&2
  exit 2
}
cd "$root" || exit 2
cuda=0
if [ -x "$prefix/bin/nvcc_wrapper" ] &&
  grep -qs "define KOKKOS_ENABLE_CUDA" "$prefix"/include/KokkosCore_config.h; then
  cuda=1
fi
configure=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix")
[ "$cuda" = 1 ] && configure+=(-DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper")
cmake -S . -B "$build" "${configure[@]}" | grep -E "^-- distzo" || exit 1

work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-kokkos4.XXXXXX")
trap 'rm -rf "$work"' EXIT
clean=()
[ "${CLEAN:-0}" = 1 ] && clean=(--clean-first)
cmake --build "$build" -j"${JOBS:-2}" "${clean[@]}" 2>&1 | tee "$work/build.log" | grep -E "^\[100%\]|rror" 
[ "${PIPESTATUS[0]}" -eq 0 ] || { echo "test-kokkos4: the build failed (above)" >&2; exit 1; }
# Warnings in distzo's own files: GCC's "FILE:LINE:COL: warning", nvcc's "FILE(LINE): warning".
ours=$(grep -E "^$root/(src|tests|perf)/[^:(]*(:[0-9]+:[0-9]+: |\([0-9]+\): )warning" "$work/build.log" | sort -u)
if [ -n "$ours" ]; then
  echo "test-kokkos4: warnings from distzo's code:"
  echo "$ours"
  exit 1
fi
echo "test-kokkos4: every target built against $prefix$([ "$cuda" = 1 ] && echo " (CUDA, nvcc_wrapper)"), no warning from distzo's code in what was compiled"
if [ "$cuda" = 1 ]; then
  echo "test-kokkos4: CUDA build: nothing runs here without a GPU (perf/device_bundle.sh, perf/device_check.sh)"
  exit 0
fi
# The demo deck, shorter, with its output in the scratch directory.
sed -e "s|^  steps: .*|  steps: $steps|" -e "s|^  interval: .*|  interval: $steps|" \
  -e "s|^  dir: .*|  dir: OUT|" inputs/demo.yaml > "$work/demo.yaml"
# digest BUILD NAME [env...]: the final digest the run prints.
digest() {
  local exe=$1/distzo name=$2; shift 2
  sed "s|OUT|$work/$name|" "$work/demo.yaml" > "$work/$name.yaml"
  env "$@" "$exe" run "$work/$name.yaml" > "$work/$name.log" 2>&1 || {
    echo "test-kokkos4: $name failed:" >&2
    tail -n 5 "$work/$name.log" >&2
    return 1
  }
  sed -n 's/.*digest \([0-9a-f]\{16\}\).*/\1/p' "$work/$name.log" | tail -n 1
}

status=0
reference=""
if [ -x "$serial/distzo" ]; then
  reference=$(digest "$serial" serial) || status=1
  echo "test-kokkos4: Serial build ($serial): demo digest after $steps steps ${reference:-?}"
fi
for n in $threads; do
  echo "test-kokkos4: the suite at OMP_NUM_THREADS=$n ($build)"
  # The tests' environment is set at configure time (tests/CMakeLists.txt):
  # DISTZO_TEST_OMP_THREADS gives them the count (it stays set in BUILD_DIR).
  cmake "$build" -DDISTZO_TEST_OMP_THREADS="$n" > /dev/null || exit 1
  # KOKKOS_DISABLE_WARNINGS: Kokkos' warning on oversubscribed cores (3
  # threads on 2) goes to stderr ahead of distzo's messages, whose length and
  # first line some tests check.
  # shellcheck disable=SC2086 # CTEST_ARGS is a list of arguments
  if ! KOKKOS_DISABLE_WARNINGS=1 OMP_NUM_THREADS=$n OMP_PROC_BIND=false ctest --test-dir "$build" --output-on-failure \
    ${CTEST_ARGS:-} > "$work/ctest.$n.log" 2>&1; then
    status=1
    grep -E "tests passed|Failed|\*\*\*" "$work/ctest.$n.log" | tail -n 20
  fi
  grep -E "tests passed" "$work/ctest.$n.log"
  got=$(digest "$build" "omp$n" OMP_NUM_THREADS="$n" OMP_PROC_BIND=false) || status=1
  if [ -n "$reference" ]; then
    if [ "$got" = "$reference" ]; then
      echo "test-kokkos4: demo digest at OMP_NUM_THREADS=$n: $got, the Serial build's"
    else
      echo "test-kokkos4: demo digest at OMP_NUM_THREADS=$n: ${got:-?}, NOT the Serial build's $reference"
      status=1
    fi
  else
    echo "test-kokkos4: demo digest at OMP_NUM_THREADS=$n: ${got:-?} (no Serial build to compare with)"
  fi
done
exit $status
