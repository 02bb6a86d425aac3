#!/usr/bin/env bash
# Each malformed deck in bad_decks/ fails with its specific message (the
# `expect` table below), a non-zero exit, and no output directory.
source "$(dirname "$0")/lib.sh" "$@"

# under_address_limit KB COMMAND...: COMMAND with at most KB of address space.
# AddressSanitizer needs terabytes of address space for its shadow memory:
# under it there is no limit, and ASAN_OPTIONS' max_allocation_size_mb bounds
# allocations instead (scripts/test-sanitized.sh).
under_address_limit() {
  local limit=$1; shift
  [[ "${ASAN_OPTIONS:-}" == *max_allocation_size_mb* ]] && limit=unlimited
  (ulimit -v "$limit" && exec "$@")
}

"$DISTZO" make-synthetic wide_vocab.h5 --task classification --examples 8 --seq-len 12 --vocab 500 --seed 3 >/dev/null
ln -s "$TEST_DATA/mistral_tiny.model.h5" mistral.h5
"$DISTZO" make-synthetic mistral_train.h5 --task classification --examples 8 --seq-len 40 --vocab 72 --seed 4 >/dev/null

declare -A expect=(
  [01-unknown-key]='bad_decks/01-unknown-key.yaml:9: optim.lrr: unknown key (did you mean "lr"?)'
  [02-duplicate-key]='bad_decks/02-duplicate-key.yaml:8: optim.steps: duplicate key (first given at line 7)'
  [03-wrong-type]='bad_decks/03-wrong-type.yaml:5: data.micro_batch: expected an integer >= 1, found the string "four"'
  [04-out-of-range]='bad_decks/04-out-of-range.yaml:9: optim.eps: out of range: expected a number > 0, found -0.5'
  [05-bad-enum]='bad_decks/05-bad-enum.yaml:9: optim.schedule: unknown value "exponential"; allowed: constant, linear, cosine'
  [06-missing-key]='bad_decks/06-missing-key.yaml:6: optim.steps: missing required key'
  [07-missing-file]='bad_decks/07-missing-file.yaml:2: model.path: no such file "no-such-model.h5"'
  [08-yaml-syntax]='bad_decks/08-yaml-syntax.yaml:9: invalid YAML'
  [09-p-does-not-divide-2q]='bad_decks/09-p-does-not-divide-2q.yaml:12: parallel.perturbation: P must divide the 2q evaluations of a step'
  [10-mesh-mismatch]='does not match the 1 MPI rank'
  [11-warmup-longer-than-steps]='bad_decks/11-warmup-longer-than-steps.yaml:9: optim.warmup_steps: out of range: must be <= optim.steps (4)'
  [12-not-a-model-file]='train.h5 is a distzo dataset file, not a model or checkpoint'
  [13-tokens-outside-vocab]='wide_vocab.h5: input_ids: example 0, position 0: token id 281 is outside the vocabulary [0, 96)'
  [14-resume-missing]='bad_decks/14-resume-missing.yaml:12: checkpoint.resume: no such file "ckpt-000999.h5"'
  [15-section-not-a-map]='bad_decks/15-section-not-a-map.yaml:11: eval: must be a map of keys'
  [16-unknown-placement-mode]='bad_decks/16-unknown-placement-mode.yaml:12: placement.mode: unknown value "offlaod" (did you mean "offload"?); allowed: resident, offload'
  [17-negative-resident-blocks]='bad_decks/17-negative-resident-blocks.yaml:13: placement.resident_blocks: out of range: expected an integer in [0, 2147483647], found -2'
  [18-prefetch-zero]='bad_decks/18-prefetch-zero.yaml:13: placement.prefetch: out of range: expected an integer in [1, 4094], found 0'
  # The bytes are distzo plan's total (filled in below): the refusal and the
  # plan agree, whatever the activations' layout makes the total.
  [19-does-not-fit]='cannot allocate the memory this run needs: θ alone is 83.2 KiB (85248 B) (21312 float32 parameters); the run needs about PLAN_TOTAL of device memory per rank'
  # Under the address-space limit below, refused before it allocates (the
  # check of the limit); without one (AddressSanitizer), at the allocation.
  [19-does-not-fit-limited]='the address-space limit of this process is ulimit -v 8000000 (7.63 GiB), too small for this run: it needs about 729 GiB = '
  [20-watchdog-zero]='bad_decks/20-watchdog-zero.yaml:11: parallel.watchdog: out of range: expected auto, off or a number > 0, found 0'
  [21-unknown-storage]='bad_decks/21-unknown-storage.yaml:12: precision.storage: unknown value "bf32" (did you mean "fp32"?); allowed: fp32, bf16, fp16'
  [22-unknown-rounding]='bad_decks/22-unknown-rounding.yaml:13: precision.rounding: unknown value "stochastik" (did you mean "stochastic"?); allowed: stochastic, nearest'
  [24-momentum-one]='bad_decks/24-momentum-one.yaml:9: optim.momentum: out of range: expected a number >= 0 and < 1, found 1.0'
  [25-history-times-queries]='bad_decks/25-history-times-queries.yaml:11: optim.history: momentum 0.9 with history 8 and queries 8 needs 64 z streams a step; the fused kernel regenerates at most 32: lower optim.history to 4'
  [26-history-without-momentum]='bad_decks/26-history-without-momentum.yaml:9: optim.history: 4 rows with optim.momentum 0 (the default): plain SGD uses only the step'"'"'s own row; set optim.momentum (e.g. 0.9) or leave optim.history out'
  [27-momentum-without-history]='bad_decks/27-momentum-without-history.yaml:9: optim.momentum: 0.9 with optim.history 1 (the default) uses only the step'"'"'s own row, which is plain SGD: set optim.history to the rows the momentum spans, 2 to 32 with optim.queries 1'
  [23-longer-than-positions]='mistral_train.h5: sequences of 40 tokens exceed the model'"'"'s 32 positions'
  # Another spelling of a value, or a method's name from the literature: the value meant.
  [28-estimator-by-paper-name]='bad_decks/28-estimator-by-paper-name.yaml:9: optim.estimator: unknown value "FZOO" (FZOO'"'"'s estimator is "one_sided"); allowed: spsa, one_sided'
  [29-hyphenated-value]='bad_decks/29-hyphenated-value.yaml:12: placement.perturbed_weights: unknown value "one-at-a-time" (did you mean "one_at_a_time"?); allowed: together, one_at_a_time'
)
mkdir bad_decks
cp "$HERE"/bad_decks/*.yaml bad_decks/
"$DISTZO" plan bad_decks/19-does-not-fit.yaml > plan19.out
plan_total=$(sed -n 's/^  total *//p' plan19.out)
[[ "$plan_total" == *' GiB ('*' B)' ]] || fail "distzo plan printed no total in GiB: $(cat plan19.out)"
expect[19-does-not-fit]=${expect[19-does-not-fit]/PLAN_TOTAL/$plan_total}
n=0
for deck_file in bad_decks/*.yaml; do
  name=$(basename "$deck_file" .yaml)
  [ -n "${expect[$name]:-}" ] || fail "no expected message for $name"
  key=$name
  [ "$name" = 19-does-not-fit ] && [[ "${ASAN_OPTIONS:-}" != *max_allocation_size_mb* ]] && key=$name-limited
  set +e
  # 8 GB of address space: 19-does-not-fit must fail to allocate even where
  # the kernel overcommits memory (vm.overcommit_memory = 1).
  under_address_limit 8000000 "$DISTZO" run "$deck_file" > "$name.out" 2> "$name.err"
  status=$?
  set -e
  [ "$status" -ne 0 ] || fail "$name: exit status 0"
  grep -qF -- "${expect[$key]}" "$name.err" || fail "$name: expected '${expect[$key]}', got: $(cat "$name.err")"
  [ ! -e out ] || fail "$name: the output directory was created"
  n=$((n + 1))
  pass "$name: $(head -c 160 "$name.err")"
done
[ "$n" -ge 10 ] || fail "only $n malformed decks"
# distzo plan checks the rules across keys in the run's words.
for name in 09-p-does-not-divide-2q 23-longer-than-positions; do
  set +e; "$DISTZO" plan "bad_decks/$name.yaml" > "$name.plan" 2>&1; status=$?; set -e
  [ "$status" -ne 0 ] && grep -qF -- "${expect[$name]}" "$name.plan" ||
    fail "plan $name: expected '${expect[$name]}', got: $(cat "$name.plan")"
done
pass "distzo plan refuses a P that does not divide 2q and sequences longer than the positions, as the run does"

# The usage text is distzo's own, whatever the Kokkos version does with --help.
"$DISTZO" --help > help.out
head -n 1 help.out | grep -q '^distzo - zeroth-order' || fail "--help does not start with distzo's usage: $(head -n 2 help.out)"
! grep -q 'Kokkos command line' help.out || fail "--help printed Kokkos' option table"
# Each command's --help is its own usage, before MPI and Kokkos start.
for command in run inspect forward make-model make-synthetic; do
  "$DISTZO" $command --help > command_help.out
  head -n 1 command_help.out | grep -q "^usage: distzo $command " ||
    fail "$command --help is not its usage: $(head -n 3 command_help.out)"
  ! grep -q 'Kokkos command line' command_help.out || fail "$command --help printed Kokkos' option table"
done
"$DISTZO" inspect -h | grep -qF -- '--digest' || fail "inspect -h does not name --digest"
"$DISTZO" --version | grep -q '^distzo [0-9]' || fail "--version"
set +e; "$DISTZO" frobnicate > unknown.out 2>&1; status=$?; set -e
[ "$status" -ne 0 ] && grep -qF "unknown command 'frobnicate'" unknown.out || fail "unknown command: $(cat unknown.out)"
set +e; "$DISTZO" rnu x.yaml > typo.out 2>&1; status=$?; set -e
[ "$status" = 2 ] && grep -qF "unknown command 'rnu' (did you mean \"run\"?)" typo.out || fail "a misspelt command: $(head -n 1 typo.out)"
"$DISTZO" help deck > help_deck.out
grep -qF '| `optim.lr` | number | **required** | > 0 |' help_deck.out || fail "help deck: $(head -n 5 help_deck.out)"
set +e; "$DISTZO" help decks > help_bad.out 2>&1; status=$?; set -e
[ "$status" -ne 0 ] && grep -qF "help 'decks': the one topic is deck" help_bad.out || fail "help with an unknown topic: $(cat help_bad.out)"
"$DISTZO" plan --help > plan_help.out
head -n 1 plan_help.out | grep -qF 'usage: distzo plan DECK.yaml' && grep -qF -- '--gpus-per-node' plan_help.out ||
  fail "plan --help: $(head -n 3 plan_help.out)"
# distzo alone is a misuse like `distzo run` alone: the error and the usage on stderr, exit 2.
set +e; "$DISTZO" > alone.out 2> alone.err; status=$?; set -e
[ "$status" = 2 ] && [ ! -s alone.out ] && grep -qF "distzo: error: no command" alone.err &&
  grep -qF "usage:" alone.err || fail "distzo alone: exit $status, stdout $(wc -c < alone.out) bytes, stderr: $(head -n 2 alone.err)"
pass "usage: --help, --version, help deck, each command's --help, unknown command, no command"

# inspect: a dataset file is described (task, sizes, label balance), not refused;
# --digest of one is an error that says why. Errors about a user's file name
# the file and carry no source location of distzo's.
"$DISTZO" inspect train.h5 > inspect_data.out || fail "inspect of a dataset: $(cat inspect_data.out)"
grep -qF 'task          classification' inspect_data.out && grep -qF 'examples      256 of up to 12 tokens' inspect_data.out &&
  grep -q '^labels  *0: [0-9]* (' inspect_data.out || fail "inspect of a dataset: $(cat inspect_data.out)"
set +e; "$DISTZO" inspect train.h5 --digest > inspect_digest.out 2>&1; status=$?; set -e
[ "$status" -ne 0 ] && grep -qF 'train.h5 is a dataset file: --digest is a digest of a model' inspect_digest.out ||
  fail "inspect --digest of a dataset: $(cat inspect_digest.out)"
set +e; "$DISTZO" run bad_decks/12-not-a-model-file.yaml > not_a_model.out 2>&1; set -e
grep -qF 'is a distzo dataset file, not a model or checkpoint' not_a_model.out && ! grep -q '\[src/' not_a_model.out ||
  fail "an input error shows a source location: $(cat not_a_model.out)"
pass "inspect describes dataset files; input errors carry no source location"

# A missing file named by an absolute path gets no note about the working directory.
sed "s#^  path: .*#  path: $WORK/no-such-model.h5#" bad_decks/07-missing-file.yaml > absolute_missing.yaml
set +e; "$DISTZO" run absolute_missing.yaml > absolute_missing.out 2>&1; set -e
grep -qF "model.path: no such file \"$WORK/no-such-model.h5\"" absolute_missing.out &&
  ! grep -q 'relative paths' absolute_missing.out || fail "absolute missing path: $(cat absolute_missing.out)"
pass "a missing absolute path is reported without the working-directory note"

# Bounded work on absurd values (issue 24): a 50 MB "deck" is refused by its
# size before YAML parses it, under an address-space limit the parse alone
# would exceed; a 1 MB enum value is refused naming the key (no suggestion
# table the size of the value); a size that overflows an int is an error
# naming the option and its range, not a narrowed number.
{ printf 'model: {path: model.h5}\ndata: {train: train.h5, micro_batch: 4}\noptim: {steps: 1, lr: 1.0e-3, schedule: '
  head -c 50000000 /dev/zero | tr '\0' y; printf '}\noutput: {dir: huge}\n'; } > huge.yaml
for cmd in run plan; do
  set +e; under_address_limit 1000000 "$DISTZO" "$cmd" huge.yaml > huge.out 2>&1; status=$?; set -e
  [ "$status" = 2 ] && grep -qF "huge.yaml: cannot read the deck: 50000126 bytes, more than a deck's 1048576 (1 MiB)" huge.out ||
    fail "$cmd of a 50 MB deck: status $status, $(head -c 300 huge.out)"
done
# A Hugging Face config.json given to run: said to be one, with what takes it.
set +e; "$DISTZO" run "$TEST_DATA/../../perf/opt_configs/opt-125m.json" > config.out 2>&1; status=$?; set -e
[ "$status" = 2 ] && grep -qF "opt-125m.json:2: model_type: this is a Hugging Face config.json, not a deck: \`distzo plan\` takes it" config.out ||
  fail "run of a config.json: status $status, $(head -c 300 config.out)"
# A model file given as the deck (the tiny one, and the demo's of 3.7 MB, over a deck's
# 1 MiB): said to be one, not a YAML escape error or a size.
for cmd in run plan; do
  for model in model.h5 "$TEST_DATA/../../inputs/demo/model.h5"; do
    set +e; "$DISTZO" "$cmd" "$model" > binary.out 2>&1; status=$?; set -e
    [ "$status" = 2 ] && grep -qF "model.h5: cannot read the deck: a binary file, not YAML text (an HDF5 file: a model, checkpoint or dataset?" binary.out ||
      fail "$cmd of a model file ($model) as the deck: status $status, $(head -c 300 binary.out)"
  done
done
{ printf 'model: {path: model.h5}\ndata: {train: train.h5, micro_batch: 4}\noptim: {steps: 1, lr: 1.0e-3, schedule: '
  head -c 1000000 /dev/zero | tr '\0' y; printf '}\noutput: {dir: long}\n'; } > long_enum.yaml
set +e; under_address_limit 1000000 "$DISTZO" run long_enum.yaml > long_enum.out 2>&1; status=$?; set -e
[ "$status" = 2 ] && grep -qF 'long_enum.yaml:3: optim.schedule: unknown value "yyyy' long_enum.out &&
  grep -qF '..."; allowed: constant, linear, cosine' long_enum.out && ! grep -q 'did you mean' long_enum.out ||
  fail "a 1 MB enum value: status $status, $(head -c 300 long_enum.out)"
set +e; "$DISTZO" make-synthetic big.h5 --task causal_lm --examples 4 --seq-len 2147483648 --vocab 10 > narrow.out 2>&1; status=$?; set -e
[ "$status" = 2 ] && grep -qF "make-synthetic: --seq-len expects an integer from 0 to 2147483647, got 2147483648" narrow.out &&
  [ ! -e big.h5 ] || fail "make-synthetic --seq-len 2^31: status $status, $(head -n 1 narrow.out)"
pass "a 50 MB deck is refused by its size, a 1 MB enum value names its key, --seq-len 2^31 names its range"

# A path longer than the system opens (a 500 KB output.dir; a 5 MB one makes
# the deck too long), or with a name over
# 255 bytes, is refused naming the key and its length, the value shortened.
long_name=$(head -c 300 /dev/zero | tr '\0' c)
for case in "500000:a path of 500000 bytes, longer than any the system opens (4095)" \
            "name:the path has a name of 300 bytes, longer than a file system allows (255)"; do
  what=${case%%:*} expected=${case#*:}
  if [ "$what" = name ]; then dir="runs/$long_name"; else dir=$(head -c 500000 /dev/zero | tr '\0' a); fi
  printf 'model: {path: model.h5}\ndata: {train: train.h5, micro_batch: 4}\noptim: {steps: 1, lr: 1.0e-3}\noutput: {dir: %s}\n' "$dir" > long_path.yaml
  set +e; "$DISTZO" run long_path.yaml > long_path.out 2>&1; status=$?; set -e
  [ "$status" = 2 ] && grep -qF "long_path.yaml:4: output.dir: $expected" long_path.out &&
    [ "$(wc -c < long_path.out)" -lt 400 ] || fail "output.dir ($what): status $status, $(head -c 300 long_path.out)"
done
pass "a 500 KB output.dir and a 300-byte name are refused by their length, the message short"
