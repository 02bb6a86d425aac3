#!/usr/bin/env bash
# Checks that the distzo Spack recipe (spack/packages/distzo) concretizes as
# intended, with a real Spack, offline: it runs `spack spec` on the main
# variants and greps the concretized specs. Not run in CI (it needs Spack).
#
# Get the Spack snapshot it was written against once (this script never
# downloads anything itself): Spack 0.23.0.dev0 of 2024-06-07, with the builtin
# packages, and the clingo solver from PyPI:
#   git clone https://github.com/manuel-g-castro/spack.git spack-0.23
#   git -C spack-0.23 checkout e8f8cf8543
#   python3 -m venv clingo-venv && clingo-venv/bin/pip install clingo
# Then:
#   SPACK_PYTHON=$PWD/clingo-venv/bin/python spack/check_specs.sh $PWD/spack-0.23
# (or set SPACK_ROOT instead of passing the path). About a minute per spec.
#
# It uses a throw-away Spack configuration and cache (compilers found on PATH,
# this repository's spack/ repo, no bootstrapping, no reuse of installed
# packages), so neither ~/.spack nor the Spack checkout is modified.
# Exit status: 0 when every property holds, 1 when one does not, 2 on usage or
# setup errors.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)   # <distzo checkout>/spack
spack_root=${1:-${SPACK_ROOT:-}}
if [[ -z $spack_root || ! -x $spack_root/bin/spack ]]; then
  echo "usage: $0 SPACK_CHECKOUT   (or SPACK_ROOT=SPACK_CHECKOUT $0)" >&2
  echo "  SPACK_CHECKOUT: a Spack checkout with bin/spack (see the top of this script)" >&2
  exit 2
fi
spack_root=$(cd "$spack_root" && pwd)
python=${SPACK_PYTHON:-$(command -v python3)}
if ! "$python" -c 'import clingo' 2>/dev/null; then
  echo "error: $python cannot import clingo (Spack's solver); install it in a venv" >&2
  echo "  (python3 -m venv clingo-venv && clingo-venv/bin/pip install clingo) and set" >&2
  echo "  SPACK_PYTHON=\$PWD/clingo-venv/bin/python" >&2
  exit 2
fi
export SPACK_PYTHON=$python
commit=$(git -C "$spack_root" rev-parse --short=10 HEAD 2>/dev/null || echo unknown)
if [[ $commit != e8f8cf8543* ]]; then
  echo "note: Spack checkout at $commit, not the e8f8cf8543 snapshot this was written against"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-spack-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
export SPACK_USER_CONFIG_PATH=$work/config SPACK_USER_CACHE_PATH=$work/cache
unset SPACK_ENV
spack() { "$spack_root/bin/spack" "$@"; }
{
  spack bootstrap disable &&
  spack config add concretizer:reuse:false &&
  spack repo add "$here" &&
  spack compiler find
} > "$work/setup.log" 2>&1 || { echo "error: setting up Spack failed:" >&2; cat "$work/setup.log" >&2; exit 2; }
echo "Spack $(spack --version) with repo $here"

failures=0
fail() { echo "  FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "  ok: $*"; }

# concretize SPEC...: `spack spec` into $out; returns 1 (after a FAIL) if it does not concretize.
concretize() {
  echo
  echo "== spack spec $*"
  if ! out=$(spack spec "$@" 2>&1); then
    fail "'$*' did not concretize:"
    printf '%s\n' "$out" | sed 's/^/      /'
    return 1
  fi
  # The lines that matter, for the record.
  printf '%s\n' "$out" | grep -E '(^|[ ^])(distzo|kokkos|kokkos-kernels|nccl|openblas)@' |
    sed -E 's/^[ -]+/    /'
}

# line PKG: the concretized line of PKG in $out (empty if absent).
line() { printf '%s\n' "$out" | grep -E "(^|[ ^])$1@" | head -n 1; }

# want PKG TOKEN...: each TOKEN (+variant, ~variant, name=value) is on PKG's line.
want() {
  local pkg=$1 l tok re; shift
  l=$(line "$pkg")
  if [[ -z $l ]]; then fail "$pkg is not in the spec"; return; fi
  for tok in "$@"; do
    case $tok in
      [+~]*) re="[${tok:0:1}]${tok:1}([~+ ]|\$)" ;;
      *) re="(^| )$tok( |\$)" ;;
    esac
    if [[ $l =~ $re ]]; then ok "$pkg $tok"; else fail "$pkg lacks $tok"; fi
  done
}

# absent PKG: PKG is not in the spec.
absent() {
  if [[ -z $(line "$1") ]]; then ok "no $1"; else fail "$1 is in the spec: $(line "$1" | cut -c1-160)"; fi
}

# 1. GPU build: CUDA Kokkos, Kokkos Kernels on cuBLAS and NCCL, all for sm_90.
if concretize distzo +cuda cuda_arch=90; then
  want distzo +cuda +nccl cuda_arch=90
  want kokkos +cuda cuda_arch=90 +cuda_lambda +wrapper
  want kokkos-kernels +cuda +cublas cuda_arch=90
  want nccl +cuda cuda_arch=90
fi

# 2. CPU build, default: OpenMP Kokkos, Kokkos Kernels with the BLAS TPL.
if concretize distzo ~cuda; then
  want distzo ~cuda +openmp
  want kokkos +openmp ~cuda
  want kokkos-kernels +openmp +blas ~cuda
  absent nccl
  if [[ -n $(line openblas) ]]; then want openblas threads=openmp; fi
fi

# 3. CPU build without OpenMP: Serial Kokkos, Kokkos Kernels still on BLAS.
if concretize distzo ~cuda ~openmp; then
  want distzo ~cuda ~openmp
  want kokkos +serial ~openmp ~cuda
  want kokkos-kernels +blas ~cuda
  absent nccl
fi

# 4. GPU build without NCCL: no nccl at all, CUDA Kokkos unchanged.
if concretize distzo +cuda ~nccl cuda_arch=90; then
  want distzo +cuda ~nccl cuda_arch=90
  want kokkos +cuda cuda_arch=90
  absent nccl
fi

# 5. +cuda without a cuda_arch is refused (Kokkos needs one) rather than guessed.
echo
echo "== spack spec distzo +cuda   (no cuda_arch: must fail)"
if out=$(spack spec distzo +cuda 2>&1); then
  fail "distzo +cuda without cuda_arch concretized: $(line distzo | cut -c1-160)"
elif [[ $out == *"needs the GPUs' compute capability"* ]]; then
  ok "refused: distzo +cuda needs the GPUs' compute capability"
else
  fail "distzo +cuda failed, but not for the missing cuda_arch:"
  printf '%s\n' "$out" | sed 's/^/      /'
fi

# 6. spack install --test=root: concretizing with tests on for the root brings
#    GoogleTest and the HDF5 tools (h5diff); `spack spec` has no --test, so this
#    asks the solver directly, as `spack install --test=root` does.
echo
echo "== distzo ~cuda concretized as for spack install --test=root"
cat > "$work/tests.py" <<'EOF'
import spack.spec

spec = spack.spec.Spec("distzo ~cuda").concretized(tests=["distzo"])
for dep in spec.dependencies(deptype="test"):
    print(f"test-dep {dep.format('{name}{@version}{variants}')}")
print(f"hdf5-line {spec['hdf5'].format('{name}{@version}{variants}')}")
EOF
if out=$(spack python "$work/tests.py" 2>&1); then
  printf '%s\n' "$out" | grep -E '^(test-dep|hdf5-line) ' | sed 's/^/    /'
  if grep -Eq '^test-dep googletest@' <<<"$out"; then ok "googletest is a test dependency"; else fail "no googletest test dependency"; fi
  if grep -Eq '^hdf5-line hdf5@.*\+tools' <<<"$out"; then ok "hdf5 +tools"; else fail "hdf5 without +tools"; fi
else
  fail "distzo ~cuda with tests did not concretize:"
  printf '%s\n' "$out" | sed 's/^/      /'
fi

echo
if ((failures)); then
  echo "check_specs.sh: $failures check(s) FAILED"
  exit 1
fi
echo "check_specs.sh: all checks passed"
