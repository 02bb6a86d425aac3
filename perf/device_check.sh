#!/usr/bin/env bash
# The GPU checks, on a lent GPU machine (the device tool), from the
# repository root there, in one call of at most 9 minutes (DEVICE_CHECK_SECONDS,
# default 530: every step's timeout is cut to what is left, and a step that no
# longer fits is skipped and said so):
#
#   bash perf/device_check.sh .device              # .device: made by perf/device_bundle.sh
#   bash perf/device_check.sh --dry-run .device    # here, on a CPU: everything up to
#                                                  # the first CUDA call (see below)
#
# 1. the machine: nvidia-smi, the driver, where cuBLAS and NCCL come from;
# 2. every test binary on the GPU (golden forward of every architecture,
#    resident = offloaded, bf16 + SR, 2-byte GEMM inputs, the fused kernel
#    against the host reference, the plan against the measured high-water mark);
# 3. pinned host <-> device bandwidth on the streamer's instances (bench_transfer);
# 4. the ZO step on OPT-1.3B and OPT-6.7B shapes (random weights, batch 8 x
#    256), resident and offloaded (K = 0; K = 12 for 1.3B), θ in bf16 with
#    float32 GEMMs and with the blocks' GEMMs on 2-byte inputs: s/step, the
#    device high-water mark against `distzo plan`'s prediction for the same
#    shape and placement, and the share of the upload time hidden behind
#    compute: 1 - (t_offload - t_resident) / (bytes up per step / H2D GB/s);
# 5. the command-line tests that run the placements and train/resume;
# 6. the SmolLM2 quick deck (inputs/smollm2_quick.yaml) end to end, resident
#    and offloaded, on a random model of SmolLM2-135M's shape with the deck's
#    real data when the bundle carries them (the real weights exceed the carry
#    limit): wall time and s/step.
# Everything goes to $OUT (the device tool's output folder) or /tmp/device-check:
# device_check.log (all output) and device_check.md (the summary: tables to
# paste into perf/RESULTS.md).
#
# --dry-run does what needs no GPU: unpacks the bundle, wraps its programs,
# checks that every library they need resolves (the driver's libcuda aside),
# that every file the steps read is there, and prints each command it would
# run with its time limit and what the limits add up to at worst (the budget
# then cuts the last steps).
set -uo pipefail
dry=0
if [ "${1:-}" = --dry-run ]; then dry=1; shift; fi
bundle_dir=${1:-.device}
out=${OUT:-/tmp/device-check}
budget=${DEVICE_CHECK_SECONDS:-530}
started=$(date +%s)
mkdir -p "$out"
exec > >(tee "$out/device_check.log") 2>&1
root=$(pwd)
summary=$out/device_check.md
note() { echo "$*" | tee -a "$summary"; }
step() { echo; echo "== $* ($(date -u +%H:%M:%S), $(left) s left)"; }
: > "$summary"

# Seconds left of the budget; limit N: N, or what is left less a margin for
# the summary, whichever is less (0: the step no longer fits).
left() { echo $((budget - ($(date +%s) - started))); }
limit() { local l=$(($(left) - 15)); [ "$l" -lt "$1" ] && echo $((l > 20 ? l : 0)) || echo "$1"; }
planned=0
# run N LOG CMD...: CMD under a timeout of limit N, output to LOG; in a dry
# run only said (and N added to the planned total).
run() {
  local n=$1 log=$2; shift 2
  if [ "$dry" = 1 ]; then
    planned=$((planned + n))
    echo "would run (<= $n s): $* > ${log#"$out"/}"
    echo "DRY RUN: not run" > "$log"
    return 0
  fi
  local t
  t=$(limit "$n")
  if [ "$t" -eq 0 ]; then
    echo "SKIPPED (out of time): $*" | tee "$log"
    return 124
  fi
  timeout "$t" "$@" > "$log" 2>&1
}

step "unpacking $bundle_dir/bundle.tar.xz"
[ -f "$bundle_dir/bundle.tar.xz" ] ||
  { note "FAIL: no bundle at $bundle_dir/bundle.tar.xz (make one with perf/device_bundle.sh)"; exit 1; }
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
# Every bundled program's libraries resolve (the driver's libcuda comes with
# the GPU machine: a dry run on a CPU machine lacks it).
missing=""
for exe in "$dz"/real/*; do
  m=$(LD_LIBRARY_PATH=$libdirs ldd "$exe" 2>/dev/null | grep "not found" | grep -v "libcuda\.so" || true)
  [ -z "$m" ] || missing+="$(basename "$exe"): $m"$'\n'
done
[ -z "$missing" ] || { note "FAIL: programs cannot load: $missing"; exit 1; }
LD_LIBRARY_PATH=$libdirs ldd "$dz/real/distzo" | grep -E "cublas|cudart|nccl|mpich|hdf5" || true
for f in perf/opt_configs/opt-1.3b.json perf/opt_configs/opt-6.7b.json perf/smollm2-135m.config.json \
  inputs/smollm2_quick.yaml tests/cli/train_and_resume.sh tests/cli/placement.sh tests/data; do
  [ -e "$root/$f" ] || { note "FAIL: $f is missing from the working tree"; exit 1; }
done
if [ "$dry" = 1 ]; then
  note "dry run on $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1): bundle unpacked, every program's libraries resolve (libcuda aside), every file the steps read is in the working tree"
else
  nvidia-smi -L || { note "FAIL: nvidia-smi"; exit 1; }
  nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
  note "# distzo on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1), $(date -u +%Y-%m-%d)"
  note "driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1), $(nvidia-smi | sed -n 's/.*CUDA Version: \([0-9.]*\).*/CUDA \1 (driver)/p' | head -n 1)"
fi
note "bundle: $(head -n 1 "$dz/bundle.txt")"

# The tests read their fixtures from the source tree they were built in.
built_src=$(cat "$dz/source_dir.txt")
if [ "$built_src" != "$root" ] && [ ! -e "$built_src/tests/data" ]; then
  mkdir -p "$built_src/tests" && ln -s "$root/tests/data" "$built_src/tests/data"
  ln -sfn "$root/docs" "$built_src/docs" 2>/dev/null || true
fi

step "test binaries"
passed=0 failed=0 skipped=0
tally() {  # tally STATUS NAME LOG
  if [ "$dry" = 1 ]; then
    return 0
  elif [ "$1" -eq 0 ]; then
    passed=$((passed + 1)); echo "ok: $2"
  elif grep -q "^SKIPPED" "$3"; then
    skipped=$((skipped + 1)); echo "skipped: $2"
  else
    failed=$((failed + 1)); echo "FAILED: $2"; tail -n 30 "$3"
  fi
}
# The test binaries get 200 s together; the benchmarks follow.
echo "(the test binaries share 200 s; each is cut to 120 s at most)"
tests_until=$(($(date +%s) + 200))
planned_before_tests=$planned
for t in "$dz"/tests/test_*; do
  name=$(basename "$t")
  if [ "$name" = test_mesh_mpi ]; then
    cmd=(mpiexec -n 4 "$t")
  elif [ "$name" = test_slices_mpi ]; then
    # Placement II: 2 ranks slice the offloaded blocks. With 2+ GPUs each
    # rank gets its own and the NCCL exchange runs too (NCCL refuses two
    # ranks on one GPU); with one, both share it and only MPI exchanges.
    if [ "$dry" = 0 ] && [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
      cmd=(mpiexec -n 2 env DISTZO_TEST_NCCL=1 "$t" --kokkos-map-device-id-by=mpi_rank)
    else
      cmd=(mpiexec -n 2 "$t")
    fi
  else
    cmd=("$t")
  fi
  share=$((tests_until - $(date +%s)))
  [ "$dry" = 1 ] && share=120
  [ "$share" -gt 120 ] && share=120
  [ "$share" -lt 0 ] && share=0
  run "$share" "$out/$name.log" "${cmd[@]}" --gtest_brief=1
  tally $? "$name" "$out/$name.log"
done
planned=$((planned - planned_before_tests > 200 ? planned_before_tests + 200 : planned))
[ "$dry" = 1 ] || note "test binaries on the GPU: $passed passed, $failed failed, $skipped skipped (out of time)"

step "pinned transfers (bench_transfer)"
run 60 "$out/transfer.txt" "$dz/perf/bench_transfer" --mib 2048 --reps 5
cat "$out/transfer.txt"
h2d=$(sed -n 's/^upload  H2D   : \([0-9.]*\) GB\/s.*/\1/p' "$out/transfer.txt")
d2h=$(sed -n 's/^write-back D2H: \([0-9.]*\) GB\/s.*/\1/p' "$out/transfer.txt")
both=$(sed -n 's/^both at once  : \([0-9.]*\) GB\/s.*/\1/p' "$out/transfer.txt")
[ "$dry" = 1 ] || note "pinned H2D ${h2d:-?} GB/s, D2H ${d2h:-?} GB/s, both directions at once ${both:-?} GB/s (2 GiB copies, median of 5)"

step "ZO step, OPT-1.3B and OPT-6.7B shapes, batch 8 x 256"
# bench SHAPE NAME SECONDS [placement options]: bench_step, and distzo plan's
# device total for the same shape and options.
bench() {
  local shape=$1 name=$2 seconds=$3; shift 3
  local config=$root/perf/opt_configs/opt-$shape.json
  run "$seconds" "$out/step_$shape-$name.txt" "$dz/perf/bench_step" "$config" --batch 8 --seq 256 \
    --reps 3 --warmup 1 "$@"
  cat "$out/step_$shape-$name.txt"
  local plan_args=() a
  for a in "$@"; do plan_args+=("$a"); done
  run 20 "$out/plan_$shape-$name.txt" distzo plan "$config" --batch 8 --seq 256 "${plan_args[@]}"
}
field() { sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p" "$out/step_$1.txt" | tail -n 1; }
planned_bytes() { sed -n 's/^  total .*(\([0-9]*\) B).*/\1/p' "$out/plan_$1.txt" | head -n 1; }
bench 1.3b resident 60
bench 1.3b offload_k0 60 --placement offload --resident-blocks 0
bench 1.3b offload_k12 60 --placement offload --resident-blocks 12
# θ in bf16: w± and GEMMs in float32, then the blocks' GEMMs on the tensor
# cores (precision.gemm_inputs: storage, cublasGemmEx), every block offloaded.
bench 1.3b bf16_k0 60 --placement offload --resident-blocks 0 --storage bf16
bench 1.3b bf16_words_k0 60 --placement offload --resident-blocks 0 --storage bf16 --gemm-inputs storage
bench 6.7b resident 90
bench 6.7b offload_k0 90 --placement offload --resident-blocks 0
bench 6.7b bf16_words_k0 90 --placement offload --resident-blocks 0 --storage bf16 --gemm-inputs storage
if [ "$dry" = 0 ]; then
  note ""
  note "| shape | placement | s / step | bytes up per step | device peak (B) | plan (B) | peak - plan | upload time at H2D (s) | upload hidden |"
  note "|---|---|---|---|---|---|---|---|---|"
  for shape in 1.3b 6.7b; do
    t_res=$(field "$shape-resident" s_per_step)
    for name in resident offload_k0 offload_k12 bf16_k0 bf16_words_k0; do
      [ -f "$out/step_$shape-$name.txt" ] || continue
      t=$(field "$shape-$name" s_per_step); up=$(field "$shape-$name" bytes_up_per_step)
      peak=$(field "$shape-$name" device_peak_bytes); plan=$(planned_bytes "$shape-$name")
      row=$(awk -v t="$t" -v r="$t_res" -v up="$up" -v bw="${h2d:-0}" -v peak="$peak" -v plan="$plan" 'BEGIN {
        if (t == "") { printf "- | - | - | - | - | - | -"; exit }
        tu = (bw > 0) ? up / (bw * 1e9) : 0
        hidden = (tu > 0 && r != "") ? 1 - (t - r) / tu : 1
        if (hidden > 1) hidden = 1; if (hidden < 0) hidden = 0
        printf "%.4g | %.3g | %d | %s | %s | %.3g | %s", t, up, peak, (plan == "") ? "-" : plan,
          (plan == "") ? "-" : sprintf("%d", peak - plan), tu, (tu > 0) ? sprintf("%.0f %%", 100 * hidden) : "-" }')
      note "| OPT-$shape | $name | $row |"
    done
  done
  note ""
  note "(upload hidden = 1 - (t_offload - t_resident) / upload time at the measured H2D rate;"
  note "peak: bench_step's device high-water mark; plan: \`distzo plan\`'s device total for the same shape)"
fi

step "command-line tests (placements, train and resume)"
# Each distzo process pays a CUDA context: the other command-line tests stay
# on the CPU runs.
for cli in placement train_and_resume; do
  run 150 "$out/cli_$cli.log" bash "tests/cli/$cli.sh" "$dz/bin/distzo" "$root/tests/data" mpiexec
  tally $? "cli $cli" "$out/cli_$cli.log"
done
[ "$dry" = 1 ] || note "all tests on the GPU: $passed passed, $failed failed, $skipped skipped (out of time)"

step "SmolLM2 quick deck end to end (random weights of SmolLM2-135M's shape)"
deck_dir=/tmp/distzo-smollm2
rm -rf "$deck_dir" && mkdir -p "$deck_dir"
if [ -f "$dz/smollm2/train.h5" ]; then
  run 60 "$out/smollm2_model.txt" distzo make-model "$deck_dir/model.h5" \
    --config "$root/perf/smollm2-135m.config.json" --seed 1
  for placement in resident offload; do
    sed -e "s|^  path: .*|  path: $deck_dir/model.h5|" -e "s|^  train: .*|  train: $dz/smollm2/train.h5|" \
      -e "s|^  eval: .*|  eval: $dz/smollm2/test.h5|" -e "s|^  dir: .*|  dir: $deck_dir/run-$placement|" \
      "$root/inputs/smollm2_quick.yaml" > "$deck_dir/$placement.yaml"
    [ "$placement" = offload ] && printf 'placement:\n  mode: offload\n  resident_blocks: 0\n' >> "$deck_dir/$placement.yaml"
    t0=$(date +%s.%N)
    run 90 "$out/smollm2_$placement.txt" distzo run "$deck_dir/$placement.yaml"
    status=$?
    t1=$(date +%s.%N)
    [ "$dry" = 1 ] && continue
    if [ "$status" -eq 0 ]; then
      note "SmolLM2 quick deck, $placement: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s wall for 60 steps and 2 evaluations; $(grep -E "digest|accuracy" "$out/smollm2_$placement.txt" | tail -n 2 | tr '\n' ' ')"
    else
      note "SmolLM2 quick deck, $placement: FAILED or skipped (status $status): $(tail -n 2 "$out/smollm2_$placement.txt" | tr '\n' ' ')"
    fi
  done
else
  note "SmolLM2 quick deck: skipped, the bundle carries no data (make them with tools/make_real_model.sh before perf/device_bundle.sh)"
fi

if [ "$dry" = 1 ]; then
  note "dry run: the steps' limits add up to $planned s at worst against a budget of $budget s: the steps come in order of importance, and each is cut to what is left or skipped"
fi
echo; echo "summary ($(($(date +%s) - started)) s):"; cat "$summary"
