#!/usr/bin/env bash
# Installs distzo's build and test dependencies on Debian 12 (bookworm).
# Runs apt-get through sudo unless already root. Safe to run again.
#   --test  also what only the test suite needs: SLURM and munge, for the
#           tests that run a cluster of their own (slurm_requeue on one
#           node, slurm_two_nodes on two; the packages' own services are not
#           configured or used), and python3-h5py, for the test of
#           tools/hf_to_h5.py's round trip (mpi_hf_round_trip), and
#           clang-format and clang-tidy, for scripts/check-style.sh (CI).
set -euo pipefail
with_test=0
for arg in "$@"; do
  case "$arg" in
    --test) with_test=1 ;;
    *) echo "usage: $0 [--test]" >&2; exit 2 ;;
  esac
done
packages=(
  build-essential cmake pkg-config
  libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev  # Kokkos 3.4 + Kokkos Kernels (Serial, BLAS TPL)
  libopenblas-dev
  mpich libmpich-dev
  libhdf5-mpich-dev hdf5-tools
  libyaml-cpp-dev
  googletest libgtest-dev
)
((with_test)) && packages+=(slurm-wlm munge python3-h5py clang-format clang-tidy)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-debian-deps: all ${#packages[@]} packages already installed"
  exit 0
fi
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "install-debian-deps: installing ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
