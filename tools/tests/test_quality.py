"""The quality table's runner and table (quality_runs, quality_table; pyyaml,
numpy, h5py, matplotlib for the figures) on made-up run records: choices
backed by dev, the resume check, longer runs carried on from a parent, a
cut-off run's seconds added up over its invocations, records archived and
read back, lost numbers found.
"""

from __future__ import annotations

import json
import os
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
