#!/usr/bin/env bash
# distzo run end to end on one rank: training lowers the held-out loss and
# raises accuracy; repeated runs give identical digests; N steps + resume + N
# steps equal 2N steps straight, digest and metrics alike.
source "$(dirname "$0")/lib.sh" "$@"

deck straight 120 a 'checkpoint:' '  interval: 60'
"$DISTZO" run straight.yaml > a.log
deck again 120 b
"$DISTZO" run again.yaml > b.log
[ "$(digest a/ckpt-000120.h5)" = "$(digest b/ckpt-000120.h5)" ] || fail "repeated runs differ"
pass "repeated runs give digest $(digest a/ckpt-000120.h5)"
# The digest a run prints (computed where θ lives) is the one inspect computes from its checkpoint.
printed=$(sed -n 's/^done: .*, digest \([0-9a-f]\{16\}\)$/\1/p' a.log)
[ "$printed" = "$(digest a/ckpt-000120.h5)" ] || fail "run printed digest '$printed', inspect of its checkpoint says $(digest a/ckpt-000120.h5)"
recorded=$(h5dump -a /parameter_digest a/ckpt-000120.h5 | sed -n 's/.*(0): "\([0-9a-f]*\)".*/\1/p')
[ "$recorded" = "$printed" ] || fail "the checkpoint records parameter_digest '$recorded', the run printed $printed"
pass "the run's printed digest == inspect --digest of its final checkpoint == its parameter_digest attribute"

# Learning: eval loss falls and accuracy rises between step 0 and the end.
read -r loss0 acc0 <<<"$(awk -F, 'NR == 2 { print $2, $3 }' a/eval.csv)"
read -r loss1 acc1 <<<"$(awk -F, 'END { print $2, $3 }' a/eval.csv)"
awk -v a="$loss0" -v b="$loss1" 'BEGIN { exit !(b < 0.8 * a) }' || fail "eval loss $loss0 -> $loss1 did not fall by 20%"
awk -v a="$acc0" -v b="$acc1" 'BEGIN { exit !(b > a + 0.1) }' || fail "accuracy $acc0 -> $acc1 did not rise by 0.1"
pass "eval loss $loss0 -> $loss1, accuracy $acc0 -> $acc1"

# Resume: 60 steps, then a second run to 120 from the latest checkpoint.
deck first 60 c
"$DISTZO" run first.yaml > c1.log
deck second 120 c 'checkpoint:' '  resume: latest'
"$DISTZO" run second.yaml > c2.log
grep -q "resuming from c/ckpt-000060.h5" c2.log || fail "the second run did not resume from step 60"
[ "$(digest c/ckpt-000120.h5)" = "$(digest a/ckpt-000120.h5)" ] || fail "resumed run differs from the straight run"
cmp <(cut -d, -f1-7 a/metrics.csv) <(cut -d, -f1-7 c/metrics.csv) || fail "metrics of the resumed run differ"
pass "60 + resume + 60 steps == 120 steps straight (digest and metrics.csv)"

# keep: 2 checkpoints by default; the straight run wrote 60 and 120.
[ "$(ls a/ckpt-*.h5 | wc -l)" = 2 ] || fail "expected 2 checkpoints in a/"
pass "checkpoint.keep"

# Non-finite losses: a huge learning rate blows θ up after the first update;
# every later step is skipped (θ stays as it is) and max_nonfinite in a row stop the run.
deck blowup 50 e 'checkpoint:' '  interval: 0'
sed -i 's/lr: 1.0e-3/lr: 1.0e+30/; s/queries: 1/queries: 1\n  max_nonfinite: 3/' blowup.yaml
if "$DISTZO" run blowup.yaml > e.log 2> e.err; then fail "a diverging run exited 0"; fi
grep -q "3 consecutive steps had a non-finite loss" e.err || fail "non-finite message: $(cat e.err)"
[ "$(grep -c 'non-finite loss, update skipped' e.log)" = 3 ] || fail "expected 3 skipped-step lines in the log"
[ "$(column e/metrics.csv skipped | awk '{ s += $1 } END { print s }')" = 3 ] || fail "expected 3 skipped rows in metrics.csv"
pass "non-finite losses skip the update, are logged and counted, and stop the run after 3"
# ... and no checkpoint is written during the streak: with a checkpoint after
# every step, the newest stays the last good one (step 1), and a run whose
# last steps are non-finite ends with an error, not a checkpoint of them.
deck blowup2 50 e2 'checkpoint:' '  interval: 1' '  keep: 2'
sed -i 's/lr: 1.0e-3/lr: 1.0e+30/; s/queries: 1/queries: 1\n  max_nonfinite: 3/' blowup2.yaml
if "$DISTZO" run blowup2.yaml > e2.log 2> e2.err; then fail "a diverging run exited 0"; fi
[ "$(ls e2/ckpt-*.h5 | xargs -n1 basename | tr '\n' ' ')" = "ckpt-000001.h5 " ] ||
  fail "checkpoints written during a non-finite streak: $(ls e2)"
grep -q "checkpoint after step 2 not written: the last 1 step was non-finite" e2.log ||
  fail "skipped-checkpoint line: $(grep checkpoint e2.log)"
deck blowup3 2 e3
sed -i 's/lr: 1.0e-3/lr: 1.0e+30/' blowup3.yaml
if "$DISTZO" run blowup3.yaml > e3.log 2> e3.err; then fail "a run ending in non-finite steps exited 0"; fi
grep -q "the run ended with 1 non-finite step in a row: no final checkpoint was written" e3.err ||
  fail "end-of-run message: $(cat e3.err)"
[ ! -e e3/ckpt-000002.h5 ] || fail "a checkpoint of a non-finite step was written"
pass "no checkpoint during a non-finite streak; a run ending in one exits 2"

# The recipe of z: recipe 1 stays selectable and gives other z than the default
# 2; a run resumes with the recipe its checkpoint records even when the deck
# leaves the key out; an explicit, different recipe on resume is an error.
deck v1 120 f 'checkpoint:' '  interval: 0'
sed -i 's/queries: 1/queries: 1\n  z_recipe: 1/' v1.yaml
"$DISTZO" run v1.yaml > f.log
grep -q "gaussian z (recipe 1)" f.log || fail "the banner does not name recipe 1: $(head -1 f.log)"
[ "$(digest f/ckpt-000120.h5)" != "$(digest a/ckpt-000120.h5)" ] || fail "recipes 1 and 2 gave the same run"
deck v1first 60 g 'checkpoint:' '  interval: 0'
sed -i 's/queries: 1/queries: 1\n  z_recipe: 1/' v1first.yaml
"$DISTZO" run v1first.yaml > g1.log
deck v1second 120 g 'checkpoint:' '  resume: latest'
"$DISTZO" run v1second.yaml > g2.log
grep -q "gaussian z (recipe 1), .*resuming from g/ckpt-000060.h5" g2.log || fail "resume banner: $(head -1 g2.log)"
[ "$(digest g/ckpt-000120.h5)" = "$(digest f/ckpt-000120.h5)" ] || fail "a recipe-1 run resumed under the default recipe differs"
grep -q "z_recipe: 1" g/deck.resolved.yaml || fail "deck.resolved.yaml of the resumed run does not record recipe 1"
deck v1clash 120 g 'checkpoint:' '  resume: latest'
sed -i 's/queries: 1/queries: 1\n  z_recipe: 2/' v1clash.yaml
if "$DISTZO" run v1clash.yaml > h.log 2> h.err; then fail "resuming recipe 1 with z_recipe: 2 exited 0"; fi
grep -q "v1clash.yaml:.*optim.z_recipe: the checkpoint g/ckpt-000120.h5 was written with z recipe 1, the deck asks for 2" h.err \
  || fail "recipe clash message: $(cat h.err)"
pass "z recipe 1 selectable, resumed from its checkpoint without the key, an explicit clash refused"

# metrics.csv as a person may leave it: a blank line is skipped on resume; a
# line that is not a row stops the resume, naming the file and the line.
deck csv1 20 k 'checkpoint:' '  interval: 0'
"$DISTZO" run csv1.yaml > k1.log
printf '\n' >> k/metrics.csv
deck csv2 30 k 'checkpoint:' '  resume: latest'
"$DISTZO" run csv2.yaml > k2.log 2>&1 || { cat k2.log; fail "a blank line in metrics.csv broke the resume"; }
[ "$(grep -c '^[0-9]' k/metrics.csv)" = 30 ] || fail "metrics.csv after resume: $(wc -l < k/metrics.csv) lines"
echo "not a row" >> k/metrics.csv
deck csv3 40 k 'checkpoint:' '  resume: latest'
if "$DISTZO" run csv3.yaml > k3.log 2>&1; then fail "a garbage line in metrics.csv was accepted"; fi
grep -q "k/metrics.csv:32: expected a row starting with its step, found \"not a row\"" k3.log ||
  fail "metrics.csv message: $(cat k3.log)"
pass "metrics.csv: a blank line is skipped on resume, a garbage line is named with its line number"

# eps so small that theta +- eps z rounds back to theta: every g is 0; say so.
deck tiny_eps 5 m
sed -i 's/eps: 1.0e-3/eps: 1.0e-12/' tiny_eps.yaml
"$DISTZO" run tiny_eps.yaml > m.log
grep -q "warning: step 1: g = 0 exactly" m.log || fail "no g = 0 warning: $(cat m.log)"
grep -q "(0 skipped, 5 with g = 0)" m.log || fail "done line: $(grep done m.log)"
pass "g = 0 on every step (eps 1e-12) is warned about and counted"

# A resume continues the run it comes from: a changed lr or training set is
# refused, naming the key and both values, unless the deck allows it.
deck v_first 20 v 'checkpoint:' '  interval: 0'
"$DISTZO" run v_first.yaml > v1.log
deck v_lr 30 v 'checkpoint:' '  resume: latest'
sed -i 's/lr: 1.0e-3/lr: 5.0e-4/' v_lr.yaml
if "$DISTZO" run v_lr.yaml > v2.log 2>&1; then fail "a resume with another lr was accepted"; fi
grep -q "optim.lr: 0.001 in the checkpoint, 5e-04 in the deck" v2.log || fail "lr change message: $(cat v2.log)"
"$DISTZO" make-synthetic other.h5 --task classification --examples 256 --seq-len 12 --vocab 96 --seed 9 >/dev/null
deck v_data 30 v 'checkpoint:' '  resume: latest'
sed -i 's/train: train.h5/train: other.h5/' v_data.yaml
if "$DISTZO" run v_data.yaml > v3.log 2>&1; then fail "a resume on another training set was accepted"; fi
grep -q "data.train: [0-9a-f]* in the checkpoint, [0-9a-f]* in the deck (the digest of the training set, other.h5)" v3.log ||
  fail "data change message: $(cat v3.log)"
deck v_allowed 30 v 'checkpoint:' '  resume: latest' '  allow_changes: [optim.lr]'
sed -i 's/lr: 1.0e-3/lr: 5.0e-4/' v_allowed.yaml
"$DISTZO" run v_allowed.yaml > v4.log 2>&1 || { cat v4.log; fail "an allowed lr change was refused"; }
grep -q "resumed with optim.lr: 0.001 in the checkpoint, 5e-04 in the deck (checkpoint.allow_changes)" v/run.log ||
  fail "allowed change not noted: $(head -3 v/run.log)"
ln -s "$TEST_DATA/opt_tiny_postln.model.h5" other_model.h5
deck v_model 30 v 'checkpoint:' '  resume: latest'
sed -i 's/path: model.h5/path: other_model.h5/' v_model.yaml
if "$DISTZO" run v_model.yaml > v5.log 2>&1; then fail "a resume with another base model was accepted"; fi
grep -q "model: [0-9a-f]* in the checkpoint, .* in the deck (the parameter digest of the base model, other_model.h5)" v5.log ||
  fail "model change message: $(cat v5.log)"
MICRO_BATCH=8 deck v_batch 30 v 'checkpoint:' '  resume: latest'
sed -i 's/  queries: 1/  queries: 1\n  schedule: cosine/' v_batch.yaml
if "$DISTZO" run v_batch.yaml > v6.log 2>&1; then fail "a resume with another micro_batch and schedule was accepted"; fi
grep -q "data.micro_batch: 16 in the checkpoint, 8 in the deck" v6.log && grep -q "optim.schedule: constant in the checkpoint, cosine in the deck" v6.log ||
  fail "micro_batch/schedule change message: $(cat v6.log)"
pass "resume refuses a changed lr, training set, base model, micro_batch or schedule, naming both values; checkpoint.allow_changes lets one through, noted"
# A resume that changes the seed on purpose draws the deck's z from there on,
# and its checkpoints record that seed: the next resume reads them back.
deck v_seed 40 v 'checkpoint:' '  resume: latest' '  allow_changes: [optim.seed]'
sed -i 's/lr: 1.0e-3/lr: 5.0e-4/; s/queries: 1/queries: 1\n  seed: 7/' v_seed.yaml
"$DISTZO" run v_seed.yaml > v7.log 2>&1 || { cat v7.log; fail "a resume with an allowed seed change failed"; }
# (into a file first: grep -q would close the pipe early, and pipefail would
# report inspect's SIGPIPE)
"$DISTZO" inspect v/ckpt-000040.h5 > v7.inspect
grep -q "seed 7, spsa q = 1" v7.inspect || fail "the checkpoint does not record seed 7: $(cat v7.inspect)"
deck v_seed_again 50 v 'checkpoint:' '  resume: latest'
sed -i 's/lr: 1.0e-3/lr: 5.0e-4/; s/queries: 1/queries: 1\n  seed: 7/' v_seed_again.yaml
"$DISTZO" run v_seed_again.yaml > v8.log 2>&1 || { cat v8.log; fail "the checkpoint of a run resumed with another seed does not resume"; }
pass "a resume with an allowed seed change records the new seed, and resumes again from it"
# The estimator and its queries are fixed for a run (the seed log is one table
# of a row of q scalars a step): a resume refuses a change even when listed
# (it used to run and write a checkpoint that did not read back).
deck v_queries 60 v 'checkpoint:' '  resume: latest'
sed -i 's/lr: 1.0e-3/lr: 5.0e-4/; s/queries: 1/queries: 2\n  seed: 7/' v_queries.yaml
if "$DISTZO" run v_queries.yaml > vq.log 2>&1; then fail "a resume that changes optim.queries ran"; fi
grep -q "optim.queries: 1 in the checkpoint, 2 in the deck (optim.queries never changes within a run, even when checkpoint.allow_changes lists it" vq.log &&
  grep -q "^Set them back$" vq.log || fail "queries change message: $(cat vq.log)"
printf '  allow_changes: [optim.queries]\n' >> v_queries.yaml
if "$DISTZO" run v_queries.yaml > vq.log 2>&1; then fail "a deck allowing a queries change ran"; fi
grep -q "checkpoint.allow_changes: optim.queries never changes within a run" vq.log ||
  fail "allow_changes of optim.queries: $(cat vq.log)"
! ls v/ckpt-000060.h5 > /dev/null 2>&1 || fail "the refused resume wrote a checkpoint"
pass "a resume refuses a change of optim.queries even in allow_changes, naming why"

# optim.steps: 0 only evaluates: one evaluation, no checkpoint of the
# unchanged model, the accuracy said as such (it evaluated twice and wrote a
# full checkpoint).
deck zero 0 z
"$DISTZO" run zero.yaml > zero.log 2>&1 || { cat zero.log; fail "a steps: 0 run failed"; }
[ "$(grep -c '^[0-9]' z/eval.csv)" = 1 ] || fail "steps: 0 evaluated $(grep -c '^[0-9]' z/eval.csv) times"
! ls z/ckpt-*.h5 > /dev/null 2>&1 || fail "steps: 0 wrote a checkpoint: $(ls z)"
grep -q "^accuracy: [0-9.]* (64 held-out examples; optim.steps 0: evaluated only, no step and no checkpoint)" zero.log ||
  fail "steps: 0 summary: $(tail -2 zero.log)"
pass "optim.steps: 0 evaluates once and writes no checkpoint"
