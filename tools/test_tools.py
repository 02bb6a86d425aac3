#!/usr/bin/env python3
"""Self-tests for the Python tools (not part of CI: they need torch + transformers).

    python tools/test_tools.py          # or: python -m pytest tools/test_tools.py

1. hf_to_h5 round trips (safetensors, sharded safetensors, pytorch_model.bin,
   sharded .bin, `decoder.*` keys, a tied lm_head present, float16 weights):
   HF -> distzo -> HF gives bit-identical logits in transformers.
2. hf_to_h5 rejects what distzo does not support, with a clear message.
3. An independent numpy OPT forward, reading only the distzo model file,
   reproduces every tests/data/*.ref.h5 (logits at real tokens, hidden states,
   losses), which checks both the fixtures and their documentation.
4. demo_baselines' statistics on hand-made cases: AUC (with ties), the fitted
   threshold, and the logistic probe separating separable data.
5. The parameter digest of tools/digest_reference.py (numpy path and plain
   definition alike) equals `distzo inspect --digest` on every
   tests/data/*.model.h5 and on a model distzo writes (needs a built distzo:
   $DISTZO, default build/distzo; numpy + h5py only, runs first).
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import distzo_h5  # noqa: E402
import hf_to_h5  # noqa: E402
from distzo_h5 import FormatError  # noqa: E402

DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


def _quiet_transformers():
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def _tiny_model(seed=0, **overrides):
    import torch
    from transformers import OPTConfig, OPTForCausalLM

    kw = dict(
        vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, ffn_dim=32,
        max_position_embeddings=20, attn_implementation="eager",
    )
    kw.update(overrides)
    torch.manual_seed(seed)
    model = OPTForCausalLM(OPTConfig(**kw)).eval()
    with torch.no_grad():  # make biases and layer norms non-trivial
        for name, p in model.named_parameters():
            if name.endswith(".bias") or "layer_norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


def _logits(model):
    import torch

    ids = torch.tensor([[2, 5, 9, 11, 7, 3], [1, 1, 2, 8, 4, 6]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask).logits.numpy()


def _state_dict(model, rename_decoder=False, with_head=False, dtype=None):
    sd = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    if not with_head:
        sd.pop("lm_head.weight", None)
    elif "lm_head.weight" not in sd:
        sd["lm_head.weight"] = sd["model.decoder.embed_tokens.weight"].clone()
    if rename_decoder:
        sd = {(k[len("model."):] if k.startswith("model.decoder.") else k): v for k, v in sd.items()}
    if dtype is not None:
        sd = {k: v.to(dtype) for k, v in sd.items()}
    return sd


def _write_hf(model, out_dir, fmt, rename_decoder=False, with_head=False, shards=1, dtype=None):
    """Write config.json and weights in one of the layouts found on the hub."""
    import torch
    from safetensors.torch import save_file

    os.makedirs(out_dir, exist_ok=True)
    model.config.to_json_file(os.path.join(out_dir, "config.json"))
    sd = _state_dict(model, rename_decoder, with_head, dtype)
    keys = sorted(sd)
    parts = [keys[i::shards] for i in range(shards)]
    ext = "safetensors" if fmt == "safetensors" else "bin"
    stem = "model" if fmt == "safetensors" else "pytorch_model"
    weight_map = {}
    for i, part in enumerate(parts):
        name = f"{stem}.{ext}" if shards == 1 else f"{stem}-{i + 1:05d}-of-{shards:05d}.{ext}"
        piece = {k: sd[k] for k in part}
        if fmt == "safetensors":
            save_file(piece, os.path.join(out_dir, name), metadata={"format": "pt"})
        else:
            torch.save(piece, os.path.join(out_dir, name))
        weight_map.update({k: name for k in part})
    if shards > 1:
        with open(os.path.join(out_dir, f"{stem}.{ext}.index.json"), "w") as fh:
            json.dump({"metadata": {}, "weight_map": weight_map}, fh)


def _round_trip(model, tmp, **layout):
    from transformers import OPTForCausalLM

    hf_dir, h5, back = (os.path.join(tmp, n) for n in ("hf", "m.h5", "back"))
    _write_hf(model, hf_dir, **layout)
    hf_to_h5.hf_to_h5(hf_dir, h5, verbose=False)
    hf_to_h5.h5_to_hf(h5, back, verbose=False)
    again = OPTForCausalLM.from_pretrained(back, attn_implementation="eager").eval()
    return h5, again


def test_round_trips():
    _quiet_transformers()
    import torch

    cases = [
        ("safetensors", dict(fmt="safetensors")),
        ("safetensors, 3 shards", dict(fmt="safetensors", shards=3)),
        ("pytorch_model.bin", dict(fmt="bin")),
        ("pytorch_model.bin, 2 shards, tied lm_head present", dict(fmt="bin", shards=2, with_head=True)),
        ("decoder.* keys, safetensors", dict(fmt="safetensors", rename_decoder=True)),
        ("decoder.* keys, .bin, lm_head present", dict(fmt="bin", rename_decoder=True, with_head=True)),
    ]
    for post_ln, proj in ((False, None), (True, None), (True, 8), (False, 8)):
        model = _tiny_model(seed=len(cases), do_layer_norm_before=not post_ln, word_embed_proj_dim=proj)
        ref = _logits(model)
        for label, layout in cases:
            with tempfile.TemporaryDirectory() as tmp:
                h5, again = _round_trip(model, tmp, **layout)
                got = _logits(again)
                assert np.array_equal(got, ref), f"{label}: logits differ by {np.abs(got - ref).max()}"
                cfg, tensors = distzo_h5.read_model(h5)
                sd = model.state_dict()
                for name, array in tensors.items():
                    assert np.array_equal(array, sd[name].numpy()), name
                assert "lm_head.weight" not in tensors
    # float16 weights (as the released OPT checkpoints are stored): exact upcast
    model = _tiny_model(seed=7)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    with tempfile.TemporaryDirectory() as tmp:
        _, again = _round_trip(model, tmp, fmt="safetensors", dtype=torch.float16)
        assert np.array_equal(_logits(again), _logits(model)), "float16 round trip"
    print("round trips: OK")


def _expect_error(hf_dir, out, needle):
    try:
        hf_to_h5.hf_to_h5(hf_dir, out, verbose=False)
    except FormatError as err:
        assert needle in str(err), f"expected {needle!r} in {err}"
        assert not os.path.exists(out), "a failed conversion left its output behind"
        leftovers = glob.glob(os.path.join(os.path.dirname(out), ".*.tmp"))
        assert not leftovers, leftovers
        return str(err)
    raise AssertionError(f"no error (expected {needle!r})")


def test_rejections():
    _quiet_transformers()
    import torch

    model = _tiny_model()
    msgs = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "o.h5")
        hf = os.path.join(tmp, "hf")
        msgs.append(_expect_error(os.path.join(tmp, "nope"), out, "not a directory"))
        os.makedirs(hf)
        msgs.append(_expect_error(hf, out, "config.json missing"))
        model.config.to_json_file(os.path.join(hf, "config.json"))
        msgs.append(_expect_error(hf, out, "no weights found"))
        _write_hf(model, hf, fmt="safetensors")
        for key, value, needle in (
            ("activation_function", "gelu", "only 'relu'"),
            ("enable_bias", False, "enable_bias"),
            ("layer_norm_elementwise_affine", False, "layer_norm_elementwise_affine"),
            ("_remove_final_layer_norm", True, "_remove_final_layer_norm"),
            ("tie_word_embeddings", False, "config.json tie_word_embeddings is false"),
            ("model_type", "gpt2", "model_type"),
        ):
            cfg = json.load(open(os.path.join(hf, "config.json")))
            cfg[key] = value
            bad = os.path.join(tmp, "bad_" + key)
            _write_hf(model, bad, fmt="safetensors")
            json.dump(cfg, open(os.path.join(bad, "config.json"), "w"))
            msgs.append(_expect_error(bad, out, needle))
        # untied head that differs from embed_tokens
        bad = os.path.join(tmp, "untied")
        _write_hf(model, bad, fmt="bin", with_head=True)
        sd = torch.load(os.path.join(bad, "pytorch_model.bin"))
        sd["lm_head.weight"] = sd["lm_head.weight"] + 1e-3
        torch.save(sd, os.path.join(bad, "pytorch_model.bin"))
        msgs.append(_expect_error(bad, out, "untied"))
        # a missing tensor, a wrong shape, an unknown key, a shard missing
        for what in ("missing", "shape", "unknown"):
            bad = os.path.join(tmp, what)
            _write_hf(model, bad, fmt="bin")
            path = os.path.join(bad, "pytorch_model.bin")
            sd = torch.load(path)
            if what == "missing":
                del sd["model.decoder.layers.1.fc2.bias"]
            elif what == "shape":
                sd["model.decoder.layers.0.fc1.weight"] = sd["model.decoder.layers.0.fc1.weight"].t().contiguous()
            else:
                sd["model.decoder.layers.2.fc1.bias"] = torch.zeros(3)
            torch.save(sd, path)
            needle = {"missing": "missing: model.decoder.layers.1.fc2.bias", "shape": "expected (32, 16)", "unknown": "layers.2.fc1.bias"}[what]
            msgs.append(_expect_error(bad, out, needle))
        bad = os.path.join(tmp, "shards")
        _write_hf(model, bad, fmt="safetensors", shards=2)
        os.unlink(os.path.join(bad, "model-00002-of-00002.safetensors"))
        msgs.append(_expect_error(bad, out, "shard file(s) missing"))
        # the CLI: exit status 1 and one line on stderr
        proc = subprocess.run(
            [sys.executable, os.path.join(HERE, "hf_to_h5.py"), os.path.join(tmp, "untied"), out],
            capture_output=True, text=True,
        )
        assert proc.returncode == 1 and proc.stderr.startswith("hf_to_h5: error:"), proc
    for m in msgs:
        print("  rejected:", m)
    print("rejections: OK")


# ---------------------------------------------------------------------------
# An independent OPT forward in numpy (float64), from the distzo model file only.


def _layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def numpy_forward(cfg, t, input_ids, mask):
    """Logits and hidden states at every position; pad queries attend to nothing
    (their rows are left at zero attention), so only real positions are compared."""
    d = "model.decoder."
    B, T = input_ids.shape
    H, nh = cfg.hidden_size, cfg.num_attention_heads
    hd = H // nh
    g = {k: v.astype(np.float64) for k, v in t.items()}
    pos = np.cumsum(mask, 1) * mask - 1
    x = g[d + "embed_tokens.weight"][input_ids]
    if cfg.has_projection:
        x = x @ g[d + "project_in.weight"].T
    x = x + g[d + "embed_positions.weight"][pos + distzo_h5.POSITION_OFFSET]
    hidden = [x]
    causal = np.tril(np.ones((T, T), bool))
    allowed = causal[None] & (mask[:, None, :] == 1) & (mask[:, :, None] == 1)  # (B, Tq, Tk)
    for k in range(cfg.num_hidden_layers):
        p = f"{d}layers.{k}."
        lin = lambda v, n: v @ g[p + n + ".weight"].T + g[p + n + ".bias"]  # noqa: E731
        res = x
        h = _layer_norm(x, g[p + "self_attn_layer_norm.weight"], g[p + "self_attn_layer_norm.bias"]) if cfg.do_layer_norm_before else x
        q = lin(h, "self_attn.q_proj").reshape(B, T, nh, hd).transpose(0, 2, 1, 3) * hd**-0.5
        kk = lin(h, "self_attn.k_proj").reshape(B, T, nh, hd).transpose(0, 2, 1, 3)
        v = lin(h, "self_attn.v_proj").reshape(B, T, nh, hd).transpose(0, 2, 1, 3)
        s = np.where(allowed[:, None], q @ kk.transpose(0, 1, 3, 2), -np.inf)
        m = np.max(np.where(np.isfinite(s), s, -1e300), -1, keepdims=True)
        w = np.where(allowed[:, None], np.exp(s - m), 0.0)
        w = w / np.maximum(w.sum(-1, keepdims=True), 1e-300)
        a = (w @ v).transpose(0, 2, 1, 3).reshape(B, T, H)
        x = res + lin(a, "self_attn.out_proj")
        if not cfg.do_layer_norm_before:
            x = _layer_norm(x, g[p + "self_attn_layer_norm.weight"], g[p + "self_attn_layer_norm.bias"])
        res = x
        h = _layer_norm(x, g[p + "final_layer_norm.weight"], g[p + "final_layer_norm.bias"]) if cfg.do_layer_norm_before else x
        x = res + lin(np.maximum(lin(h, "fc1"), 0.0), "fc2")
        if not cfg.do_layer_norm_before:
            x = _layer_norm(x, g[p + "final_layer_norm.weight"], g[p + "final_layer_norm.bias"])
        hidden.append(x)
    layer_last = x
    if cfg.has_final_layer_norm:
        x = _layer_norm(x, g[d + "final_layer_norm.weight"], g[d + "final_layer_norm.bias"])
    if cfg.has_projection:
        x = x @ g[d + "project_out.weight"].T
    hidden[-1] = x
    logits = x @ g[d + "embed_tokens.weight"].T  # tied head
    return logits, hidden, layer_last


def test_fixtures_against_numpy():
    refs = sorted(glob.glob(os.path.join(DATA, "*.ref.h5")))
    assert refs, f"no fixtures in {DATA}"
    for ref_path in refs:
        with h5py.File(ref_path, "r") as f:
            r = {k: f[k][()] for k in f}
            model_file = f.attrs["model"]
        cfg, t = distzo_h5.read_model(os.path.join(DATA, model_file))
        logits, hidden, layer_last = numpy_forward(cfg, t, r["input_ids"], r["attention_mask"])
        real = r["attention_mask"] == 1
        errs = {"logits": np.abs(logits - r["logits"])[real].max()}
        for k, h in enumerate(hidden):
            errs[f"hidden_states_{k}"] = np.abs(h - r[f"hidden_states_{k}"])[real].max()
        L = cfg.num_hidden_layers
        errs[f"layer_output_{L - 1}"] = np.abs(layer_last - r[f"layer_output_{L - 1}"])[real].max()
        for k in range(L - 1):
            assert np.array_equal(r[f"layer_output_{k}"], r[f"hidden_states_{k + 1}"])
        # losses from the float64 logits
        lp = logits - logits.max(-1, keepdims=True)
        lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
        tgt = r["labels"][:, 1:]
        ok = tgt != -100
        bi, ti = np.nonzero(ok)
        nll = -lp[bi, ti, tgt[bi, ti]]
        assert int(ok.sum()) == int(r["lm_token_count"])
        assert ok[~real[:, :-1]].sum() == 0, "a pad position predicts a target"
        lm_rel = abs(nll.mean() - r["lm_loss"]) / r["lm_loss"]
        cl = logits[np.arange(len(r["cls_position"])), r["cls_position"]][:, r["candidates"]]
        cl = cl - cl.max(-1, keepdims=True)
        cl = cl - np.log(np.exp(cl).sum(-1, keepdims=True))
        cls = -cl[np.arange(len(cl)), r["cls_gold"]].mean()
        cls_rel = abs(cls - r["cls_loss"]) / r["cls_loss"]
        assert np.array_equal(np.argmax(cl, -1), r["cls_predictions"])
        assert np.array_equal(r["cls_position"], [np.nonzero(m)[0].max() for m in real])
        worst = max(errs.values())
        print(
            f"  {os.path.basename(ref_path)}: max|numpy - HF| at real tokens {worst:.2e} "
            f"({max(errs, key=errs.get)}); lm_loss rel {lm_rel:.1e}; cls_loss rel {cls_rel:.1e}"
        )
        assert worst < 2e-5, errs
        assert lm_rel < 1e-6 and cls_rel < 1e-6
    print("fixtures vs numpy forward: OK")


def test_digest_matches_inspect():
    import digest_reference as dr

    distzo = os.environ.get("DISTZO", os.path.join(os.path.dirname(HERE), "build", "distzo"))
    assert os.path.exists(distzo), f"no distzo binary at {distzo}: build it or set DISTZO"
    with tempfile.TemporaryDirectory() as tmp:
        made = os.path.join(tmp, "made.h5")  # written by distzo: project_in/out, pre-LN
        subprocess.run(
            [distzo, "make-model", made, "--layers", "2", "--hidden", "16", "--heads", "2", "--ffn", "24",
             "--vocab", "40", "--positions", "16", "--proj", "8", "--seed", "3"],
            check=True, capture_output=True,
        )
        for path in sorted(glob.glob(os.path.join(DATA, "*.model.h5"))) + [made]:
            ours = dr.file_digest(path)
            theirs = subprocess.run(
                [distzo, "inspect", path, "--digest"], check=True, capture_output=True, text=True
            ).stdout.strip()
            assert ours == theirs, f"{path}: python {ours}, distzo {theirs}"
            # the numpy path agrees with the plain definition
            cfg, tensors = distzo_h5.read_model(path)
            plain = dr.fold(
                (n, tensors[n].shape, dr.element_sum(tensors[n].reshape(-1).view(np.uint32).tolist()))
                for n in dr.canonical_order(cfg)
            )
            assert dr.hex_digest(plain) == ours, path
        with h5py.File(made, "r") as f:
            assert int(f.attrs["digest_version"]) == dr.VERSION
    print("digest reference == distzo inspect --digest: OK")


def test_demo_baselines_statistics():
    import torch

    import demo_baselines as db

    labels = torch.tensor([0, 0, 1, 1])
    assert db.auc(torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64), labels) == 1.0
    assert db.auc(torch.tensor([0.4, 0.3, 0.2, 0.1], dtype=torch.float64), labels) == 0.0
    # one tie between a positive and a negative counts one half: (3 + 0.5) / 4
    assert db.auc(torch.tensor([0.1, 0.3, 0.3, 0.4], dtype=torch.float64), labels) == 0.875
    # the best cut separates {-2, -1, 3} (label 0) from {4, 5} (label 1): any cut in (3, 4)
    score = torch.tensor([-2.0, -1.0, 3.0, 4.0, 5.0], dtype=torch.float64)
    cut = db.best_threshold(score, torch.tensor([0, 0, 0, 1, 1]))
    assert 3.0 < cut < 4.0, cut
    assert db.accuracy((score > cut).long(), torch.tensor([0, 0, 0, 1, 1])) == 1.0
    # a probe on linearly separable 2-d points classifies them all
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(200, 2, generator=gen, dtype=torch.float64)
    y = (x[:, 0] - 0.5 * x[:, 1] > 0.2).long()
    probe = db.fit_logistic(x, y, 1e-4)
    assert db.accuracy((probe(x) > 0).long(), y) >= 0.98


if __name__ == "__main__":
    test_digest_matches_inspect()
    test_demo_baselines_statistics()
    test_fixtures_against_numpy()
    test_rejections()
    test_round_trips()
    print("all tool tests passed")
