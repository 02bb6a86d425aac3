#!/usr/bin/env bash
# data.batch_width (docs/datasets.md, "Micro-batches") on the demo model,
# whose examples run from a few tokens to 64: each batch at its longest
# example (trimmed, the default) gives what the full width gives up to
# rounding — the same accuracy and losses within 1e-5 before training (here
# often the same bits: OpenBLAS's result for a row of this model's GEMMs need
# not depend on the rows around it, but nothing promises that); both are the same on one rank at 1 thread and on P=2 at 2; a
# resume continues at its checkpoint's width bit for bit (a deck that asks
# for another width is refused, saying why); run.log and inspect say which.
source "$(dirname "$0")/lib.sh" "$@"
STEPS=6
MICRO_BATCH=4
EVAL_EXAMPLES=48

demo_run trim 1 1 1 1
grep -qF "global batch 4 x up to 64 tokens" trim/run.log ||
  fail "run.log does not say batches are trimmed: $(head -1 trim/run.log)"
BATCH_WIDTH=full demo_run full 1 1 1 1
grep -qF "global batch 4 x 64 tokens" full/run.log || fail "run.log: $(head -1 full/run.log)"

# Before the first update θ is the same: the first step's losses and the
# evaluation before training agree to rounding, the accuracy exactly.
for c in loss_plus loss_minus; do
  column trim/metrics.csv $c | head -1 > a.txt; column full/metrics.csv $c | head -1 > b.txt
  close_rel a.txt b.txt 1e-5 || fail "step 1 $c: trimmed vs full"
done
column trim/eval.csv eval_loss | head -1 > a.txt; column full/eval.csv eval_loss | head -1 > b.txt
close_rel a.txt b.txt 1e-5 || fail "the evaluation before training: trimmed vs full"
[ "$(column trim/eval.csv accuracy | head -1)" = "$(column full/eval.csv accuracy | head -1)" ] ||
  fail "accuracy before training differs between trimmed and full widths"
bits=$([ "$(cat trim.digest)" = "$(cat full.digest)" ] && echo "the same digest" || echo "other digests")
pass "trimmed vs full widths: step 1's losses and the evaluation before training within 1e-5, the same accuracy ($bits after $STEPS steps)"

demo_run trim_p2 2 2 2 1
same trim trim_p2 "trimmed widths, P=2 at 2 threads vs 1 rank at 1"
BATCH_WIDTH=full demo_run full_p2 2 2 2 1
same full full_p2 "full width, P=2 at 2 threads vs 1 rank at 1"
pass "each width: P=2 at 2 threads == 1 rank at 1 thread"

demo_resume 3
same trim resumed "a trimmed run resumed at step 3"
"$DISTZO" inspect resumed/ckpt-000006.h5 > trim.inspect
grep -qF "batches at trimmed width" trim.inspect || fail "inspect: $(grep -i batches trim.inspect)"
rm -rf resumed
BATCH_WIDTH=full demo_resume 3
same full resumed "a full-width run resumed at step 3"
# Leaving the key out resumes at the checkpoint's width; asking for another is refused.
demo_deck other "$STEPS" 1 1 'checkpoint:' '  resume: latest'
sed -i 's|dir: other|dir: resumed|; s|^  micro_batch: 4|&\n  batch_width: trimmed|' other.yaml
rm -f resumed/ckpt-000006.h5
set +e; "$DISTZO" run other.yaml > other.log 2>&1; status=$?; set -e
[ "$status" -ne 0 ] || fail "a resume asking for another batch width was accepted"
grep -qF "ran its batches at width 'full', the deck asks for 'trimmed'" other.log ||
  fail "the refusal does not say why: $(cat other.log)"
grep -qF "data.batch_width" other.log || fail "the refusal does not name the key: $(cat other.log)"
pass "resumes continue at the checkpoint's width (trimmed and full) bit for bit; another width is refused, naming data.batch_width"
