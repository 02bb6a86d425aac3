#!/usr/bin/env python3
"""Turn the log of perf/run_benchmarks.sh into perf/RESULTS.md.

    python perf/write_results.py RUN.log --out perf/RESULTS.md [--smoke]

The log holds, for every benchmark invocation, a marker line

    ### RUN threads=N cmd=<the command line>

followed by the benchmark's output, in which every measurement is one line
"RESULT {json}" (perf/bench_common.hpp, tools/mezo_reference.py). Only those
lines are read; everything else is for people.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys

MARKER = re.compile(r"^### RUN threads=(\d+) cmd=(.*)$")
PYTHON = re.compile(r"(^|\s)\S*python[0-9.]*(?=\s)")


def portable(command, model_path):
    """A command as RESULTS.md shows it: no path of the machine it ran on."""
    if model_path:
        command = command.replace(model_path, "$MODEL")
    return PYTHON.sub(r"\1$PYTHON", command)


def parse(log_path: str) -> tuple[list[dict], dict]:
    records, meta = [], {}
    threads, cmd, run = None, None, 0
    with open(log_path, encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            m = MARKER.match(line)
            if m:
                threads, cmd, run = int(m.group(1)), m.group(2), run + 1
                continue
            if line.startswith("### META "):
                key, _, value = line[len("### META "):].partition("=")
                meta[key.strip()] = value.strip()
                continue
            if line.startswith("RESULT "):
                rec = json.loads(line[len("RESULT "):])
                rec["threads_setting"] = threads
                rec["command"] = cmd
                rec["run"] = run
                records.append(rec)
    return records, meta


def find(records, bench, metric, threads):
    for r in records:
        if r["bench"] == bench and r["metric"] == metric and r["threads_setting"] == threads:
            return r
    return None


def perturb_runs(records, threads):
    """The bench_perturb runs at one thread setting, each a {metric: record}
    dict, ordered by the fused Gaussian kernel's ratio to deep_copy in that
    run, plus those ratios (the run script repeats bench_perturb because one
    run's baseline varies by up to a third on a shared machine)."""
    runs = {}
    for r in records:
        if r["bench"] == "perturb" and r["metric"] != "machine" and r["threads_setting"] == threads:
            runs.setdefault(r["run"], {})[r["metric"]] = r
    done = [x for x in runs.values() if "fused_gaussian" in x and "deep_copy" in x]
    done.sort(key=lambda x: float(x["fused_gaussian"]["median"]) / float(x["deep_copy"]["median"]))
    return done, [float(x["fused_gaussian"]["median"]) / float(x["deep_copy"]["median"]) for x in done]


def median_run(records, threads):
    """The bench_perturb run with the median fused/deep_copy ratio, or {}."""
    runs, _ = perturb_runs(records, threads)
    return runs[(len(runs) - 1) // 2] if runs else {}


def g(x, digits=4) -> str:
    """Significant digits, no exponent for ordinary magnitudes."""
    if x is None:
        return "—"
    x = float(x)
    if x == 0:
        return "0"
    if abs(x) >= 10 ** digits:
        return f"{x:,.0f}"
    text = f"{x:.{digits}g}"
    if "e" in text:
        mantissa, exp = text.split("e")
        return f"{mantissa}e{int(exp)}"
    return text


def ratio(a, b) -> str:
    if a is None or b is None or float(b) == 0:
        return "—"
    return f"{float(a) / float(b):.3g}×"


def fields_rate(rec, prefix="tokens_per_s"):
    return tuple(float(rec[f"{prefix}_{k}"]) for k in ("median", "min", "max"))


def profile_table(w, records, threads, bench: str, what: str) -> None:
    """Time per kernel label of the profiled repetition (--profile), one column
    pair per thread setting, rows ordered by the first setting's time."""
    rows = {t: {r["label"]: r for r in records
                if r["bench"] == bench and r["metric"] == "profile" and r["threads_setting"] == t}
            for t in threads}
    if not any(rows.values()):
        return
    labels: list[str] = []
    for t in threads:
        for label, _ in sorted(rows[t].items(), key=lambda kv: -float(kv[1]["median"])):
            if label not in labels:
                labels.append(label)
    w(f"Where the time of {what} goes (`--profile`: one extra repetition timed per Kokkos kernel "
      "label and region; `[region] distzo::gemm[host tiles]` is the tiled host GEMM (single-threaded "
      "OpenBLAS sgemm per tile), `[region] KokkosBlas::gemm[TPL_BLAS,float]` one OpenBLAS sgemm call "
      "(`DISTZO_GEMM=library`, or before the tiles); "
      "share = of that repetition's wall time):")
    w("")
    w("| kernel / region | " + " | ".join(f"{t} thr: ms | share" for t in threads) + " |")
    w("|---|" + "---:|---:|" * len(threads))
    for label in labels:
        cells = []
        for t in threads:
            r = rows[t].get(label)
            cells += [g(r["median"]), f"{100 * float(r['share']):.1f} %"] if r else ["—", "—"]
        w(f"| `{label}` | " + " | ".join(cells) + " |")
    w("")


def render(records: list[dict], meta: dict, smoke: bool) -> str:
    threads = sorted({r["threads_setting"] for r in records if r["threads_setting"] is not None})
    out = []
    w = out.append
    w("# distzo performance results")
    w("")
    w(f"Generated by `perf/run_benchmarks.sh` on {meta.get('date', datetime.datetime.now().isoformat(timespec='seconds'))}"
      f" (total wall time {meta.get('wall_s', '?')} s). Regenerate with `perf/run_benchmarks.sh`;"
      " perf/README.md explains every benchmark. Do not edit by hand.")
    w("")
    if smoke:
        w("> **SMOKE TEST — NOT RESULTS.** These numbers were taken to check that the benchmark")
        w("> scripts run end to end, on a shared 2-core machine while other jobs were compiling.")
        w("> They say nothing about distzo's speed. Rerun `perf/run_benchmarks.sh` on a quiet machine.")
        w("")

    # machine
    mach = next((r for r in records if r["metric"] == "machine" and r["bench"] == "forward"), None)
    torch_rec = next((r for r in records if r["bench"] == "torch_forward"), None)
    step_rec = next((r for r in records if r["bench"] == "step" and r["metric"] == "steps_per_s"), None)
    w("## Machine and settings")
    w("")
    if mach:
        w(f"- CPU: {mach['cpu']}; {mach['cpus']} logical CPUs online, {mach['affinity']} in the affinity mask")
        w(f"- distzo: Kokkos {mach['kokkos']} (every non-GEMM kernel runs on one thread), "
          f"BLAS: {mach['blas']}")
    if torch_rec:
        w(f"- baseline: PyTorch {torch_rec.get('torch', '?')} (CPU), "
          f"`attn_implementation={torch_rec.get('attn', '?')}`, `torch.inference_mode()` for the forward, "
          "`torch.no_grad()` in the MeZO reference (as MeZO's code)")
    if meta.get("host"):
        w(f"- host: {meta['host']}; compiler: {meta.get('compiler', '?')}")
    if meta.get("loadavg_start"):
        w(f"- load average (1, 5, 15 min) at start: {meta['loadavg_start']}, at end: {meta.get('loadavg_end', '?')}"
          " — anything well above 0 means other work shared the machine")
    w(f"- model: {meta.get('model_desc', '?')}")
    if step_rec:
        w(f"- workload: batch {step_rec['batch']} × seq {step_rec['seq']} = "
          f"{int(step_rec['batch']) * int(step_rec['seq'])} tokens, the fixed token pattern "
          "(same ids in C++ and Python), no padding; causal-LM loss on every position with a successor; "
          f"ZO: q = {step_rec['queries']}, {step_rec['distribution']} z, pending update applied every timed step")
    w("- threads: each configuration sets OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = MKL_NUM_THREADS = n "
      "and `torch.set_num_threads(n)`")
    w("- statistics: warm-up first, then the median of the timed repetitions, with min–max; "
      "ratios are of medians")
    w("")

    # summary
    w("## Summary: distzo / baseline (medians)")
    w("")
    w("| threads | forward: distzo / transformers | ZO step: distzo / PyTorch MeZO | fused perturb/update: GB/s / deep_copy GB/s |")
    w("|---:|---:|---:|---:|")
    for t in threads:
        f_d, f_t = find(records, "forward", "tokens_per_s", t), find(records, "torch_forward", "tokens_per_s", t)
        s_d, s_t = find(records, "step", "steps_per_s", t), find(records, "mezo_reference", "steps_per_s", t)
        p_run = median_run(records, t)
        p_f, p_c = p_run.get("fused_gaussian"), p_run.get("deep_copy")
        w(f"| {t} | {ratio(f_d and f_d['median'], f_t and f_t['median'])} "
          f"| {ratio(s_d and s_d['median'], s_t and s_t['median'])} "
          f"| {ratio(p_f and p_f['median'], p_c and p_c['median'])} |")
    w("")

    # forward
    w("## Forward pass (embed → blocks → final hidden → logits over the full vocabulary)")
    w("")
    w("| threads | implementation | tokens/s median | min–max | ms / forward | dense GFLOP/s | loss at θ (check) | distzo / baseline |")
    w("|---:|---|---:|---:|---:|---:|---:|---:|")
    for t in threads:
        d, b = find(records, "forward", "tokens_per_s", t), find(records, "torch_forward", "tokens_per_s", t)
        if d:
            w(f"| {t} | distzo `bench_forward` | {g(d['median'])} | {g(d['min'])}–{g(d['max'])} "
              f"| {g(d['ms_per_forward'])} | {g(d['gflops'])} | {d['loss']} | {ratio(d['median'], b and b['median'])} |")
        if b:
            w(f"| {t} | transformers ({b.get('attn', '?')}) | {g(b['median'])} | {g(b['min'])}–{g(b['max'])} "
              f"| {g(b['ms_per_forward'])} | | {b['loss']} | 1 |")
    w("")
    w("distzo split (median ms per forward) and the GEMM check (one fc1-shaped `kernels::linear`):")
    w("")
    w("| threads | embed | blocks | final hidden | logits | fc1 GEMM GFLOP/s | OpenBLAS threads |")
    w("|---:|---:|---:|---:|---:|---:|---:|")
    for t in threads:
        d = find(records, "forward", "tokens_per_s", t)
        if d:
            w(f"| {t} | {g(d.get('ms_embed'))} | {g(d['ms_blocks'])} | {g(d.get('ms_final_hidden'))} "
              f"| {g(d['ms_logits'])} | {g(d['gemm_gflops'])} | {d.get('blas_threads', '?')} |")
    w("")
    profile_table(w, records, threads, "forward", "one forward")

    # step
    w("## ZO step (MeZO-SGD, one query: two forward passes + perturbation + update)")
    w("")
    w("| threads | implementation | steps/s median | min–max | tokens/s median | min–max | s / step | distzo / baseline |")
    w("|---:|---|---:|---:|---:|---:|---:|---:|")
    for t in threads:
        d, b = find(records, "step", "steps_per_s", t), find(records, "mezo_reference", "steps_per_s", t)
        if d:
            tm = fields_rate(d)
            w(f"| {t} | distzo `Engine::run_step` | {g(d['median'])} | {g(d['min'])}–{g(d['max'])} "
              f"| {g(tm[0])} | {g(tm[1])}–{g(tm[2])} | {g(d['s_per_step'])} | {ratio(d['median'], b and b['median'])} |")
        if b:
            tm = fields_rate(b)
            w(f"| {t} | PyTorch MeZO (`tools/mezo_reference.py`) | {g(b['median'])} | {g(b['min'])}–{g(b['max'])} "
              f"| {g(tm[0])} | {g(tm[1])}–{g(tm[2])} | {g(b['s_per_step'])} | 1 |")
    w("")
    w("Where a step's time goes (medians, seconds). distzo: two forwards from `bench_forward`, plus one "
      "fused update+perturb pass over every parameter at the `bench_perturb` rate; MeZO: measured inside the step.")
    w("")
    w("| threads | implementation | measured s / step | 2 × forward | z passes | estimate | flush (one apply_update pass) |")
    w("|---:|---|---:|---:|---:|---:|---:|")
    for t in threads:
        d = find(records, "step", "steps_per_s", t)
        f = find(records, "forward", "tokens_per_s", t)
        p = median_run(records, t).get("fused_gaussian")
        b = find(records, "mezo_reference", "steps_per_s", t)
        if d and f and p and d.get("parameters"):
            fwd2 = 2 * float(f["ms_per_forward"]) / 1e3
            z = float(d["parameters"]) / (float(p["gelem_per_s"]) * 1e9)
            w(f"| {t} | distzo | {g(d['s_per_step'])} | {g(fwd2)} | {g(z)} | {g(fwd2 + z)} "
              f"| {g(float(d['flush_ms']) / 1e3)} |")
        if b:
            w(f"| {t} | PyTorch MeZO | {g(b['s_per_step'])} | {g(b['forward_s'])} | {g(b['perturb_s'])} "
              f"| {g(float(b['forward_s']) + float(b['perturb_s']))} | |")
    w("")

    profile_table(w, records, threads, "step", "one ZO step with a pending update")

    # perturb
    w("## Fused perturb/update kernel vs `Kokkos::deep_copy` (same run)")
    w("")
    p0 = next((r for r in records if r["bench"] == "perturb" and r["metric"] == "deep_copy"), None)
    if p0:
        w(f"{p0['elements']} float32 elements per tensor. GB/s divides the COUNTED bytes per element "
          "(B/el) by the time: the fused kernel with a pending 1-query update counts read θ + write θ + "
          "write w+ + write w− = 16 B; the baseline copies 2N floats (read 8 + write 8 = 16 B per θ element). "
          "Ordinary stores also read the destination line first (write-allocate), so the fused kernel's "
          "hardware traffic is up to 24 B/el, whereas a large memcpy uses non-temporal stores. "
          "The Kokkos Serial backend runs these kernels on one thread whatever the thread setting.")
        w("")
    w("Each thread setting ran `bench_perturb` several times; the table shows the run whose fused "
      "Gaussian / deep_copy ratio is the median of the runs (every ratio is of two medians of the same run).")
    w("")
    w("| threads | kernel | B/el | GB/s median | min–max | Gelem/s | vs deep_copy |")
    w("|---:|---|---:|---:|---:|---:|---:|")
    for t in threads:
        for r in median_run(records, t).values():
            w(f"| {t} | {r['description']} | {r['bytes_per_element']} | {g(r['median'])} "
              f"| {g(r['min'])}–{g(r['max'])} | {g(r['gelem_per_s'])} | {g(r['vs_deep_copy'], 3)} |")
    w("")
    for t in threads:
        _, ratios = perturb_runs(records, t)
        if ratios:
            w(f"- threads {t}: fused update + w± (Gaussian) / deep_copy in each of {len(ratios)} runs: "
              + ", ".join(f"{x:.3f}" for x in ratios) + f" — median {ratios[(len(ratios) - 1) // 2]:.3f}.")
    for t in threads:
        run = median_run(records, t)
        gs, rs = run.get("fused_gaussian"), run.get("fused_rademacher")
        if gs and rs:
            w(f"- threads {t}: Gaussian z vs Rademacher z (fused update + w±): {g(gs['gelem_per_s'])} vs "
              f"{g(rs['gelem_per_s'])} Gelem/s — the Gaussian is {ratio(rs['gelem_per_s'], gs['gelem_per_s'])} "
              "slower (the Box–Muller's log, sqrt and sin/cos polynomials per pair).")
        v1 = run.get("fused_gaussian_v1")
        if gs and v1:
            w(f"- threads {t}: recipe 2 vs recipe 1 (fused update + w±, Gaussian): {g(gs['gelem_per_s'])} vs "
              f"{g(v1['gelem_per_s'])} Gelem/s: recipe 2 runs at {ratio(gs['gelem_per_s'], v1['gelem_per_s'])} "
              "recipe 1's rate (binary32 polynomials over 32 blocks at once, vectorised, against double libm calls per pair).")
    w("")

    # z statistics
    stats = [r for r in records if r["bench"] == "z_statistics" and r["metric"] not in ("machine", "generate_s")]
    if stats:
        gen = [r for r in records if r["bench"] == "z_statistics" and r["metric"] == "generate_s"]
        n = gen[0]["samples"] if gen else "?"
        w("## Gaussian z: normality at 10^8 samples")
        w("")
        w(f"`bench_z_statistics`: the checks of `tests/test_perturbation.cpp` (10^6 samples in ctest) on {n} "
          "samples per recipe (seed 31337, step 42, parameter 3, from element 2). Each statistic must be "
          "below its bound (6 standard errors for the moments; the 1e-6 critical values for chi-square "
          "and Kolmogorov–Smirnov; sqrt(-2 ln u1_min) for |z|).")
        w("")
        w("| recipe | statistic | value | bound | ok |")
        w("|---:|---|---:|---:|---|")
        for r in stats:
            name = r["metric"].replace("|", "\\|")  # |mean| inside a table cell
            w(f"| {r['recipe']} | {name} | {g(r['median'], 6)} | {r['bound']} | {r['ok']} |")
        for r in gen:
            w("")
            w(f"- recipe {r['recipe']}: {r['samples']} samples generated by `fill_perturbation` in {g(r['median'])} s.")
        w("")

    # commands
    w("## Commands")
    w("")
    model_path = meta.get("model_path", "")
    if model_path:
        w(f"`$MODEL` is {meta.get('model_desc', model_path)}, written to a temporary file by "
          "`tools/make_random_opt.py`; `$PYTHON` is the interpreter given to the run script.")
        w("")
    w("```sh")
    seen, last_threads = set(), None
    for r in records:
        key = (r["threads_setting"], r["command"])
        if r["metric"] == "machine" or key in seen or not r["command"]:
            continue
        seen.add(key)
        if r["threads_setting"] != last_threads:
            w(f"# --- {r['threads_setting']} thread(s)")
            last_threads = r["threads_setting"]
        w(portable(r["command"], model_path))
    w("```")
    w("")
    return "\n".join(out)


def kept_sections(path: str) -> str:
    """The sections other scripts own in an existing RESULTS.md (bench_mesh.sh,
    bench_demo.sh): each runs from a line `<!-- NAME:begin -->` to the matching
    `<!-- NAME:end -->` and is carried over unchanged, so regenerating the
    benchmark tables does not drop them."""
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    blocks = re.finditer(r"^<!-- ([a-z]+):begin -->\n.*?^<!-- \1:end -->\n?", text, flags=re.M | re.S)
    return "".join("\n" + m.group(0).rstrip("\n") + "\n" for m in blocks)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("log")
    p.add_argument("--out", required=True)
    p.add_argument("--smoke", action="store_true", help="label the numbers a smoke test, not results")
    args = p.parse_args(argv)
    records, meta = parse(args.log)
    if not records:
        print(f"write_results: no RESULT lines in {args.log}", file=sys.stderr)
        return 1
    text = render(records, meta, args.smoke) + kept_sections(args.out)
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, args.out)
    print(f"wrote {args.out} ({len(records)} measurements)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
