#!/usr/bin/env bash
# The GPU checks of Placement I, on a lent GPU machine (the device tool),
# from the repository root there, in one call of at most ~8 minutes:
#
#   bash perf/device_check.sh .device        # .device: made by perf/device_bundle.sh
#
# 1. the machine: nvidia-smi, where cuBLAS and NCCL come from;
# 2. every test binary, and the command-line tests (placement, mesh under the
#    bundled mpiexec), on the GPU;
# 3. pinned host <-> device bandwidth on the streamer's instances (bench_transfer);
# 4. the ZO step on an OPT-1.3B shape (random weights), resident and offloaded
#    (K = 0, then K = 12), and the share of the upload time hidden behind
#    compute: 1 - (t_offload - t_resident) / (bytes up per step / H2D GB/s);
#    then θ in bf16 offloaded (K = 0), with float32 GEMMs and with the blocks'
#    GEMMs on 2-byte inputs (precision.gemm_inputs: storage, cublasGemmEx).
# Everything goes to $OUT (the device tool's output folder) or /tmp/device-check:
# device_check.log (all output) and device_check.md (the summary).
set -uo pipefail
bundle_dir=${1:-.device}
out=${OUT:-/tmp/device-check}
mkdir -p "$out"
exec > >(tee "$out/device_check.log") 2>&1
root=$(pwd)
summary=$out/device_check.md
note() { echo "$*" | tee -a "$summary"; }
step() { echo; echo "== $* ($(date -u +%H:%M:%S))"; }
: > "$summary"

step "unpacking $bundle_dir/bundle.tar.xz"
dz=/tmp/distzo-device
rm -rf "$dz"
mkdir -p "$dz"
tar -C "$dz" -xJf "$bundle_dir/bundle.tar.xz" || { note "FAIL: no bundle at $bundle_dir/bundle.tar.xz"; exit 1; }
head -n 2 "$dz/bundle.txt"

# The CUDA runtime and cuBLAS: the CUDA toolkit's, else the ones PyTorch's
# wheels bring. The bundled libraries (older than the machine's own) are seen
# by the bundled programs only: each gets a wrapper that sets
# LD_LIBRARY_PATH for it alone, so the machine's tools keep their libraries.
libdirs="$dz/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && libdirs+=":$d"; done
site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || true)
for d in "$site"/nvidia/*/lib "$site"/nvidia/cu13/lib; do [ -d "$d" ] && libdirs+=":$d"; done
mkdir -p "$dz/real"
for exe in "$dz"/bin/* "$dz"/tests/* "$dz"/perf/*; do
  [ -f "$exe" ] && [ ! -L "$exe" ] || continue
  real="$dz/real/$(basename "$exe")"
  mv "$exe" "$real"
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' "$libdirs" "$real" > "$exe"
  chmod +x "$exe"
done
export PATH="$dz/bin:$PATH" OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

step "machine"
nvidia-smi -L || note "FAIL: nvidia-smi"
nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
missing=$(LD_LIBRARY_PATH=$libdirs ldd "$dz/real/distzo" | grep "not found" || true)
[ -z "$missing" ] || { note "FAIL: distzo cannot load: $missing"; exit 1; }
LD_LIBRARY_PATH=$libdirs ldd "$dz/real/distzo" | grep -E "cublas|cudart|mpich|hdf5" || true
note "# distzo on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1), $(date -u +%Y-%m-%d)"
note "bundle: $(head -n 1 "$dz/bundle.txt")"

# The tests read their fixtures from the source tree they were built in.
built_src=$(cat "$dz/source_dir.txt")
if [ "$built_src" != "$root" ] && [ ! -e "$built_src/tests/data" ]; then
  mkdir -p "$built_src/tests" && ln -s "$root/tests/data" "$built_src/tests/data"
  ln -sfn "$root/docs" "$built_src/docs" 2>/dev/null || true
fi

step "test binaries"
passed=0 failed=0
for t in "$dz"/tests/test_*; do
  name=$(basename "$t")
  if [ "$name" = test_mesh_mpi ]; then
    cmd=(mpiexec -n 4 "$t")
  elif [ "$name" = test_slices_mpi ]; then
    # Placement II: 2 ranks slice the offloaded blocks. With 2+ GPUs each
    # rank gets its own and the NCCL exchange runs too (NCCL refuses two
    # ranks on one GPU); with one, both share it and only MPI exchanges.
    if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
      cmd=(mpiexec -n 2 env DISTZO_TEST_NCCL=1 "$t" --kokkos-map-device-id-by=mpi_rank)
    else
      cmd=(mpiexec -n 2 "$t")
    fi
  else
    cmd=("$t")
  fi
  if timeout 180 "${cmd[@]}" --gtest_brief=1 > "$out/$name.log" 2>&1; then
    passed=$((passed + 1)); echo "ok: $name"
  else
    failed=$((failed + 1)); echo "FAILED: $name"; tail -n 30 "$out/$name.log"
  fi
done
# The command-line tests that exercise placement and the step on the GPU
# (each distzo process pays a CUDA context: the others stay on the CPU runs).
for cli in train_and_resume placement; do
  if timeout 240 bash "tests/cli/$cli.sh" "$dz/bin/distzo" "$root/tests/data" mpiexec > "$out/cli_$cli.log" 2>&1; then
    passed=$((passed + 1)); echo "ok: cli $cli"
  else
    failed=$((failed + 1)); echo "FAILED: cli $cli"; tail -n 20 "$out/cli_$cli.log"
  fi
done
note "tests on the GPU: $passed passed, $failed failed"

step "pinned transfers (bench_transfer)"
timeout 120 "$dz/perf/bench_transfer" --mib 2048 --reps 5 | tee "$out/transfer.txt"
h2d=$(sed -n 's/^upload  H2D   : \([0-9.]*\) GB\/s.*/\1/p' "$out/transfer.txt")
d2h=$(sed -n 's/^write-back D2H: \([0-9.]*\) GB\/s.*/\1/p' "$out/transfer.txt")
both=$(sed -n 's/^both at once  : \([0-9.]*\) GB\/s.*/\1/p' "$out/transfer.txt")
note "pinned H2D ${h2d:-?} GB/s, D2H ${d2h:-?} GB/s, both directions at once ${both:-?} GB/s (2 GiB copies, median of 5)"

step "ZO step, OPT-1.3B shape, batch 8 x 256"
bench() {  # bench NAME [placement options]
  local name=$1; shift
  timeout 200 "$dz/perf/bench_step" "$root/perf/opt_configs/opt-1.3b.json" --batch 8 --seq 256 \
    --reps 3 --warmup 1 "$@" > "$out/step_$name.txt" 2>&1
  cat "$out/step_$name.txt"
}
field() { sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p" "$out/step_$1.txt" | tail -n 1; }
bench resident
bench offload_k0 --placement offload --resident-blocks 0
bench offload_k12 --placement offload --resident-blocks 12
# θ in bf16: w± and GEMMs in float32, then the blocks' GEMMs on the tensor
# cores (precision.gemm_inputs: storage, cublasGemmEx), every block offloaded.
bench bf16_k0 --placement offload --resident-blocks 0 --storage bf16
bench bf16_words_k0 --placement offload --resident-blocks 0 --storage bf16 --gemm-inputs storage
t_res=$(field resident s_per_step)
note ""
note "| placement | s / step | bytes up per step | device peak GB | upload time at H2D (s) | upload hidden |"
note "|---|---|---|---|---|---|"
for name in resident offload_k0 offload_k12 bf16_k0 bf16_words_k0; do
  t=$(field "$name" s_per_step); up=$(field "$name" bytes_up_per_step); peak=$(field "$name" device_peak_bytes)
  row=$(awk -v t="$t" -v r="$t_res" -v up="$up" -v bw="${h2d:-0}" -v peak="$peak" 'BEGIN {
    tu = (bw > 0) ? up / (bw * 1e9) : 0
    hidden = (tu > 0) ? 1 - (t - r) / tu : 1
    if (hidden > 1) hidden = 1; if (hidden < 0) hidden = 0
    printf "%.4g | %.3g | %.3g | %.3g | %s", t, up, peak / 1e9, tu, (tu > 0) ? sprintf("%.0f %%", 100 * hidden) : "-" }')
  note "| $name | $row |"
done
note ""
note "(upload hidden = 1 - (t_offload - t_resident) / upload time at the measured H2D rate)"
echo; echo "summary:"; cat "$summary"
