#!/usr/bin/env bash
# Checkpoints in θ's storage dtype (docs/formats.md): a bf16 run writes
# bfloat16 datasets (2 bytes, h5dump's "16-bit ... floating-point"), written
# by one rank and by the two ranks of a node together (parallel HDF5), and
# `inspect --digest` of them is the digest the run printed and recorded; two
# ranks resuming from the words (each its slices) continue as one rank does; a
# float32 run writes float32 datasets and digest_version 2, as before. A
# model file held in bf16 makes a deck without precision.storage run in bf16
# (said in run.log); an explicit storage wins, with the conversion said. A
# resume into another storage is refused, naming the key and what to do,
# unless checkpoint.allow_changes names it; then θ is converted (exactly into
# fp32, to nearest into bf16) and run.log says so; a resume whose deck leaves
# precision.storage out keeps the checkpoint's.
source "$(dirname "$0")/lib.sh" "$@"
ckpt() { printf '%s/ckpt-%06d.h5' "$1" "$2"; }
# dtype_of FILE DATASET: the first line of h5dump's DATATYPE of a dataset.
dtype_of() { h5dump -H -d "$2" "$1" | sed -n 's/^ *DATATYPE *//p' | head -1; }
run_ok() {  # run_ok NAME [launcher...]: runs NAME.yaml, or fails showing its log
  local name=$1
  shift
  "$@" "$DISTZO" run "$name.yaml" > "$name.log" 2>&1 || { cat "$name.log"; fail "$name failed"; }
}
printed() { sed -n 's/.*digest \([0-9a-f]\{16\}\).*/\1/p' "$1.log" | tail -1; }
TENSOR=/model.decoder.layers.0.fc1.weight

deck bf 4 bf 'precision:' '  storage: bf16'
run_ok bf
f=$(ckpt bf 4)
[ "$(dtype_of "$f" $TENSOR)" = "16-bit little-endian floating-point 16-bit precision" ] ||
  fail "a bf16 run's checkpoint holds $(dtype_of "$f" $TENSOR), not 2-byte floats"
[ "$(printed bf)" = "$(digest "$f")" ] && h5dump -a parameter_digest "$f" | grep -qF "\"$(digest "$f")\"" ||
  fail "bf16: the run printed $(printed bf), inspect --digest says $(digest "$f")"
h5dump -a digest_version "$f" | grep -q '(0): 3$' || fail "bf16 checkpoint: digest_version is not 3"
"$DISTZO" inspect "$f" > inspect.out
grep -qF "tensors       bf16: every dataset is bfloat16" inspect.out &&
  grep -qF "(the datasets hold θ's words)" inspect.out &&
  grep -qE '^0 +model.decoder.embed_tokens.weight +\(96, 32\) +3072 +bf16 +embeddings$' inspect.out ||
  fail "inspect does not name the dtype: $(head -12 inspect.out)"
grep -qF "is stored in bf16 (rounded to nearest once)" bf/run.log ||
  fail "run.log does not say the float32 model is rounded into bf16: $(grep -i stored bf/run.log)"
pass "bf16: 2-byte datasets, digest version 3, printed digest == recorded == inspect --digest $(digest "$f")"

# Two ranks of a node write their slices together (write_checkpoint_parallel).
deck bf_p2 4 bf_p2 'precision:' '  storage: bf16' 'parallel:' '  perturbation: 2'
run_ok bf_p2 "$MPIEXEC" -n 2
grep -q "shared by the node's 2 ranks" bf_p2/run.log || fail "P=2 did not share θ: $(grep placement bf_p2/run.log)"
[ "$(dtype_of "$(ckpt bf_p2 4)" $TENSOR)" = "16-bit little-endian floating-point 16-bit precision" ] ||
  fail "the parallel writer wrote $(dtype_of "$(ckpt bf_p2 4)" $TENSOR)"
[ "$(digest "$(ckpt bf_p2 4)")" = "$(digest "$f")" ] && [ "$(printed bf_p2)" = "$(digest "$f")" ] ||
  fail "P=2's checkpoint digests $(digest "$(ckpt bf_p2 4)"), printed $(printed bf_p2); one rank $(digest "$f")"
same_datasets "$f" "$(ckpt bf_p2 4)" || fail "the parallel bf16 checkpoint's datasets differ from one rank's"
# Resumed by 2 ranks (each reads its slices of the words) or by one: one θ.
deck one_more 6 one_more 'precision:' '  storage: bf16' 'checkpoint:' "  resume: $(ckpt bf_p2 4)"
run_ok one_more
deck p2_more 6 bf_p2 'precision:' '  storage: bf16' 'parallel:' '  perturbation: 2' 'checkpoint:' '  resume: latest'
run_ok p2_more "$MPIEXEC" -n 2
[ "$(digest "$(ckpt bf_p2 6)")" = "$(digest "$(ckpt one_more 6)")" ] ||
  fail "resumed from bf16 words: P=2 $(digest "$(ckpt bf_p2 6)"), one rank $(digest "$(ckpt one_more 6)")"
pass "bf16 written by 2 ranks in parallel: the same datasets and digest as one rank's; resumed by 2 ranks or 1, the same θ"

deck f32 4 f32
run_ok f32
g=$(ckpt f32 4)
[ "$(dtype_of "$g" $TENSOR)" = "H5T_IEEE_F32LE" ] || fail "a float32 run wrote $(dtype_of "$g" $TENSOR)"
h5dump -a digest_version "$g" | grep -q '(0): 2$' || fail "fp32 checkpoint: digest_version is not 2"
[ "$(printed f32)" = "$(digest "$g")" ] || fail "fp32: printed $(printed f32), inspect --digest $(digest "$g")"
pass "fp32: float32 datasets and digest_version 2, as before"

# A bf16 model file (here the bf16 checkpoint): no precision.storage = bf16.
deck from_bf16 2 from_bf16
sed -i "s|path: model.h5|path: $f|" from_bf16.yaml
run_ok from_bf16
grep -qF "precision.storage is not set: θ is stored in bf16, as the model file $f holds it" from_bf16/run.log &&
  grep -qF "storage: bf16" from_bf16/deck.resolved.yaml ||
  fail "a bf16 model file did not give a bf16 run: $(grep -i 'stor' from_bf16/run.log)"
[ "$(dtype_of "$(ckpt from_bf16 2)" $TENSOR)" = "16-bit little-endian floating-point 16-bit precision" ] ||
  fail "the run from a bf16 model wrote $(dtype_of "$(ckpt from_bf16 2)" $TENSOR)"
h5dump -a base_model_digest "$(ckpt from_bf16 2)" | grep -qF "\"$(digest "$f")\"" ||
  fail "base_model_digest is not the bf16 model file's digest"
deck wide 2 wide 'precision:' '  storage: fp32'
sed -i "s|path: model.h5|path: $f|" wide.yaml
run_ok wide
grep -qF "θ from $f, held there in bf16 (every tensor), is stored in fp32 (exact)" wide/run.log ||
  fail "run.log does not say the bf16 model is widened: $(grep -i stored wide/run.log)"
pass "a bf16 model file: bf16 when the deck does not say, fp32 when it does (logged)"

# Resumes across storages.
deck back 8 bf 'precision:' '  storage: fp32' 'checkpoint:' '  resume: latest'
set +e; "$DISTZO" run back.yaml > back.log 2>&1; status=$?; set -e
[ "$status" -ne 0 ] || fail "a resume changing precision.storage was accepted"
grep -qF "precision.storage: bf16 in the checkpoint, fp32 in the deck" back.log &&
  grep -qF "allow_changes: [precision.storage] θ is converted as it is loaded" back.log ||
  fail "the refusal does not teach: $(cat back.log)"
deck back 6 bf 'precision:' '  storage: fp32' 'checkpoint:' '  resume: latest' '  allow_changes: [precision.storage]'
run_ok back
grep -qF "resumed with precision.storage: bf16 in the checkpoint, fp32 in the deck (checkpoint.allow_changes)" bf/run.log &&
  grep -qF "θ from $f, stored in bf16, is stored in fp32 from here on (exact)" bf/run.log ||
  fail "run.log does not record the change to fp32: $(grep -i 'stored\|resumed' bf/run.log)"
[ "$(dtype_of "$(ckpt bf 6)" $TENSOR)" = "H5T_IEEE_F32LE" ] || fail "the fp32 continuation wrote $(dtype_of "$(ckpt bf 6)" $TENSOR)"
deck narrow 8 f32 'precision:' '  storage: bf16' 'checkpoint:' '  resume: latest' '  allow_changes: [precision.storage]'
run_ok narrow
grep -qF "θ from $g, stored in fp32, is stored in bf16 from here on (rounded to nearest once)" f32/run.log ||
  fail "run.log does not say fp32 -> bf16 rounds to nearest: $(grep -i stored f32/run.log)"
deck keep 10 f32 'checkpoint:' '  resume: latest'
run_ok keep
grep -qF "precision.storage is not set: θ is stored in bf16, as the run of $(ckpt f32 8) stored it" f32/run.log &&
  [ "$(dtype_of "$(ckpt f32 10)" $TENSOR)" = "16-bit little-endian floating-point 16-bit precision" ] ||
  fail "a resume without precision.storage did not keep the checkpoint's bf16: $(grep -i stor f32/run.log)"
pass "resumes: another storage refused with the way out, converted when allowed (fp32 exact, bf16 to nearest), kept when unsaid"
