#!/usr/bin/env bash
# The round trip a user makes with tools/hf_to_h5.py: a Hugging Face
# directory (config.json, model.safetensors, tokenizer files) -> distzo model
# file -> a run on 1 rank and on a node-shared master written by 2 ranks
# together -> each checkpoint --to-hf. The tokenizer's text files come back
# byte for byte (over 64 KiB, non-ASCII), a binary tokenizer.model is not
# kept, every file written is readable by others (mode 0644 under umask 022),
# the weights come back as the checkpoint holds them, and what cannot go
# back is said; stale files in an export directory are refused.
#
# Needs python3 with numpy and h5py (Debian: python3-h5py, installed by
# scripts/install-debian-deps.sh --test); elsewhere it skips (exit 77), and
# with CI set a skip is a failure.
# Usage: hf_round_trip.sh DISTZO TEST_DATA MPIEXEC
source "$(dirname "$0")/lib.sh" "$@"
TOOLS=$HERE/../../tools
# The first python3 with numpy and h5py: the one on PATH, or Debian's own
# (where PATH leads to another, e.g. pyenv's).
PY=
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import numpy, h5py' 2> /dev/null; then PY=$candidate; break; fi
done
if [ -z "$PY" ]; then
  [ -z "${CI:-}" ] || fail "python3 with numpy and h5py is missing (CI is set: this test must run there)"
  echo "skip: python3 with numpy and h5py is missing (scripts/install-debian-deps.sh --test installs python3-h5py)"
  exit 77
fi
umask 022
mode() { stat -c %a "$1"; }

# A Hugging Face directory: the Llama fixture's weights, and a tokenizer.
"$PY" "$TOOLS/hf_to_h5.py" -q "$TEST_DATA/llama_tiny_gqa.model.h5" --to-hf hf
[ "$(mode hf/model.safetensors)" = 644 ] && [ "$(mode hf/config.json)" = 644 ] ||
  fail "--to-hf wrote modes $(mode hf/model.safetensors) / $(mode hf/config.json), not 644"
"$PY" - hf <<'EOF'
import json, sys
vocab = {f"tok{i}\u00e9": i for i in range(96)}
merges = [f"\u0120t h{i}" for i in range(6000)]  # beyond 64 KiB together
tokenizer = {"version": "1.0", "model": {"type": "BPE", "vocab": vocab, "merges": merges}}
with open(f"{sys.argv[1]}/tokenizer.json", "w", encoding="utf-8") as fh:
    json.dump(tokenizer, fh, ensure_ascii=False, indent=2)
with open(f"{sys.argv[1]}/tokenizer_config.json", "w", encoding="utf-8") as fh:
    fh.write('{\n  "tokenizer_class": "PreTrainedTokenizerFast",\n  "bos_token": "tok1\u00e9"\n}\n')
with open(f"{sys.argv[1]}/tokenizer.model", "wb") as fh:
    fh.write(bytes(range(256)))  # sentencepiece's binary protobuf: not kept
EOF
[ "$(stat -c %s hf/tokenizer.json)" -gt 65536 ] || fail "the test tokenizer is under 64 KiB"

"$PY" "$TOOLS/hf_to_h5.py" hf model.h5 > import.log || { cat import.log; fail "import failed"; }
grep -q "kept the tokenizer for the way back: tokenizer.json, tokenizer_config.json" import.log ||
  fail "import did not say it kept the tokenizer: $(cat import.log)"
[ "$(mode model.h5)" = 644 ] || fail "the model file has mode $(mode model.h5)"
"$DISTZO" inspect model.h5 > inspect.log
grep -q "^tokenizer     tokenizer.json, tokenizer_config.json (" inspect.log ||
  fail "inspect does not show the tokenizer: $(grep -i tokenizer inspect.log)"
[ "$(digest model.h5)" = "$(digest "$TEST_DATA/llama_tiny_gqa.model.h5")" ] || fail "the import changed the weights"
pass "HF dir -> model file: weights unchanged, tokenizer kept (inspect names it), mode 644"

# A run on 1 rank (serial writer) and on a node-shared master written by both
# ranks (parallel writer); each checkpoint goes back to Hugging Face.
"$DISTZO" make-synthetic lm.h5 --task causal_lm --examples 64 --seq-len 12 --vocab 96 --seed 3 > /dev/null
deck one 2 one
sed -i 's|train: train.h5|train: lm.h5|; s|eval: eval.h5|eval: lm.h5|' one.yaml
sed 's|dir: one|dir: two|' one.yaml > two.yaml
printf 'parallel:\n  perturbation: 2\nplacement:\n  share_host_master: true\n' >> two.yaml
"$DISTZO" run one.yaml > one.log 2>&1 || { cat one.log; fail "the one-rank run failed"; }
"$MPIEXEC" -n 2 "$DISTZO" run two.yaml > two.log 2>&1 || { cat two.log; fail "the P=2 shared-master run failed"; }
for run in one two; do
  ckpt=$run/ckpt-000002.h5
  "$PY" "$TOOLS/hf_to_h5.py" "$ckpt" --to-hf "$run-hf" > "$run-export.log" ||
    { cat "$run-export.log"; fail "$run: export failed"; }
  grep -q "wrote the tokenizer the import kept: tokenizer.json, tokenizer_config.json" "$run-export.log" ||
    fail "$run: export did not write the tokenizer: $(cat "$run-export.log")"
  for f in tokenizer.json tokenizer_config.json; do
    cmp -s "hf/$f" "$run-hf/$f" || fail "$run: $f did not come back byte for byte"
  done
  [ ! -e "$run-hf/tokenizer.model" ] || fail "$run: a tokenizer.model was written"
  for f in "$run-hf"/*; do [ "$(mode "$f")" = 644 ] || fail "$run: $f has mode $(mode "$f")"; done
  "$PY" "$TOOLS/hf_to_h5.py" -q "$run-hf" "$run-again.h5"
  [ "$(digest "$run-again.h5")" = "$(digest "$ckpt")" ] || fail "$run: the export does not hold the checkpoint's weights"
done
pass "checkpoints of 1 rank and of 2 ranks writing together -> HF: tokenizer byte for byte, weights as trained, mode 644"

# What cannot go back is said: no tokenizer in the file; a tokenizer file that is not text.
"$PY" "$TOOLS/hf_to_h5.py" "$TEST_DATA/llama_tiny_gqa.model.h5" --to-hf bare > bare.log
grep -q "carries no tokenizer" bare.log || fail "an export without a tokenizer says nothing: $(cat bare.log)"
printf '\xff\xfe not utf-8' > hf/vocab.txt
if "$PY" "$TOOLS/hf_to_h5.py" hf bad.h5 2> bad.log; then fail "a vocab.txt that is not UTF-8 was accepted"; fi
grep -q "hf/vocab.txt: not UTF-8 text" bad.log || fail "bad vocab.txt: $(cat bad.log)"
[ ! -e bad.h5 ] || fail "a refused import left bad.h5"
pass "an export without a tokenizer says so; a tokenizer file that is not UTF-8 is refused, nothing written"

# An export into a directory holding another model's files would mix them in: refused.
mkdir stale && echo '{"bos_token": "<other>"}' > stale/special_tokens_map.json
if "$PY" "$TOOLS/hf_to_h5.py" model.h5 --to-hf stale 2> stale.log; then fail "an export over stale files was accepted"; fi
grep -q "already holds special_tokens_map.json, which this export would not replace" stale.log ||
  fail "stale directory: $(cat stale.log)"
# Configs beside a binary tokenizer.model make no tokenizer: nothing kept, and said.
mkdir spm && cp hf/config.json hf/model.safetensors hf/tokenizer_config.json hf/tokenizer.model spm/
"$PY" "$TOOLS/hf_to_h5.py" spm spm.h5 > spm.log
grep -q "no tokenizer kept: .*a sentencepiece tokenizer.model is binary and not kept" spm.log ||
  fail "sentencepiece-only directory: $(cat spm.log)"
"$DISTZO" inspect spm.h5 > spm_inspect.log
grep -q "^tokenizer     none kept" spm_inspect.log || fail "spm.h5 carries a tokenizer: $(grep tokenizer spm_inspect.log)"
pass "an export over another model's files is refused; configs beside a binary tokenizer.model are not kept, and that is said"
