#!/usr/bin/env bash
# The four sentiment tasks of the quality table (docs/quality.md), with a real
# model's tokenizer: the four human-rated corpora of the vaderSentiment 3.3.2
# sdist (Hutto & Gilbert, ICWSM 2014: each snippet's mean rating by about 20
# people on [-4, 4]), each binarised by the sign of the mean rating, each with
# two prompts to choose from on dev.
#
#   tools/make_tasks.sh [MODEL_DIR]      # default out/smollm2
#
# MODEL_DIR is what tools/make_real_model.sh made: MODEL_DIR/tokenizer/,
# MODEL_DIR/vader/vaderSentiment-3.3.2.tar.gz and the model file (for its pad
# token id). Writes MODEL_DIR/tasks/TASK-PROMPT/{train,dev,test}.h5 and
# MODEL_DIR/tasks/SHA256SUMS (distzo and the Python tools write byte-identical
# files for equal content, so the sums name the data exactly):
#
#   task     corpus                                  prompts (label 0 / 1)
#   movies   10,605 Rotten Tomatoes snippets         review: 'Review: {text}\nSentiment: {label}' (negative/positive)
#                                                     movie:  '{text} This movie was {label} .' (terrible/great)
#   amazon   3,708 Amazon product-review sentences   review: as movies'
#                                                     product: '{text} This product is {label} .' (bad/good)
#   tweets   4,200 tweets                            tweet:  'Tweet: {text}\nSentiment: {label}' (negative/positive)
#                                                     feel:   '{text} I feel {label} .' (bad/good)
#   nyt      5,190 New York Times editorial          text:   'Text: {text}\nSentiment: {label}' (negative/positive)
#            sentences                                opinion: '{text} This is {label} .' (bad/good)
#
# Splits (tools/make_dataset.py, seed 13): 1000 test, 500 dev, then 500
# training examples per class (amazon and nyt: 300, what their smaller
# classes leave after test and dev). movies drops only the 37 snippets whose
# mean is exactly 0 (the demo's and docs/real_model.md's data, unchanged); the
# other three drop the near-neutral band |mean| <= 0.5, where the sign of a
# mean of raters is mostly noise: 46 % of the NYT sentences (editorials state
# more than they judge), 21 % of the Amazon ones, 20 % of the tweets (5 % of
# the movie snippets would be).
#
# Needs Python ($PYTHON, default python3) with numpy, h5py and tokenizers
# (python3 -m pip install numpy h5py tokenizers), checked first: what is
# missing is printed as that one pip line, and the exit status is 2.
# Each split set is skipped when it exists and is newer than its inputs.

set -euo pipefail
usage() {
    echo "usage: tools/make_tasks.sh [MODEL_DIR]   (default out/smollm2; made by tools/make_real_model.sh)" >&2
    exit 2
}
[[ $# -le 1 && "${1:-}" != -* ]] || usage
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$(cd "${1:-$REPO/out/smollm2}" 2> /dev/null && pwd) ||
    { echo "make_tasks: error: ${1:-out/smollm2}: no such directory (run tools/make_real_model.sh first)" >&2; exit 1; }
PY=${PYTHON:-python3}
die() { echo "make_tasks: error: $*" >&2; exit 1; }
# newer_than OUT IN...: OUT is newer than every IN (the code that makes it included).
newer_than() {
    local out=$1 in
    shift
    for in in "$@"; do [[ "$out" -nt "$in" ]] || return 1; done
}
"$PY" "$REPO/tools/requires.py" make_tasks.sh numpy h5py tokenizers || exit

TOKENIZER=$DIR/tokenizer/tokenizer.json
VADER=$DIR/vader/vaderSentiment-3.3.2.tar.gz
MODEL=$(ls "$DIR"/*.h5 2> /dev/null | head -n 1)
for f in "$TOKENIZER" "$VADER" "$MODEL"; do
    [[ -f "$f" ]] || die "$DIR: ${f:-the model file} missing (made by tools/make_real_model.sh)"
done
PAD_ID=$("$PY" -c 'import h5py, json, sys
with h5py.File(sys.argv[1], "r") as f:
    print(json.loads(f.attrs["hf_config_json"])["pad_token_id"])' "$MODEL")

# task NAME CORPUS BAND K_SHOT then PROMPT TEMPLATE LABEL0 LABEL1, repeated.
task() {
    local name=$1 corpus=$2 band=$3 k=$4
    shift 4
    while [[ $# -gt 0 ]]; do
        local prompt=$1 template=$2 label0=$3 label1=$4
        local out=$DIR/tasks/$name-$prompt
        shift 4
        if [[ -e "$out/test.h5" && "$out/test.h5" -nt "$TOKENIZER" ]] && newer_than "$out/test.h5" "$REPO"/tools/distzo_tools/datasets/*.py; then
            echo "$out: present"
            continue
        fi
        echo "==> $name, prompt $prompt: $template ($label0 / $label1)"
        "$PY" "$REPO/tools/make_dataset.py" --vader "$VADER" --vader-corpus "$corpus" --neutral-band "$band" \
            --tokenizer "$TOKENIZER" --out-dir "$out" --template "$template" --labels "$label0" "$label1" \
            --k-shot "$k" --pad-id "$PAD_ID"
    done
}

task movies movies 0 500 \
    review 'Review: {text}\nSentiment: {label}' negative positive \
    movie '{text} This movie was {label} .' terrible great
task amazon amazon 0.5 300 \
    review 'Review: {text}\nSentiment: {label}' negative positive \
    product '{text} This product is {label} .' bad good
task tweets tweets 0.5 500 \
    tweet 'Tweet: {text}\nSentiment: {label}' negative positive \
    feel '{text} I feel {label} .' bad good
task nyt nyt 0.5 300 \
    text 'Text: {text}\nSentiment: {label}' negative positive \
    opinion '{text} This is {label} .' bad good

(cd "$DIR/tasks" && sha256sum */*.h5 > SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
echo "datasets and their sha256: $DIR/tasks/SHA256SUMS"
