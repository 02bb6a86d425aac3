#!/usr/bin/env bash
# Checks that the distzo Spack recipe (spack/packages/distzo) concretizes as
# intended, with a real Spack, offline: it runs `spack spec` on the main
# variants and greps the concretized specs. Not run in CI (it needs Spack).
#
# Written against Spack 1.1.1 (commit c6a799277c, 2026-01-15) with its builtin
# packages, which Spack 1.x keeps in a separate repository: spack-packages
# v2025.11.0 (commit 119680aeee, the releases/v2025.11 branch that Spack 1.1
# pins). Also passes with Spack 1.2.0.dev0 (develop 9cf66332df, 2026-01-16) and
# spack-packages v2026.06.0 (d4f7c711a6) or develop (1e8cf059e3, 2026-07-01),
# and with the Spack 0.23.0.dev0 snapshot e8f8cf8543 of 2024, which carries its
# builtin packages (pass no spack-packages then).
# Get them once (this script never downloads anything itself), with the clingo
# solver from PyPI:
#   git clone https://github.com/spack/spack.git spack-1.1
#   git -C spack-1.1 checkout c6a799277c     # spack --version: 1.1.1
#   git clone https://github.com/spack/spack-packages.git spack-packages
#   git -C spack-packages checkout v2025.11.0
#   python3 -m venv clingo-venv && clingo-venv/bin/pip install clingo
# Then:
#   SPACK_PYTHON=$PWD/clingo-venv/bin/python \
#     spack/check_specs.sh $PWD/spack-1.1 $PWD/spack-packages
# (or set SPACK_ROOT and SPACK_PACKAGES instead of passing the paths). About
# four minutes in all. The specs use the compilers found on PATH: with GCC 12
# (Debian 12's; Spack prefers it to clang) Kokkos stays at 4.6, the recipe's
# conflict with the mdspan View of later ones; with GCC 13+, or with %llvm
# added to the spec, newer spack-packages give Kokkos 5.
#
# It uses a throw-away Spack configuration, cache and install tree (compilers
# found on PATH, this repository's spack/ repo, the given builtin packages, no
# bootstrapping, no reuse of installed packages, git limited to local
# repositories so that Spack 1.x cannot look up distzo's branch on GitHub), so
# neither ~/.spack nor the Spack or spack-packages checkout is modified.
# Exit status: 0 when every property holds, 1 when one does not, 2 on usage or
# setup errors.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)   # <distzo checkout>/spack
spack_root=${1:-${SPACK_ROOT:-}}
packages_root=${2:-${SPACK_PACKAGES:-}}
usage() {
  echo "usage: $0 SPACK_CHECKOUT [SPACK_PACKAGES_CHECKOUT]" >&2
  echo "   (or SPACK_ROOT=SPACK_CHECKOUT SPACK_PACKAGES=SPACK_PACKAGES_CHECKOUT $0)" >&2
  echo "  SPACK_CHECKOUT: a Spack checkout with bin/spack (see the top of this script)" >&2
  echo "  SPACK_PACKAGES_CHECKOUT: a spack-packages checkout, the builtin packages of" >&2
  echo "    Spack 1.x (Spack 0.x carries them in var/spack/repos/builtin)" >&2
  exit 2
}
if [[ -z $spack_root || ! -x $spack_root/bin/spack ]]; then usage; fi
spack_root=$(cd "$spack_root" && pwd)
# Spack 0.x ships its builtin packages; Spack 1.x clones them from GitHub on
# first use unless the configuration points at a local spack-packages checkout.
builtin=
if [[ ! -f $spack_root/var/spack/repos/builtin/repo.yaml ]]; then
  if [[ -z $packages_root || ! -f $packages_root/repos/spack_repo/builtin/repo.yaml ]]; then
    echo "error: $spack_root has no builtin packages (Spack 1.x): pass a spack-packages checkout" >&2
    usage
  fi
  builtin=$(cd "$packages_root/repos/spack_repo/builtin" && pwd)
fi
python=${SPACK_PYTHON:-$(command -v python3)}
if ! "$python" -c 'import clingo' 2>/dev/null; then
  echo "error: $python cannot import clingo (Spack's solver); install it in a venv" >&2
  echo "  (python3 -m venv clingo-venv && clingo-venv/bin/pip install clingo) and set" >&2
  echo "  SPACK_PYTHON=\$PWD/clingo-venv/bin/python" >&2
  exit 2
fi
export SPACK_PYTHON=$python
commit=$(git -C "$spack_root" rev-parse --short=10 HEAD 2>/dev/null || echo unknown)
if [[ $commit != c6a799277c* && $commit != e8f8cf8543* ]]; then
  echo "note: Spack checkout at $commit, not the c6a799277c (1.1.1) or e8f8cf8543 snapshot this was written against"
fi
if [[ -n $builtin ]]; then
  pcommit=$(git -C "$packages_root" rev-parse --short=10 HEAD 2>/dev/null || echo unknown)
  if [[ $pcommit != 119680aeee* ]]; then
    echo "note: spack-packages checkout at $pcommit, not v2025.11.0 (119680aeee)"
  fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-spack-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
export SPACK_USER_CONFIG_PATH=$work/config SPACK_USER_CACHE_PATH=$work/cache
# Spack 1.x skips a user scope whose directory does not exist and then writes
# its configuration into the Spack checkout (etc/spack): create it, and name it.
mkdir -p "$work/config" "$work/cache"
# Spack 1.x resolves a branch version's commit with `git ls-remote` while
# concretizing; allow git local repositories only, so the check stays offline.
export GIT_ALLOW_PROTOCOL=file
unset SPACK_ENV
spack() { "$spack_root/bin/spack" "$@"; }
if [[ -n $builtin ]]; then
  # `repos::` replaces the default repos (builtin from GitHub) instead of merging.
  printf 'repos::\n  distzo: %s\n  builtin: %s\n' "$here" "$builtin" > "$work/config/repos.yaml"
fi
{
  spack bootstrap disable --scope user &&
  spack config --scope user add concretizer:reuse:false &&
  spack config --scope user add "config:install_tree:root:$work/store" &&
  { [[ -n $builtin ]] || spack repo add --scope user "$here"; } &&
  spack compiler find --scope user &&
  spack repo list
} > "$work/setup.log" 2>&1 || { echo "error: setting up Spack failed:" >&2; cat "$work/setup.log" >&2; exit 2; }
if ! grep -q "$here" "$work/setup.log"; then
  echo "error: the distzo repo $here is not among Spack's repos:" >&2; cat "$work/setup.log" >&2; exit 2
fi
echo "Spack $(spack --version) with repos:"
grep -E "^(\[.\] +)?(distzo|builtin) " "$work/setup.log" | sed 's/^/    /'

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
# name=value also matches name:=value, Spack 1.x's display of a multi-valued
# variant (cuda_arch of kokkos-kernels and nccl) that holds exactly that value.
want() {
  local pkg=$1 l tok re; shift
  l=$(line "$pkg")
  if [[ -z $l ]]; then fail "$pkg is not in the spec"; return; fi
  for tok in "$@"; do
    case $tok in
      [+~]*) re="[${tok:0:1}]${tok:1}([~+ ]|\$)" ;;
      *=*) re="(^| )${tok%%=*}:?=${tok#*=}( |\$)" ;;
      *) re="(^| )$tok( |\$)" ;;
    esac
    if [[ $l =~ $re ]]; then ok "$pkg $tok"; else fail "$pkg lacks $tok"; fi
  done
}

# compiled PKG: PKG's line names its C++ compiler: %c,cxx=gcc@... in Spack 1.x
# (where a package without a cxx dependency gets no compiler at all), %gcc@...
# in Spack 0.x.
compiled() {
  local l re='%([a-z,]*cxx[a-z,]*=|[a-z][a-z0-9_-]*@)'
  l=$(line "$1")
  if [[ $l =~ $re ]]; then ok "$1 has a C++ compiler: ${BASH_REMATCH[0]}"; else fail "$1 has no C++ compiler"; fi
}

# kokkos_fits_compiler: with GCC 12 or older as distzo's compiler, Kokkos is at
# most 4.7.00 (later ones have the mdspan View, which GCC 12 miscompiles; the
# recipe's conflict). Other compilers: nothing to check.
kokkos_fits_compiler() {
  local re='%[a-z,=]*gcc@([0-9]+)\.' gcc kv
  if [[ $(line distzo) =~ $re ]] && ((BASH_REMATCH[1] <= 12)); then
    gcc=${BASH_REMATCH[1]}
    kv=$(line kokkos | sed -E 's/.*kokkos@([0-9.]+).*/\1/')
    if [[ $(printf '%s\n' "$kv" 4.7.00 | sort -V | tail -n 1) == 4.7.00 ]]; then
      ok "kokkos@$kv with GCC $gcc"
    else
      fail "kokkos@$kv (mdspan View) with GCC $gcc"
    fi
  fi
}

# absent PKG: PKG is not in the spec.
absent() {
  if [[ -z $(line "$1") ]]; then ok "no $1"; else fail "$1 is in the spec: $(line "$1" | cut -c1-160)"; fi
}

# 1. GPU build: CUDA Kokkos, Kokkos Kernels on cuBLAS and NCCL, all for sm_90.
if concretize distzo +cuda cuda_arch=90; then
  want distzo +cuda +nccl cuda_arch=90
  compiled distzo
  kokkos_fits_compiler
  want kokkos +cuda cuda_arch=90 +wrapper
  # Kokkos 5 always compiles device lambdas and has no cuda_lambda variant.
  if [[ $(line kokkos) =~ kokkos@4\. ]]; then want kokkos +cuda_lambda; fi
  want kokkos-kernels +cuda +cublas cuda_arch=90
  want nccl +cuda cuda_arch=90
fi

# 2. CPU build, default: OpenMP Kokkos, Kokkos Kernels with the BLAS TPL.
if concretize distzo ~cuda; then
  want distzo ~cuda +openmp
  compiled distzo
  kokkos_fits_compiler
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

try:  # Spack 1.x; Spec.concretized() is gone there
    from spack.concretize import concretize_one
except ImportError:  # Spack 0.2x
    def concretize_one(spec, tests):
        return spack.spec.Spec(spec).concretized(tests=tests)

spec = concretize_one("distzo ~cuda", tests=["distzo"])
for dep in spec.dependencies(deptype="test"):
    print(f"test-dep {dep.format('{name}{@version}{variants}')}")
print(f"hdf5-line {spec['hdf5'].format('{name}{@version}{variants}')}")
for name in ("kokkos", "googletest"):
    print(f"cxxstd {name} {spec[name].variants['cxxstd'].value}")
EOF
if out=$(spack python "$work/tests.py" 2>&1); then
  printf '%s\n' "$out" | grep -E '^(test-dep|hdf5-line|cxxstd) ' | sed 's/^/    /'
  if grep -Eq '^test-dep googletest@' <<<"$out"; then ok "googletest is a test dependency"; else fail "no googletest test dependency"; fi
  if grep -Eq '^hdf5-line hdf5@.*\+tools' <<<"$out"; then ok "hdf5 +tools"; else fail "hdf5 without +tools"; fi
  # GoogleTest is built in Kokkos' C++ standard, as distzo is (20 with Kokkos 5).
  std_kokkos=$(sed -n 's/^cxxstd kokkos //p' <<<"$out") std_gtest=$(sed -n 's/^cxxstd googletest //p' <<<"$out")
  if [[ -n $std_kokkos && $std_kokkos == "$std_gtest" ]]; then
    ok "googletest cxxstd=$std_gtest, as kokkos"
  else
    fail "googletest cxxstd=$std_gtest, kokkos cxxstd=$std_kokkos"
  fi
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
