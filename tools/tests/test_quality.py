"""The quality table's runner and table (quality_runs, quality_table; pyyaml,
numpy, h5py, matplotlib for the figures) on made-up run records: choices
backed by dev, the resume check, longer runs carried on from a parent, a
cut-off run's seconds added up over its invocations, records archived and
read back, lost numbers found.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile


def _fake_run(out, task, name, eval_rows=None, result=None, run_log=None, metrics=None):
    """A run directory as tools/quality_runs.py leaves it (run.json last)."""
    d = os.path.join(out, task, name)
    os.makedirs(d, exist_ok=True)
    if eval_rows is not None:
        with open(os.path.join(d, "eval.csv"), "w") as fh:
            fh.write("step,eval_loss,accuracy,examples\n" + "".join(f"{s},{l},{a},500\n" for s, l, a in eval_rows))
    if result is not None:
        with open(os.path.join(d, "result.json"), "w") as fh:
            json.dump(result, fh)
    if run_log is not None:
        with open(os.path.join(d, "run.log"), "w") as fh:
            fh.write(run_log)
    if metrics is not None:
        with open(os.path.join(d, "metrics.csv"), "w") as fh:
            fh.write("step,loss,g,tokens,step_seconds\n" + "".join(metrics))
    with open(os.path.join(d, "run.json"), "w") as fh:
        json.dump({"seconds": 60.0, "digest": "0123456789abcdef"}, fh)
    return d


def test_quality_choices_and_resume_check():
    """quality_table refuses a declared choice that a made run beats on dev and
    joins a longer run's curve to its parent's; quality_runs' resume check fails
    on one differing metrics value."""
    from distzo_tools.quality import quality_runs as qr
    from distzo_tools.quality import quality_table as qt

    with tempfile.TemporaryDirectory() as out:
        res = qt.Results(out)
        chosen, other = qr.PROMPTS["movies"]
        _fake_run(out, "movies", f"zeroshot-{chosen}-dev", [(0, 0.5, 0.77)])
        _fake_run(out, "movies", f"zeroshot-{other}-dev", [(0, 0.8, 0.58)])
        lines = qt.check_choices(res)
        assert f"**{chosen} 77.0 %**" in lines[0] and f"{other} 58.0 %" in lines[0], lines[0]
        _fake_run(out, "movies", f"zeroshot-{other}-dev", [(0, 0.8, 0.78)])  # now the other prompt is better
        try:
            qt.check_choices(res)
            raise AssertionError("a prompt that dev does not back was accepted")
        except SystemExit as e:
            assert f"prompt {chosen} declared, {other} is better" in str(e), e
        _fake_run(out, "movies", f"zeroshot-{other}-dev", [(0, 0.8, 0.58)])
        # the lr choice: the final dev accuracy, ties to the lower dev loss
        lr, alt = qr.LR["movies"], [c for c in qr.LR_CANDIDATES["movies"] if c != qr.LR["movies"]][0]
        _fake_run(out, "movies", qr.distzo_name(lr, 1), [(0, 0.5, 0.77), (1000, 0.43, 0.81)])
        _fake_run(out, "movies", qr.distzo_name(alt, 1), [(0, 0.5, 0.77), (1000, 0.42, 0.81)])
        try:
            qt.check_choices(res)
            raise AssertionError("an lr tied on accuracy and worse on loss was accepted")
        except SystemExit as e:
            assert "lr" in str(e), e

        _fake_run(out, "movies", qr.distzo_name(alt, 1), [(0, 0.5, 0.77), (1000, 0.44, 0.80)])
        assert "**0.001 81.0 %**" in qt.check_choices(res)[0]  # ε: MeZO's, and only it made so far
        other_eps = [e for e in qr.EPS_CANDIDATES if e != qr.EPS][0]
        _fake_run(out, "movies", qr.distzo_name(lr, 1, eps=other_eps), [(0, 0.5, 0.77), (1000, 0.42, 0.82)])
        try:
            qt.check_choices(res)
            raise AssertionError("an ε that dev does not back was accepted")
        except SystemExit as e:
            assert f"ε {qr.EPS:g} declared, {other_eps:g} is better" in str(e), e

        # a longer run's curve: its parent's up to where it carries on (distzo), or its own (MeZO)
        long = qr.distzo_name(lr, 1) + f"-to{qr.LONG_STEPS['movies']}"
        assert res.longest("movies", qr.distzo_name(lr, 1)) == qr.distzo_name(lr, 1)
        _fake_run(out, "movies", long, [(1100, 0.42, 0.82), (qr.LONG_STEPS["movies"], 0.41, 0.83)])
        assert res.longest("movies", qr.distzo_name(lr, 1)) == long
        assert [p[0] for p in res.curve("movies", long)] == [0, 1000, 1100, qr.LONG_STEPS["movies"]]
        mezo_long = qr.mezo_name(lr, 1) + "-to2000"
        _fake_run(out, "movies", mezo_long, [(0, 0.5, 0.77), (2000, 0.4, 0.84)])
        assert [p[0] for p in res.curve("movies", mezo_long)] == [0, 2000]

        # the resume check: the straight run's last 100 steps against the resumed run's
        model_dir = os.path.join(out, "model")
        os.makedirs(model_dir)
        open(os.path.join(model_dir, "m.h5"), "w").close()
        paths = qr.Paths(model_dir, out)
        rows = [f"{s},0.5,{s * 0.001:.3f},{500 + s},1.5\n" for s in range(1, qr.STEPS + 1)]
        done = ("2026-12-06T22:41:07.123Z eval end    step 1000: loss 0.4300\n"
                "2026-12-06T22:41:07.125Z done: 1000 steps in 30:00 (0 skipped), digest 00ff00ff00ff00ff\n")
        _fake_run(out, "movies", qr.distzo_name(lr, 1), [(0, 0.5, 0.77), (1000, 0.43, 0.81)], run_log=done,
                  metrics=rows)
        resumed = [r.replace(",1.5\n", ",2.5\n") for r in rows[-100:]]  # step_seconds may differ
        run = qr.Run("movies", "resume", qr.distzo_name(lr, 1) + "-resume", chosen, lr=lr)
        _fake_run(out, "movies", run.name, [(1000, 0.43, 0.81)], run_log=done, metrics=resumed)
        assert qr.check_resume(paths, run) == {"digest": "00ff00ff00ff00ff", "steps_compared": 100}
        resumed[50] = resumed[50].replace(",0.5,", ",0.50000001,")
        _fake_run(out, "movies", run.name, [(1000, 0.43, 0.81)], run_log=done, metrics=resumed)
        try:
            qr.check_resume(paths, run)
            raise AssertionError("a resumed trajectory with another loss was accepted")
        except SystemExit as e:
            assert "differs at steps ['951']" in str(e), e
    print("quality table: choices backed by dev, the resume check: OK")


def test_quality_long_runs():
    """A run carried on past step 1000: the table gives its dev-loss trend and the steps at which
    each fit reaches first-order fine-tuning's dev loss after one epoch, and the figure is drawn."""
    from distzo_tools.quality import quality_runs as qr
    from distzo_tools.quality import quality_table as qt

    with tempfile.TemporaryDirectory() as out:
        res = qt.Results(out)
        name = qr.distzo_name(qr.LR["movies"], 1)
        assert "movies/" not in qt.long_runs_table(res) and not qt.figure_long(res, os.path.join(out, "x.png"))
        _fake_run(out, "movies", name, [(0, 0.49, 0.77), (1000, 0.44, 0.81)])
        # from step 1000 the dev loss falls 0.002 per 100 steps: a line reaches 0.36 at step 5000
        _fake_run(out, "movies", qr.longer_name("movies", name),
                  [(s, 0.44 - 0.002 * (s - 1000) / 100, 0.82) for s in range(1100, qr.LONG_STEPS["movies"] + 1, 100)])
        ft = f"finetune-lr{qr.lr_tag(qr.FT_LR['movies'])}"
        _fake_run(out, "movies", ft, [(0, 0.49, 0.77), (63, 0.36, 0.84), (126, 0.33, 0.86)])
        with open(os.path.join(out, "movies", ft, "result.json"), "w") as fh:
            json.dump({"dev_accuracy": 0.86, "test_accuracy": 0.88, "test_loss": 0.3}, fh)
        row = [r for r in qt.long_runs_table(res).splitlines() if r.startswith("| movies/")]
        assert len(row) == 1, row
        cells = [c.strip() for c in row[0].split("|")[1:-1]]
        assert cells[1:5] == ["81.0 → 82.0", "0.440 → 0.400", "-0.0020", "0.360"], cells
        at_line, at_log = (float(x.replace(",", "")) for x in cells[5].split(" / "))
        assert at_line == 5000 and at_log > at_line, cells  # a ln(step) fit slows down: later
        png = os.path.join(out, "long.png")
        assert qt.figure_long(res, png) and os.path.getsize(png) > 10000
    print("quality long runs: trend, crossing steps, figure: OK")


def test_quality_cut_off_run_seconds():
    """A run made in two invocations (the first cut off) records the wall seconds of both."""
    from distzo_tools.quality import quality_runs as qr

    with tempfile.TemporaryDirectory() as tmp:
        out, records = os.path.join(tmp, "out"), os.path.join(tmp, "records")
        run = qr.Run("movies", "probe", "probe", qr.PROMPTS["movies"][0])
        d = os.path.join(out, run.task, run.name)
        os.makedirs(d)
        os.makedirs(os.path.join(tmp, "model"))
        open(os.path.join(tmp, "model", "m.h5"), "w").close()
        paths = qr.Paths(os.path.join(tmp, "model"), out)
        marker = os.path.join(tmp, "second")  # the command fails (cut off) until it exists
        step = [sys.executable, "-c", f"import os, sys, time; time.sleep(0.3); sys.exit(0 if os.path.exists({marker!r}) else 75)"]
        made = qr.commands
        qr.commands = lambda *a: [step]
        try:
            try:
                qr.make(paths, run, "distzo", sys.executable, False, records)
                raise AssertionError("a failed command made the run")
            except SystemExit as e:
                assert "exit status 75" in str(e), e
            assert not os.path.exists(os.path.join(d, "run.json"))
            spent = qr.read_spent(os.path.join(d, qr.SPENT))
            assert spent["invocations"] == 1 and spent["seconds"] >= 0.3, spent
            open(marker, "w").close()
            qr.make(paths, run, "distzo", sys.executable, False, records)
        finally:
            qr.commands = made
        with open(os.path.join(d, "run.json")) as fh:
            record = json.load(fh)
        assert record["invocations"] == 2 and record["seconds"] >= spent["seconds"] + 0.3, record
        assert not os.path.exists(os.path.join(d, qr.SPENT))
        with open(os.path.join(records, run.task, run.name, "run.json")) as fh:
            assert json.load(fh)["seconds"] == record["seconds"]
    print("quality runner: a cut-off run's seconds add up over its invocations: OK")


def test_quality_records():
    """quality_runs copies what the table reads (and only that) out of a made run's
    directory, and the table reads the copy as the run; quality_table --write finds
    each number a regenerated table would lose; listing the runs and reading the
    records need neither the model nor the tasks."""
    from distzo_tools.quality import quality_runs as qr
    from distzo_tools.quality import quality_table as qt

    with tempfile.TemporaryDirectory() as tmp:
        out, records = os.path.join(tmp, "out"), os.path.join(tmp, "records")
        name = qr.distzo_name(qr.LR["nyt"], 1)
        d = _fake_run(out, "nyt", name, [(0, 0.48, 0.80), (1000, 0.25, 0.90)], run_log="done: digest 0\n",
                      metrics=["1,0.5,0.1,500,1.5\n"])
        os.makedirs(os.path.join(d, "test"))
        with open(os.path.join(d, "test", "eval.csv"), "w") as fh:
            fh.write("step,eval_loss,accuracy,examples\n1000,0.26,0.897,1000\n")
        open(os.path.join(d, "ckpt-001000.h5"), "w").close()
        with open(os.path.join(d, "run.json"), "w") as fh:  # the commands as make() writes them: this machine's paths
            json.dump({"seconds": 60.0, "commands": [f"{sys.executable} {qr.REPO}/tools/mezo_finetune.py "
                                                     f"{qr.REPO}/out/quality/nyt/{name}/deck.yaml"]}, fh)
        copied = qr.archive(d, os.path.join(records, "nyt", name))
        assert copied == ["eval.csv", os.path.join("test", "eval.csv"), "run.json"], copied
        assert sorted(os.listdir(os.path.join(records, "nyt", name))) == ["eval.csv", "run.json", "test"]
        run = qr.distzo_run("nyt", qr.LR["nyt"], 1)
        assert qr.made_in(records, run) and qr.made_in(out, run) and not qr.made_in(tmp, run)
        a, b = qt.Results(out), qt.Results(records)
        assert b.done("nyt", name) and b.curve("nyt", name) == a.curve("nyt", name)
        assert b.test_of("nyt", name) == (0.897, 0.26) and b.seconds("nyt", name) == 60.0
        assert b.record("nyt", name)["commands"] == [
            f"python3 tools/mezo_finetune.py out/quality/nyt/{name}/deck.yaml"]
        # distzo built or copied outside the checkout, runs under another --out: the record says neither
        elsewhere = os.path.join(tmp, "elsewhere-out")
        d2 = _fake_run(elsewhere, "nyt", name, [(0, 0.48, 0.80)])
        with open(os.path.join(d2, "run.json"), "w") as fh:
            json.dump({"seconds": 1.0, "commands": [f"mpiexec -n 2 /opt/x/distzo run {elsewhere}/nyt/{name}/deck.yaml",
                                                    f"/opt/x/distzo run {elsewhere}/nyt/{name}/test/deck.yaml"]}, fh)
        qr.archive(d2, os.path.join(tmp, "records2", "nyt", name), elsewhere)
        with open(os.path.join(tmp, "records2", "nyt", name, "run.json")) as fh:
            assert json.load(fh)["commands"] == [f"mpiexec -n 2 build/distzo run out/quality/nyt/{name}/deck.yaml",
                                                 f"build/distzo run out/quality/nyt/{name}/test/deck.yaml"]

        # A fresh clone has the records but no model or tasks: `list` and the table still work.
        no_model = os.path.join(tmp, "no-model")
        listing = subprocess.run([sys.executable, os.path.join(qr.REPO, "tools", "quality_runs.py"), "list",
                                  "--model-dir", no_model, "--out", os.path.join(tmp, "elsewhere"),
                                  "--records", records, "--only", f"nyt/{name}"],
                                 capture_output=True, text=True, check=True).stdout
        assert listing.startswith(f"record nyt/{name}") and "1 of 1 done" in listing, listing
        try:
            qr.main(["list", "--model-dir", no_model, "--records", records, "--only", "nosuch/run"])
            raise AssertionError("a name no run has was accepted")
        except SystemExit as e:
            assert "nosuch/run" in str(e) and "list" in str(e), e
        assert qt.majority(qr.Paths(no_model, records)) == {t: qt.DASH for t in qt.TASKS}

    old = ("| method | movies | nyt |\n|---|---|---|\n| distzo | 82.7 ± 0.4 | 89.7 |\n| probe | 82.3 | — |\n"
           "\n| run | digest | dev |\n|---|---|---|\n| plain | `e03df70264217341` | 81.0 |\n")
    assert qt.dropped(old, old) == []
    assert qt.dropped(old, old.replace("| 89.7 |", "| — |").replace("| — |\n\n", "| 88.6 |\n\n")) == \
        ["'distzo' / 'nyt' (89.7)"]  # a new number is no loss
    assert qt.dropped(old, old.replace("| plain | `e03df70264217341` | 81.0 |\n", "")) == ["the row 'plain'"]
    print("quality records: archived, read back, lost numbers found: OK")


def _fake_test(d, accuracy):
    """test/eval.csv as a distzo run's test evaluation (optim.steps 0) writes it."""
    os.makedirs(os.path.join(d, "test"), exist_ok=True)
    with open(os.path.join(d, "test", "eval.csv"), "w") as fh:
        fh.write(f"step,eval_loss,accuracy,examples\n0,0.4,{accuracy},1000\n")


def _fake_fzoo(out, task, lr, reach_step=None, whole_test=None, third=True, whole=False, end_acc=0.80):
    """An FZOO run of a third of the budget (dev every EVAL_EVALUATIONS // (N + 1) steps and at its
    last step) and, with `whole`, its carrying on to the whole budget; dev accuracy 0.78 until
    `reach_step`, 0.81 from there (None: never; end_acc at its last step then)."""
    from distzo_tools.quality import quality_runs as qr

    per = qr.FZOO_N + 1
    third_steps, steps, every = qr.BUDGET // 3 // per, qr.BUDGET // per, qr.EVAL_EVALUATIONS // per

    def rows(first, last):
        points = sorted(set(range(first, last + 1, every)) | {last}) if first else \
            sorted(set(range(0, last + 1, every)) | {last})
        acc = [0.81 if reach_step is not None and s >= reach_step else 0.78 for s in points]
        if reach_step is None:
            acc[-1] = end_acc
        return [(s, 0.5 - s * 1e-4, a) for s, a in zip(points, acc)]

    name = f"fzoo-n{qr.FZOO_N}-lr{qr.lr_tag(lr)}-s1"
    if third:
        _fake_run(out, task, name + "-third", rows(0, third_steps))
    if whole:
        first = (third_steps // every + 1) * every
        _fake_test(_fake_run(out, task, name, rows(first, steps)), whole_test)
    return name


def test_quality_estimators_logic():
    """The first evaluation count at which a dev curve reaches the target, and the goal's verdict."""
    from distzo_tools.quality import quality_table as qt

    curve = [(0, 0, 0.5, 0.77), (200, 100, 0.45, 0.80), (400, 200, 0.44, 0.81), (600, 300, 0.43, 0.83)]
    assert qt.first_reach(curve, 0.81)[:2] == (400, 200)
    assert qt.first_reach(curve, 0.77)[:2] == (0, 0)  # the base model may already be there
    assert qt.first_reach(curve, 0.84) is None
    assert qt.reach_cell(qt.first_reach(curve, 0.84), curve) == "not within 600"
    assert qt.reach_cell(qt.first_reach(curve, 0.81), curve) == "400 (step 200)"
    third = qt.THIRD  # 2000 / 3: a step of 9 evaluations fits 74 times (666)
    assert 666 <= third < 667
    # a third-budget run: reached within a third is open until the whole budget's test; not reached, does not
    assert qt.verdict(594, 666, 9, None, None) == "open"
    assert qt.verdict(None, 666, 9, None, None) == "does not"  # one more step would pass a third
    assert qt.verdict(None, 396, 9, None, None) == "open"  # cut short: it could still reach it
    assert qt.verdict(702, 1998, 9, 0.9, 0.8) == "does not"  # reached, but after a third
    # the whole budget: test at least MeZO-SGD's
    assert qt.verdict(594, 1998, 9, 0.835, 0.829) == "meets the goal"
    assert qt.verdict(594, 1998, 9, 0.829, 0.829) == "meets the goal"
    assert qt.verdict(594, 1998, 9, 0.828, 0.829) == "does not"
    assert qt.verdict(594, 1998, 9, None, 0.829) == "open"
    assert qt.verdict(594, 1998, 9, 0.835, None) == "open"
    # names: the plan's and what else is in the records
    r = qt.estimator_run("movies", "fzoo-n8-lr3e-4-s2-third")
    assert (r.queries, r.per_step, r.lr, r.seed, r.third, r.reference) == (8, 9, 3e-4, 2, True, False)
    r = qt.estimator_run("movies", "torch-fzoo-n8-lr1e-3-s1-third")
    assert (r.family, r.queries, r.lr, r.third, r.reference) == ("torch-fzoo", 8, 1e-3, True, True)
    assert qt.estimator_run("movies", "distzo-lr1e-5-s1") is None
    r = qt.estimator_run("movies", "lezo-k8-lr3e-5-s1-third")
    assert (r.family, r.queries, r.lr, r.third, r.per_step, r.reference) == ("lezo", 8, 3e-5, True, 2, False)
    assert r.label == "block-sparse MeZO-SGD (K = 8 blocks)"
    assert qt.qr.parent_name("lezo-k8-lr3e-5-s1") == "lezo-k8-lr3e-5-s1-third"
    print("quality estimators: first reach, verdict: OK")


def _rows(text, prefix):
    return [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines() if line.startswith(prefix)]


def test_quality_estimators_table():
    """The estimators' tables from records: nothing made (every row "not made", every verdict open),
    MeZO-SGD's target and its own first reach, a grid with no lr chosen, a declared lr that dev does not
    back refused, the chosen lr's third-budget run (open), its whole-budget run (meets the goal or not),
    the goal over the four tasks, a whole-budget record without its third-budget one."""
    from distzo_tools.quality import quality_runs as qr
    from distzo_tools.quality import quality_table as qt

    declared = dict(qr.FZOO_LR)
    grids = dict(qr.FZOO_LR_CANDIDATES)
    try:
        qr.FZOO_LR.clear()
        # movies' grid only: the other tasks' rows say they have none
        qr.FZOO_LR_CANDIDATES.clear()
        qr.FZOO_LR_CANDIDATES["movies"] = grids["movies"]
        with tempfile.TemporaryDirectory() as out:
            res = qt.Results(out)
            text = qt.estimators_tables(res)
            assert "**open** (meets the goal on 0, does not on 0, open on 4)" in text, text
            for task in qt.TASKS:
                row = _rows(text, f"| {task} |")[0]
                assert row[1:] == ["—", "—", "—", "not made", "— / —", "—", "open"], row
            made = [row for row in _rows(text, "| movies/") if row[2] != "not made"]
            assert not made, made
            assert _rows(text, "| amazon/fzoo |")[0][-1] == "open"

            # MeZO-SGD seed 1 (the target, 81.0 at step 1000, first at step 400) and seed 2 (never)
            lr = qr.LR["movies"]
            mezo = [(s, 0.5, 0.81 if s in (400, 1000) else 0.80) for s in range(0, 1001, 100)]
            _fake_test(_fake_run(out, "movies", qr.distzo_name(lr, 1), mezo), 0.829)
            if 2 in qr.SEEDS["movies"]:
                _fake_test(_fake_run(out, "movies", qr.distzo_name(lr, 2), [(s, 0.5, 0.80) for s in
                                                                          range(0, 1001, 100)]), 0.825)
            ft = f"finetune-lr{qr.lr_tag(qr.FT_LR['movies'])}"
            _fake_run(out, "movies", ft, result={"dev_accuracy": 0.87, "test_accuracy": 0.881, "test_loss": 0.3})
            text = qt.estimators_tables(res)
            row = _rows(text, "| movies |")[0]
            assert row[1] == f"81.0 ({qr.distzo_name(lr, 1)})", row
            assert row[2].startswith("800 (seed 1)") and ("not within 2,000 (seed 2)" in row[2]) == (
                2 in qr.SEEDS["movies"]), row
            ref = 0.827 if 2 in qr.SEEDS["movies"] else 0.829
            assert row[5].startswith(f"— / {100 * ref:.1f}") and row[6] == f"{100 * (0.881 - ref):.1f} → —", row
            seed1 = _rows(text, f"| movies/{qr.distzo_name(lr, 1)} |")[0]
            # 60 s for 1000 steps: 24 s to step 400
            assert seed1[1:] == ["MeZO-SGD", "1000 × 2 = 2,000", "81.0", "800 (step 400)", "≈ 24 s", "82.9", "",
                                 "reference"], seed1

            # the grid: the lr that reaches the target at step 44 (396 evaluations) and one that does not
            good, bad = qr.FZOO_LR_CANDIDATES["movies"][:2]
            name = _fake_fzoo(out, "movies", good, reach_step=44)
            _fake_fzoo(out, "movies", bad, end_acc=0.79)
            text = qt.estimators_tables(res)
            assert f"**{good:g}" not in text and f"{good:g} 81.0 %, {bad:g} 79.0 % (none chosen yet)" in text, text
            third = _rows(text, f"| movies/{name}-third |")[0]
            assert third[2:] == ["74 × 9 = 666", "81.0", "396 (step 44)", f"≈ {60 * 44 / 74:.0f} s", "—", "",
                                 "open"], third
            assert _rows(text, f"| movies/fzoo-n8-lr{qr.lr_tag(bad)}-s1-third |")[0][-1] == "does not"
            assert _rows(text, "| movies |")[0][-1] == "open"
            qr.FZOO_LR["movies"] = bad  # dev backs `good`
            try:
                qt.estimators_tables(res)
                raise AssertionError("an FZOO lr that dev does not back was accepted")
            except SystemExit as e:
                assert f"FZOO lr {bad:g} declared, {good:g} is better" in str(e), e
            qr.FZOO_LR["movies"] = good
            row = _rows(qt.estimators_tables(res), "| movies |")[0]
            assert f"**{good:g} 81.0 %**" in row[3] and row[4] == "396 (step 44)" and row[-1] == "open", row
            # the PyTorch reference at another lr, better on dev: shown, never chosen or judged
            _fake_run(out, "movies", f"torch-fzoo-n{qr.FZOO_N}-lr{qr.lr_tag(bad)}-s1-third",
                      [(s, 0.5, 0.83) for s in (0, 22, 44, 66, 74)])
            text = qt.estimators_tables(res)
            torch_row = _rows(text, f"| movies/torch-fzoo-n8-lr{qr.lr_tag(bad)}-s1-third |")[0]
            assert torch_row[1] == f"FZOO in PyTorch (N = 8), lr {bad:g}" and torch_row[-1] == "reference", torch_row
            row = _rows(text, "| movies |")[0]
            assert f"**{good:g} 81.0 %**" in row[3] and row[4] == "396 (step 44)" and row[-1] == "open", row

            # the whole budget, carried on: test above MeZO-SGD's mean meets the goal, below does not
            _fake_fzoo(out, "movies", good, reach_step=44, whole_test=0.835, third=False, whole=True)
            text = qt.estimators_tables(res)
            whole = _rows(text, f"| movies/{name} |")[0]
            assert whole[2:] == ["222 × 9 = 1,998", "81.0", "396 (step 44)", f"≈ {60 * 44 / 74:.0f} s", "83.5",
                                 f"{100 * ref:.1f}" + (" (2 seeds)" if 2 in qr.SEEDS["movies"] else ""),
                                 "meets the goal"], whole
            row = _rows(text, "| movies |")[0]
            assert row[-1] == "meets the goal" and row[6] == f"{100 * (0.881 - ref):.1f} → 4.6", row
            assert qt.wall_to(res, "movies", name, 148) == 60 + 60 * (148 - 74) / (222 - 74)
            _fake_test(os.path.join(out, "movies", name), 0.820)
            assert _rows(qt.estimators_tables(res), "| movies |")[0][-1] == "does not"
            # --write refuses to lose them: the whole-budget record gone, its numbers and verdict go
            shutil.rmtree(os.path.join(out, "movies", name))
            lost = qt.dropped(text, qt.estimators_tables(res))
            assert f"the row 'movies/{name}'" not in lost and any(
                f"'movies/{name}' / 'test accuracy at the budget' (83.5)" == x for x in lost), lost
            assert "'movies' / 'verdict' (meets the goal)" in lost, lost

            # a whole-budget record without its third-budget one: open, and no crash
            _fake_fzoo(out, "amazon", 1e-4, reach_step=88, whole_test=0.9, third=False, whole=True)
            text = qt.estimators_tables(res)
            assert _rows(text, "| amazon/fzoo-n8-lr1e-4-s1 |")[0][-1] == "open", text

        # the goal over the tasks: met on three of four, then not met with two
        with tempfile.TemporaryDirectory() as out:
            res = qt.Results(out)
            for task in qt.TASKS:
                lr = qr.LR[task]
                _fake_test(_fake_run(out, task, qr.distzo_name(lr, 1),
                                     [(s, 0.5, 0.81 if s == 1000 else 0.80) for s in range(0, 1001, 100)]), 0.85)
                qr.FZOO_LR[task] = 3e-4
                _fake_fzoo(out, task, 3e-4, reach_step=22 if task != "nyt" else None, whole_test=0.86, whole=True)
            text = qt.estimators_tables(res)
            assert "**met** (meets the goal on 3, does not on 1, open on 0)" in text, text
            _fake_test(os.path.join(out, "tweets", "fzoo-n8-lr3e-4-s1"), 0.84)
            assert "**not met** (meets the goal on 2, does not on 2, open on 0)" in qt.estimators_tables(res)
    finally:
        qr.FZOO_LR.clear()
        qr.FZOO_LR.update(declared)
        qr.FZOO_LR_CANDIDATES.clear()
        qr.FZOO_LR_CANDIDATES.update(grids)
    print("quality estimators table: not made, target, lr on dev, verdicts, goal: OK")


def test_quality_estimators_figure():
    """No figure before an estimator run is made; then dev accuracy against forward evaluations."""
    from distzo_tools.quality import quality_runs as qr
    from distzo_tools.quality import quality_table as qt

    with tempfile.TemporaryDirectory() as out:
        res = qt.Results(out)
        png = os.path.join(out, "est.png")
        assert not qt.figure_estimators(res, png) and not os.path.exists(png)
        assert "quality-estimators.png" not in qt.estimators_tables(res)
        _fake_test(_fake_run(out, "movies", qr.distzo_name(qr.LR["movies"], 1),
                             [(s, 0.5, 0.81 if s == 1000 else 0.80) for s in range(0, 1001, 100)]), 0.83)
        _fake_fzoo(out, "movies", qr.FZOO_LR_CANDIDATES["movies"][0], reach_step=44)
        assert "quality-estimators.png" in qt.estimators_tables(res)
        assert qt.figure_estimators(res, png) and os.path.getsize(png) > 10000
    print("quality estimators figure: OK")
