#!/usr/bin/env bash
# Windowed attention (a Mistral sliding window, docs/formats.md) against full
# causal attention: bench_forward tokens/s of two random Mistral models that
# differ only in sliding_window (W against null), at T = 2048 and 4096,
# batch 1, at 1 and 2 threads (OPENBLAS_NUM_THREADS). With 2W <= T the
# windowed layers skip the keys past the window (scores T (2W - 1) per head,
# not T²); the dense layers are the same work on both sides. The sides
# alternate ROUNDS times in fresh processes; each cell is the median of the
# rounds' medians (min–max); "window / full" is the ratio of the medians.
# Then the cost of rotary scaling: the same Llama shape with plain RoPE and
# with Llama 3.1's scaling (its frequencies are computed once per model; a
# batch's tables are the same kernel), at the first T, 1 thread.
# Writes its tables between the window markers of perf/RESULTS.md.
# Knobs: ROUNDS (3), REPS (2), SEQS ("2048 4096"), THREADS ("1 2"), WINDOW
# (512), HIDDEN (512), LAYERS (4), BUILD_DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/lib.sh"
build=${BUILD_DIR:-$root/build}
rounds=${ROUNDS:-3} reps=${REPS:-2} seqs=${SEQS:-2048 4096} threads_list=${THREADS:-1 2}
window=${WINDOW:-512} hidden=${HIDDEN:-512} layers=${LAYERS:-4}
work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-window.XXXXXX")
trap 'rm -rf "$work"' EXIT

[ -x "$build/perf/bench_forward" ] || { cmake -S "$root" -B "$build" >/dev/null && cmake --build "$build" --target bench_forward distzo -j2; }
load=$(start_load bench_window)
max_seq=$(printf '%s\n' $seqs | sort -n | tail -1)
for side in window full; do
  w=$([ "$side" = window ] && echo "$window" || echo null)
  cat > "$work/$side.json" <<EOF
{"model_type": "mistral", "architectures": ["MistralForCausalLM"], "hidden_size": $hidden,
 "intermediate_size": $((hidden * 3)), "num_hidden_layers": $layers, "num_attention_heads": 8,
 "num_key_value_heads": 2, "head_dim": $((hidden / 8)), "vocab_size": 2048,
 "max_position_embeddings": $max_seq, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
 "sliding_window": $w, "tie_word_embeddings": false, "hidden_act": "silu"}
EOF
  "$build/distzo" make-model "$work/$side.h5" --config "$work/$side.json" --seed 1 >/dev/null
done
for side in plain llama3; do
  rope=$([ "$side" = llama3 ] && echo '{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 512}' || echo null)
  sed -e 's/"mistral"/"llama"/; s/MistralForCausalLM/LlamaForCausalLM/' \
      -e "s/\"sliding_window\": [a-z0-9]*,/\"rope_scaling\": $rope,/" "$work/full.json" > "$work/$side.json"
  "$build/distzo" make-model "$work/$side.h5" --config "$work/$side.json" --seed 1 >/dev/null
done

# tokens/s of one bench_forward process: SIDE SEQ THREADS
forward_rate() {
  OPENBLAS_NUM_THREADS=$3 OMP_NUM_THREADS=$3 "$build/perf/bench_forward" "$work/$1.h5" \
    --batch 1 --seq "$2" --reps "$reps" --warmup 1 |
    sed -n 's/^RESULT .*"median":\([0-9.e+-]*\).*/\1/p'
}

rows=""
for seq in $seqs; do
  for t in $threads_list; do
    : > "$work/window.$seq.$t"; : > "$work/full.$seq.$t"
    for ((r = 0; r < rounds; ++r)); do
      for side in window full; do
        echo "bench_window: $side, T = $seq, $t thread(s), round $((r + 1)) of $rounds ..." >&2
        forward_rate "$side" "$seq" "$t" >> "$work/$side.$seq.$t"
      done
    done
    win=$(median_range < "$work/window.$seq.$t") full=$(median_range < "$work/full.$seq.$t")
    rows+="| $seq | $t | $full | $win | $(ratio "$win" "$full") |"$'\n'
  done
done

first_seq=$(printf '%s\n' $seqs | head -1)
: > "$work/plain.rope"; : > "$work/llama3.rope"
for ((r = 0; r < rounds; ++r)); do
  for side in plain llama3; do
    echo "bench_window: rope $side, T = $first_seq, round $((r + 1)) of $rounds ..." >&2
    forward_rate "$side" "$first_seq" 1 >> "$work/$side.rope"
  done
done
plain=$(median_range < "$work/plain.rope") scaled=$(median_range < "$work/llama3.rope")

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
family=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -1)
text="<!-- window:begin -->
## Windowed attention against full causal attention (\`perf/bench_window.sh\`)

$(date -u +%Y-%m-%d), $cpu (family $family, $(nproc) logical CPUs), load average $load at the start,
OpenBLAS kernels: ${OPENBLAS_CORETYPE:-chosen by OpenBLAS}. Two random Mistral models (\`distzo make-model
--config\`: hidden $hidden, $layers layers, 8 heads over 2 key/value heads of $((hidden / 8)) channels,
intermediate $((hidden * 3)), vocabulary 2048) that differ only in \`sliding_window\`: $window against null.
\`bench_forward --batch 1\` (embed, blocks, final hidden, logits), $rounds rounds alternating
the sides in fresh processes, $reps timed forwards each after one warm-up; forward tokens/s,
median of the rounds' medians (min–max). At T >= 2W the windowed layers skip the keys past the
window; everything else is the same work on both sides.

| T | threads | full causal, tokens/s | window $window, tokens/s | window / full |
|---|---|---|---|---|
${rows%$'\n'}

Rotary scaling, the same shape as Llama (full attention) with plain RoPE and with Llama 3.1's
scaling (factor 8 over an original context of 512), T = $first_seq, 1 thread:

| plain RoPE, tokens/s | llama3 scaling, tokens/s | scaled / plain |
|---|---|---|
| $plain | $scaled | $(ratio "$scaled" "$plain") |

Rerun: \`perf/bench_window.sh\` (knobs in its header).
<!-- window:end -->"
write_section window "$text"
echo "$text"
