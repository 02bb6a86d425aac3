#!/usr/bin/env bash
# The parameter digest does not depend on the GEMM's threads (DESIGN.md
# invariant 6, kernels/host_gemm.hpp): on the demo model and on random OPT,
# Llama, Qwen3 and Gemma 3 models with odd widths, a short run gives the same digest on one
# rank at 1 and 2 GEMM threads (OPENBLAS_NUM_THREADS, or OMP_NUM_THREADS under
# OpenMP Kokkos), and under mpiexec with P=2 at 1
# thread per rank; D=2 at 1 and 2 threads per rank agree with each other.
# Before the tiles, OpenBLAS's own threads gave different bits at 1 and 2
# threads for widths such as 520 on this test's shapes (an AVX-512 EPYC,
# OpenBLAS 0.3.21); the library path (DISTZO_GEMM=library) is run at the end
# and what it gives is printed, not asserted (it depends on the CPU).
source "$(dirname "$0")/lib.sh" "$@"
STEPS=8
INPUTS=$TEST_DATA/../../inputs

# Odd widths: head_dim 40, FFN 520 (an inner dimension OpenBLAS splits
# differently per thread count here), vocabulary 333; 2 layers.
"$DISTZO" make-model opt_odd.h5 --layers 2 --hidden 200 --heads 5 --ffn 520 --vocab 333 \
  --positions 64 --seed 7 > /dev/null
cat > llama_odd.json << 'EOF'
{"model_type": "llama", "hidden_size": 200, "intermediate_size": 520, "num_hidden_layers": 2,
 "num_attention_heads": 5, "num_key_value_heads": 1, "vocab_size": 333,
 "max_position_embeddings": 64, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
 "tie_word_embeddings": false, "hidden_act": "silu"}
EOF
"$DISTZO" make-model llama_odd.h5 --config llama_odd.json --seed 8 > /dev/null
# Qwen3 (q/k norms, head_dim 36 set apart from hidden / heads) on the same widths.
cat > qwen3_odd.json << 'EOF'
{"model_type": "qwen3", "hidden_size": 200, "intermediate_size": 520, "num_hidden_layers": 2,
 "num_attention_heads": 5, "num_key_value_heads": 1, "head_dim": 36, "vocab_size": 333,
 "max_position_embeddings": 64, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
 "tie_word_embeddings": true, "use_sliding_window": false, "hidden_act": "silu"}
EOF
"$DISTZO" make-model qwen3_odd.h5 --config qwen3_odd.json --seed 9 > /dev/null
# Gemma 3 (sandwich norms, GeGLU, a sliding and a full layer) on the same widths.
cat > gemma3_odd.json << 'EOF'
{"model_type": "gemma3_text", "hidden_size": 200, "intermediate_size": 520, "num_hidden_layers": 2,
 "num_attention_heads": 5, "num_key_value_heads": 1, "head_dim": 36, "vocab_size": 333,
 "max_position_embeddings": 64, "sliding_window": 32, "query_pre_attn_scalar": 36,
 "layer_types": ["sliding_attention", "full_attention"]}
EOF
"$DISTZO" make-model gemma3_odd.h5 --config gemma3_odd.json --seed 10 > /dev/null

# run NAME MODEL TRAIN THREADS RANKS P D: STEPS steps, then the final digest in
# NAME.digest. Every GEMM over the tokens is cut in two (demo: 16 x 64
# tokens; the others 48 x 12, large enough for OpenBLAS to use 2 threads).
run() {
  local name=$1 model=$2 train=$3 threads=$4 ranks=$5 p=$6 d=$7
  deck "$name" "$STEPS" "$name" 'parallel:' "  perturbation: $p" "  data: $d"
  sed -i "s|path: model.h5|path: $model|; s|train: train.h5|train: $train|; s|eval: eval.h5|eval: $train|" "$name.yaml"
  local launch=()
  [ "$ranks" -gt 1 ] && launch=("$MPIEXEC" -n "$ranks")
  # OPENBLAS_NUM_THREADS sets distzo's threads under Serial Kokkos,
  # OMP_NUM_THREADS Kokkos' own under OpenMP (app/blas_threads.hpp).
  OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "${launch[@]}" "$DISTZO" run "$name.yaml" \
    > "$name.log" 2>&1 || { cat "$name.log"; fail "$name failed"; }
  # The setting must have reached the GEMM, else the comparison is empty.
  grep -q -E "GEMM threads: $threads per rank \((OPENBLAS_NUM_THREADS|Kokkos' .* threads, OMP_NUM_THREADS=$threads)\)" "$name/run.log" ||
    fail "$name: run.log does not say $threads GEMM threads: $(grep -i gemm "$name/run.log")"
  digest "$name/ckpt-$(printf %06d "$STEPS").h5" > "$name.digest"
}
same() {  # same A B WHAT: equal digests, or fail naming both
  [ "$(cat "$1.digest")" = "$(cat "$2.digest")" ] ||
    fail "$3: $1 $(cat "$1.digest") != $2 $(cat "$2.digest")"
}

for m in demo opt_odd llama_odd qwen3_odd gemma3_odd; do
  case $m in
    demo) model=$INPUTS/demo/model.h5 train=$INPUTS/demo/train.h5 MICRO_BATCH=16 ;;
    *) model=$m.h5 train=train.h5 MICRO_BATCH=48 ;;
  esac
  run "${m}_t1" "$model" "$train" 1 1 1 1
  run "${m}_t2" "$model" "$train" 2 1 1 1
  run "${m}_p2" "$model" "$train" 1 2 2 1
  same "${m}_t1" "${m}_t2" "$m: 1 rank at 1 and 2 GEMM threads"
  same "${m}_t1" "${m}_p2" "$m: P=2 at 1 thread per rank vs 1 rank"
  pass "$m: 1 rank at 1 and 2 GEMM threads and P=2 at 1 thread per rank give $(cat "${m}_t1.digest")"
  run "${m}_d2t1" "$model" "$train" 1 2 1 2
  run "${m}_d2t2" "$model" "$train" 2 2 1 2
  same "${m}_d2t1" "${m}_d2t2" "$m: D=2 at 1 and 2 GEMM threads per rank"
  pass "$m: D=2 at 1 and 2 GEMM threads per rank give $(cat "${m}_d2t1.digest")"
done

# What the library path gives here (information for the log, not a check).
for t in 1 2; do
  MICRO_BATCH=48 deck "lib_t$t" "$STEPS" "lib_t$t"
  sed -i "s|path: model.h5|path: opt_odd.h5|" "lib_t$t.yaml"
  DISTZO_GEMM=library OPENBLAS_NUM_THREADS=$t "$DISTZO" run "lib_t$t.yaml" > "lib_t$t.log" 2>&1 ||
    { cat "lib_t$t.log"; fail "lib_t$t failed"; }
  grep -q "GEMM: library path" "lib_t$t/run.log" || fail "DISTZO_GEMM=library was not taken"
  digest "lib_t$t/ckpt-$(printf %06d "$STEPS").h5" > "lib_t$t.digest"
done
if [ "$(cat lib_t1.digest)" = "$(cat lib_t2.digest)" ]; then
  echo "info: library path (DISTZO_GEMM=library), opt_odd: the same digest at 1 and 2 BLAS threads on this machine"
else
  echo "info: library path (DISTZO_GEMM=library), opt_odd: $(cat lib_t1.digest) at 1 BLAS thread, $(cat lib_t2.digest) at 2 on this machine"
fi
