"""The references against distzo and the fixtures.

1. The parameter digest of digest_reference (numpy path and plain definition
   alike) equals `distzo inspect --digest` on every tests/data/*.model.h5 and
   on a model distzo writes (needs a built distzo: $DISTZO, default
   build/distzo; numpy + h5py only).
2. An independent numpy OPT, Llama and Gemma 3 forward, reading only the
   distzo model file, reproduces every tests/data/*.ref.h5 (logits at real
   tokens, hidden states, losses), which checks both the fixtures and their
   documentation; mezo_reference.load_model_h5 reproduces the Llama and
   Gemma 3 fixtures' logits and loss (torch, transformers).
3. mezo_finetune: a run cut and resumed, and one extended, end as the
   straight run, bit for bit; --keep-z gives the same step; other settings
   are refused (torch, transformers, pyyaml).
4. The FZOO reference (optim.estimator: one_sided; mezo_reference.
   one_sided_step): its update is the formula, --keep-z and a resume change
   no bit, what is not implemented is refused, and its step-1 L(θ) on the
   demo deck is `distzo run`'s (with a built distzo, $DISTZO as in 1;
   skipped without one).
"""

from __future__ import annotations

import copy
import glob
import os
import subprocess
import tempfile

import pytest

np = pytest.importorskip("numpy")
h5py = pytest.importorskip("h5py")

from distzo_tools import REPO, formats  # noqa: E402
from tests.hf_models import quiet_transformers  # noqa: E402

DATA = os.path.join(REPO, "tests", "data")


def test_digest_matches_inspect():
    from distzo_tools.references import digest_reference as dr

    distzo = os.environ.get("DISTZO", os.path.join(REPO, "build", "distzo"))
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
            proc = subprocess.run([distzo, "inspect", path, "--digest"], capture_output=True, text=True)
            assert proc.returncode == 0, f"{path}: distzo inspect --digest failed: {proc.stderr.strip()}"
            theirs = proc.stdout.strip()
            assert ours == theirs, f"{path}: python {ours}, distzo {theirs}"
            # the numpy path agrees with the plain definition
            cfg, tensors = formats.read_model(path)
            plain = dr.fold(
                (n, tensors[n].shape, dr.element_sum(tensors[n].reshape(-1).view(np.uint32).tolist()))
                for n in dr.canonical_order(cfg)
            )
            assert dr.hex_digest(plain) == ours, path
        with h5py.File(made, "r") as f:
            # float32 tensors: version 2, the oldest whose digest is theirs (3 agrees on them)
            assert int(f.attrs["digest_version"]) == dr.FIRST_WORD == 2
    print("digest reference == distzo inspect --digest: OK")


# Independent OPT, Llama and Gemma 3 forwards in numpy (float64), from the distzo model file only.


def _layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _attend(q, kk, v, allowed):
    """softmax(q kk^T) v per head, (B, heads, T, hd) each, over the allowed
    (B, Tq, Tk) pairs; a query with no allowed key gets zeros."""
    s = np.where(allowed[:, None], q @ kk.transpose(0, 1, 3, 2), -np.inf)
    m = np.max(np.where(np.isfinite(s), s, -1e300), -1, keepdims=True)
    w = np.where(allowed[:, None], np.exp(s - m), 0.0)
    w = w / np.maximum(w.sum(-1, keepdims=True), 1e-300)
    return w @ v


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
    x = x + g[d + "embed_positions.weight"][pos + formats.POSITION_OFFSET]
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
        a = _attend(q, kk, v, allowed).transpose(0, 2, 1, 3).reshape(B, T, H)
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


def llama_positions(mask):
    """distzo's positions: 0, 1, 2, ... over each row's real tokens, 1 at pads."""
    return np.where(mask == 1, np.cumsum(mask, 1) - 1, 1)


def _rope_frequencies(scaling, base, hd, max_positions):
    """(short, long or None, long_from, attention factor): the inverse
    frequencies of each rope type in float64, as transformers' rope init
    functions state them (the float32 versions are distzo's, src/model/rope.cpp)."""
    i = np.arange(0, hd, 2) / hd
    plain = base ** -i
    kind = (scaling or {}).get("rope_type", "default")
    get = (scaling or {}).get
    original = get("original_max_position_embeddings")
    if kind == "default":
        return plain, None, 0, 1.0
    if kind == "linear":
        return plain / get("factor"), None, 0, 1.0
    if kind == "dynamic":
        f = get("factor")
        return (base * (f * max_positions / max_positions - (f - 1)) ** (hd / (hd - 2))) ** -i, None, 0, 1.0
    if kind == "llama3":
        f, low, high = get("factor"), get("low_freq_factor"), get("high_freq_factor")
        wavelength = 2 * np.pi / plain
        smooth = (original / wavelength - low) / (high - low)
        out = np.where(wavelength > original / low, plain / f, plain)
        medium = (wavelength >= original / high) & (wavelength <= original / low)
        return np.where(medium, (1 - smooth) * plain / f + smooth * plain, out), None, 0, 1.0
    if kind == "yarn":
        f = get("factor") or max_positions / original
        mscale = lambda s, m=1.0: 1.0 if s <= 1 else 0.1 * m * np.log(s) + 1.0  # noqa: E731
        attention = get("attention_factor") or (
            mscale(f, get("mscale")) / mscale(f, get("mscale_all_dim")) if get("mscale") and get("mscale_all_dim")
            else mscale(f))
        dim = lambda r: hd * np.log(original / (r * 2 * np.pi)) / (2 * np.log(base))  # noqa: E731
        lo, hi = dim(get("beta_fast") or 32), dim(get("beta_slow") or 1)
        if get("truncate", True):
            lo, hi = np.floor(lo), np.ceil(hi)
        lo, hi = max(lo, 0), min(hi, hd - 1)
        ramp = np.clip((np.arange(hd // 2) - lo) / ((hi - lo) or 0.001), 0, 1)
        return plain / f * ramp + plain * (1 - ramp), None, 0, attention
    assert kind == "longrope", kind
    f = get("factor") or max_positions / original
    attention = get("attention_factor") or (1.0 if f <= 1 else np.sqrt(1 + np.log(f) / np.log(original)))
    return (plain / np.array(get("short_factor")), plain / np.array(get("long_factor")), original, attention)


def _rope_angles(mask, frequencies):
    """(B, 1, T, hd/2) rotary angles p * inv_freq_i at llama_positions, each
    row with its set of _rope_frequencies (LongRoPE's long one past its
    original context), and the attention factor."""
    short, long, long_from, attention = frequencies
    p = llama_positions(mask)
    rows = [long if long is not None and p[b].max() + 1 > long_from else short for b in range(len(p))]
    return p[:, None, :, None] * np.stack(rows)[:, None, None, :], attention


def _rotate_half(x, angle):
    """x (B, heads, T, hd) rotated by `angle` (with its attention factor):
    channel i pairs with i + hd/2 (transformers' rotate_half), not with its
    neighbour."""
    angle, factor = angle
    hd = x.shape[-1]
    cos, sin = np.cos(angle) * factor, np.sin(angle) * factor
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def _allowed(mask, window=0):
    """(B, Tq, Tk): causal key-padding visibility, within `window` keys (0: all)."""
    T = mask.shape[1]
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    causal = (j <= i) & ((i - j < window) if window else True)
    return causal[None] & (mask[:, None, :] == 1) & (mask[:, :, None] == 1)


def numpy_llama_forward(cfg, t, input_ids, mask):
    """LlamaForCausalLM as docs/formats.md describes it: RMSNorm, rotary
    embeddings at llama_positions (channel i pairs with i + hd/2), grouped-query
    attention (query head h reads key/value head h // (H / KV)), SwiGLU MLP
    down(silu(gate(x)) * up(x)), final RMSNorm, lm_head or the tied embedding;
    Llama's kin: Qwen2's q/k/v biases (cfg.qkv_bias), Qwen3's RMSNorm of each
    q and k head before the rotation (cfg.qk_norm), the sliding windows of
    Mistral and Phi-3 (every layer) and of Qwen with use_sliding_window (from
    max_window_layers on), OLMo 2's norms after the sub-layers and its q/k
    norms over the whole projection; rotary scaling (rope_scaling)."""
    B, T = input_ids.shape
    nh, nkv, hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    g = {k: v.astype(np.float64) for k, v in t.items()}

    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg.rms_norm_eps) * w

    def lin(v, name, bias):
        out = v @ g[name + ".weight"].T
        return out + g[name + ".bias"] if bias else out

    angle = _rope_angles(mask, _rope_frequencies(cfg.rope_scaling, cfg.rope_theta, hd, cfg.max_position_embeddings))

    def rope(x):
        return _rotate_half(x, angle)

    def heads(x, n):
        return x.reshape(B, T, n, hd).transpose(0, 2, 1, 3)

    x = g["model.embed_tokens.weight"][input_ids]
    hidden = [x]
    window = getattr(cfg, "sliding_window", 0)
    first_windowed = getattr(cfg, "max_window_layers", 0)  # Qwen; 0 for Mistral and Phi-3
    after = cfg.norms_after_sublayers  # OLMo 2

    def head_norm(x, name):  # Qwen3: over each head's hd channels
        return rms(x, g[name]) if cfg.qk_norm and not cfg.qk_norm_full_width else x

    def full_norm(x, name):  # OLMo 2: over the whole projection
        return rms(x, g[name]) if cfg.qk_norm_full_width else x

    for k in range(cfg.num_hidden_layers):
        p = f"model.layers.{k}."
        allowed = _allowed(mask, window if k >= first_windowed else 0)
        h = x if after else rms(x, g[p + "input_layernorm.weight"])
        q = heads(full_norm(lin(h, p + "self_attn.q_proj", cfg.qkv_bias), p + "self_attn.q_norm.weight"), nh)
        kk = heads(full_norm(lin(h, p + "self_attn.k_proj", cfg.qkv_bias), p + "self_attn.k_norm.weight"), nkv)
        q = rope(head_norm(q, p + "self_attn.q_norm.weight")) * hd**-0.5
        kk = rope(head_norm(kk, p + "self_attn.k_norm.weight"))
        v = heads(lin(h, p + "self_attn.v_proj", cfg.qkv_bias), nkv)
        group = nh // nkv
        kk, v = np.repeat(kk, group, axis=1), np.repeat(v, group, axis=1)  # head h -> kv head h // group
        a = _attend(q, kk, v, allowed).transpose(0, 2, 1, 3).reshape(B, T, nh * hd)
        o = lin(a, p + "self_attn.o_proj", cfg.attention_bias)
        x = x + (rms(o, g[p + "post_attention_layernorm.weight"]) if after else o)
        h = x if after else rms(x, g[p + "post_attention_layernorm.weight"])
        gate = lin(h, p + "mlp.gate_proj", cfg.mlp_bias)
        m = lin(gate / (1 + np.exp(-gate)) * lin(h, p + "mlp.up_proj", cfg.mlp_bias), p + "mlp.down_proj", cfg.mlp_bias)
        x = x + (rms(m, g[p + "post_feedforward_layernorm.weight"]) if after else m)
        hidden.append(x)
    layer_last = x
    x = rms(x, g["model.norm.weight"])
    hidden[-1] = x
    head = g["model.embed_tokens.weight"] if cfg.tie_word_embeddings else g["lm_head.weight"]
    return x @ head.T, hidden, layer_last


def numpy_gemma3_forward(cfg, t, input_ids, mask):
    """Gemma3ForCausalLM as docs/formats.md describes it: embeddings
    embed_tokens[ids] * float32(sqrt(C)); per layer
    h += post_attention_layernorm(o_proj(attention(input_layernorm(h)))) and
    h += post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h))), every
    RMSNorm x / sqrt(mean(x²) + eps) * (1 + w); q and k RMS-normalised per
    head (q_norm, k_norm) and then rotated as Llama's, with base rope_theta in
    the full-attention layers ((k + 1) % sliding_window_pattern == 0) and
    rope_local_base_freq in the others; scores scaled by
    query_pre_attn_scalar^-1/2; grouped-query attention; the GeGLU MLP
    down(gelu_tanh(gate(x)) * up(x)); the final norm; the head embed_tokens
    (unscaled) when tied, else lm_head. The sliding layers see the last
    sliding_window keys."""
    B, T = input_ids.shape
    nh, nkv, hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    g = {k: v.astype(np.float64) for k, v in t.items()}

    def rms(x, w):  # Gemma's: scales by 1 + w
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg.rms_norm_eps) * (1.0 + w)

    def lin(v, name):
        return v @ g[name + ".weight"].T

    def heads(x, n):
        return x.reshape(B, T, n, hd).transpose(0, 2, 1, 3)

    def gelu_tanh(x):  # transformers' gelu_pytorch_tanh
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))

    angles = {full: _rope_angles(mask, _rope_frequencies(None, base, hd, cfg.max_position_embeddings))
              for full, base in ((True, cfg.rope_theta), (False, cfg.rope_local_base_freq))}
    # the float32 factor of transformers' embed_scale buffer
    x = g["model.embed_tokens.weight"][input_ids] * float(np.float32(np.sqrt(cfg.hidden_size)))
    hidden = [x]
    group = nh // nkv
    for k in range(cfg.num_hidden_layers):
        p = f"model.layers.{k}."
        angle = angles[cfg.is_full_attention(k)]
        allowed = _allowed(mask, 0 if cfg.is_full_attention(k) else cfg.sliding_window)
        h = rms(x, g[p + "input_layernorm.weight"])
        q = heads(lin(h, p + "self_attn.q_proj"), nh)
        kk = heads(lin(h, p + "self_attn.k_proj"), nkv)
        v = heads(lin(h, p + "self_attn.v_proj"), nkv)
        q = _rotate_half(rms(q, g[p + "self_attn.q_norm.weight"]), angle) * cfg.query_pre_attn_scalar**-0.5
        kk = _rotate_half(rms(kk, g[p + "self_attn.k_norm.weight"]), angle)
        kk, v = np.repeat(kk, group, axis=1), np.repeat(v, group, axis=1)  # head h -> kv head h // group
        a = _attend(q, kk, v, allowed).transpose(0, 2, 1, 3).reshape(B, T, nh * hd)
        x = x + rms(lin(a, p + "self_attn.o_proj"), g[p + "post_attention_layernorm.weight"])
        h = rms(x, g[p + "pre_feedforward_layernorm.weight"])
        m = lin(gelu_tanh(lin(h, p + "mlp.gate_proj")) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
        x = x + rms(m, g[p + "post_feedforward_layernorm.weight"])
        hidden.append(x)
    layer_last = x
    x = rms(x, g["model.norm.weight"])
    hidden[-1] = x
    head = g["model.embed_tokens.weight"] if cfg.tie_word_embeddings else g["lm_head.weight"]
    return x @ head.T, hidden, layer_last


def test_fixtures_against_numpy():
    refs = sorted(glob.glob(os.path.join(DATA, "*.ref.h5")))
    assert refs, f"no fixtures in {DATA}"
    for ref_path in refs:
        with h5py.File(ref_path, "r") as f:
            r = {k: f[k][()] for k in f}
            model_file = formats.read_string_attr(f.attrs, "model")
        cfg, t = formats.read_model(os.path.join(DATA, model_file))
        if isinstance(cfg, formats.Gemma3Config):
            forward = numpy_gemma3_forward
        elif isinstance(cfg, formats.LlamaConfig):
            forward = numpy_llama_forward
        else:
            forward = numpy_forward
        logits, hidden, layer_last = forward(cfg, t, r["input_ids"], r["attention_mask"])
        real = r["attention_mask"] == 1
        if not isinstance(cfg, formats.OptConfig):
            assert np.array_equal(r["position_ids"], llama_positions(r["attention_mask"])), ref_path
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


def test_mezo_reference_llama():
    """The PyTorch MeZO reference on the Llama and Gemma 3 fixtures:
    load_model_h5 gives the fixture's logits and loss (positions from the
    mask), the classification loss of mezo_finetune gives cls_logits, a
    MeZO step runs and restores, and keep_z changes no bit of a step."""
    quiet_transformers()
    import torch

    from distzo_tools.references import mezo_finetune
    from distzo_tools.references import mezo_reference

    for model_path in sorted(glob.glob(os.path.join(DATA, "llama_*.model.h5"))
                             + glob.glob(os.path.join(DATA, "gemma3_*.model.h5"))):
        with h5py.File(model_path.replace(".model.h5", ".ref.h5"), "r") as f:
            r = {k: f[k][()] for k in f}
        model = mezo_reference.load_model_h5(model_path, attn_implementation="eager")
        real = r["attention_mask"] == 1
        inputs = mezo_reference.causal_lm_inputs(r["input_ids"], r["attention_mask"], r["labels"].astype(np.int64))
        with torch.no_grad():
            out = model(**mezo_reference.with_positions(model, inputs))
        err = np.abs(out.logits.numpy() - r["logits"])[real].max()
        assert err < 1e-5, (model_path, err)
        assert abs(float(out.loss) - r["lm_loss"]) < 1e-6 * r["lm_loss"], model_path
        batch = {
            "input_ids": torch.from_numpy(r["input_ids"]).long(),
            "attention_mask": torch.from_numpy(r["attention_mask"]).long(),
            "lengths": torch.from_numpy(r["cls_position"]).long() + 1,
        }
        right = r["attention_mask"][:, 0] == 1  # mezo_finetune's data is right-padded
        with torch.no_grad():
            cl = mezo_finetune.candidate_logits(model, batch, torch.from_numpy(r["candidates"]).long()).numpy()
        assert np.abs(cl - r["cls_logits"])[right].max() < 1e-5, model_path
        before = {n: p.clone() for n, p in model.named_parameters()}
        step = mezo_reference.mezo_step(model, inputs, seed=7, eps=1e-3, lr=0.0)
        assert np.isfinite([step.loss_plus, step.loss_minus]).all() and step.loss_plus != step.loss_minus
        for n, p in model.named_parameters():  # lr 0: θ is restored up to the rounding of ±εz
            assert torch.allclose(p, before[n], atol=1e-6), n
        # keep_z (z drawn once a step) gives MeZO's redrawn-z step bit for bit, weight decay included
        kept = copy.deepcopy(model)
        redrawn = mezo_reference.mezo_step(model, inputs, seed=11, eps=1e-3, lr=1e-3, wd=0.1)
        r = mezo_reference.mezo_step(kept, inputs, seed=11, eps=1e-3, lr=1e-3, wd=0.1, keep_z=True)
        assert (r.loss_plus, r.loss_minus) == (redrawn.loss_plus, redrawn.loss_minus), model_path
        for (n, p), (_, q) in zip(model.named_parameters(), kept.named_parameters()):
            assert torch.equal(p, q), n
        assert not mezo_reference.uses_weight_decay("model.norm.weight")
        assert not mezo_reference.uses_weight_decay("model.layers.0.post_attention_layernorm.weight")
        assert mezo_reference.uses_weight_decay("model.layers.0.mlp.up_proj.weight")
        print(f"  {os.path.basename(model_path)}: load_model_h5 logits within {err:.1e} of the fixture")
    print("MeZO reference on Llama and Gemma 3: OK")


def _finetune_outputs(deck, out, *extra):
    """mezo_finetune on `deck` into `out` (checkpoints every 2 steps, θ saved): its eval.csv text, its
    metrics.csv rows but step_seconds, and θ by tensor name."""
    from distzo_tools.references import mezo_finetune

    model = os.path.join(out, "model.h5")
    assert mezo_finetune.main([deck, "--out", out, "--checkpoint-interval", "2", "--save", model,
                               "--log-interval", "100", *extra]) == 0
    with open(os.path.join(out, "eval.csv"), encoding="utf-8") as fh:
        ev = fh.read()
    with open(os.path.join(out, "metrics.csv"), encoding="utf-8") as fh:
        met = [line.rsplit(",", 1)[0] for line in fh]  # all but step_seconds
    with h5py.File(model, "r") as f:
        theta = {k: f[k][()] for k in formats.expected_tensors(formats.read_model(model)[0])}
    return ev, met, theta


def test_mezo_finetune_resume():
    """tools/mezo_finetune.py cut off after a checkpoint (a stray row past it)
    and resumed, in place or into another directory, and extended to more
    steps (constant lr), ends with the straight run's CSVs and θ, bit for bit;
    other settings are refused."""
    quiet_transformers()
    import yaml

    from distzo_tools.references import mezo_finetune

    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(5)
        for split, n in (("train", 12), ("dev", 6)):
            lengths = rng.integers(3, 9, n)
            ids = rng.integers(4, 96, (n, 8)) * (np.arange(8)[None, :] < lengths[:, None])
            with h5py.File(os.path.join(tmp, f"{split}.h5"), "w") as f:
                f.attrs["task"] = "classification"
                f["input_ids"], f["lengths"] = ids.astype(np.int32), lengths.astype(np.int32)
                f["labels"], f["candidates"] = (np.arange(n) % 2).astype(np.int32), np.array([5, 7], np.int32)
        deck = os.path.join(tmp, "deck.yaml")
        with open(deck, "w", encoding="utf-8") as fh:
            yaml.safe_dump({"model": {"path": os.path.join(DATA, "opt_tiny_preln.model.h5")},
                            "data": {"train": os.path.join(tmp, "train.h5"), "eval": os.path.join(tmp, "dev.h5"),
                                     "micro_batch": 4, "shuffle_seed": 1},
                            "optim": {"steps": 7, "lr": 1e-2, "eps": 1e-3, "seed": 3},
                            "eval": {"interval": 2}}, fh)

        def run(out, *extra):
            return _finetune_outputs(deck, out, *extra)

        straight = run(os.path.join(tmp, "straight"))
        assert straight[0].count("\n") == 1 + 1 + 3 + 1  # header, step 0, 2 4 6, end 7

        cut = os.path.join(tmp, "cut")  # 4 steps, then a row past its checkpoint, as if cut at step 5
        run(cut, "--set", "optim.steps=4")
        with open(os.path.join(cut, "metrics.csv"), "a", encoding="utf-8") as fh:
            fh.write("5,0.1,0.1,0.1,0,0.01,1\n")
        other = os.path.join(tmp, "other")  # another directory carries on from cut's checkpoint
        for resumed in (run(other, "--resume-from", os.path.join(cut, mezo_finetune.CHECKPOINT)),
                        run(cut, "--resume")):  # constant lr: extended to 7 steps from step 4
            assert resumed[:2] == straight[:2], "the resumed CSVs differ from the straight run's"
            for k, v in straight[2].items():
                assert np.array_equal(v, resumed[2][k]), k
        assert run(cut, "--resume")[:2] == straight[:2]  # at the end already: nothing made again

        for extra, why in ((["--set", "optim.lr=0.02"], "lr 0.01 there, 0.02 here"),
                           (["--threads", "1"], "threads 2 there, 1 here"),
                           (["--set", "optim.steps=6"], "past optim.steps 6")):
            try:
                mezo_finetune.main([deck, "--out", cut, "--resume", *extra])
                raise AssertionError(f"a resume with {extra} was accepted")
            except SystemExit as e:
                assert why in str(e), e
        lin = os.path.join(tmp, "linear")
        mezo_finetune.main([deck, "--out", lin, "--checkpoint-interval", "2", "--set", "optim.schedule=linear",
                            "--set", "optim.steps=4"])
        try:
            mezo_finetune.main([deck, "--out", lin, "--resume", "--set", "optim.schedule=linear"])
            raise AssertionError("a linear schedule extended to more steps was accepted")
        except SystemExit as e:
            assert "whose lr depends on the total" in str(e), e
    print("mezo_finetune: cut and resumed, extended, refusals: OK")


def _one_sided_deck(path, out=None, eval_examples=0, **optim):
    """A deck on the demo model and data (absolute paths): one_sided, FZOO's
    rademacher z; evaluations of the first eval_examples of dev.h5 every 2
    steps if eval_examples > 0."""
    import yaml

    demo = os.path.join(REPO, "inputs", "demo")
    deck = {"model": {"path": os.path.join(demo, "model.h5")},
            "data": {"train": os.path.join(demo, "train.h5"), "micro_batch": 16, "shuffle_seed": 1},
            "optim": {"steps": 1, "lr": 1e-4, "eps": 1e-3, "seed": 1, "estimator": "one_sided",
                      "queries": 4, "distribution": "rademacher", **optim},
            "output": {"dir": out or os.path.join(os.path.dirname(path), "distzo-out")}}
    if eval_examples:
        deck["data"]["eval"] = os.path.join(demo, "dev.h5")
        deck["eval"] = {"interval": 2, "max_examples": eval_examples}
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(deck, fh)
    return path


def _metrics(path):
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_one_sided_step():
    """mezo_reference.one_sided_step (FZOO) on the tiny OPT fixture: rademacher z
    is ±1; the update is θ − lr·(Σ_i g_i u_i / N + wd·θ) from θ as the N round
    trips left it, g_i = (L_i − L0)/σ; keep_z changes no bit; σ = 0 skips the
    update."""
    quiet_transformers()
    import math

    import torch

    from distzo_tools.references import mezo_reference as mr

    torch.set_num_threads(1)
    model = mr.load_model_h5(os.path.join(DATA, "opt_tiny_preln.model.h5"), attn_implementation="eager")
    params = mr.trainable_parameters(model)
    inputs = mr.causal_lm_inputs(torch.from_numpy(mr.fixed_tokens(2, 8, model.config.vocab_size)))
    seeds = [mr.direction_seed(3, 0, i) for i in range(3)]
    assert len(set(seeds + [mr.direction_seed(3, 1, i) for i in range(3)])) == 6
    for z in mr.draw_z(params, seeds[0], "rademacher"):
        assert z.dtype == torch.float32 and bool(((z == 1) | (z == -1)).all())

    lr, wd, eps = 1e-2, 0.1, 1e-3
    restored = copy.deepcopy(model)  # lr 0: θ after the N round trips, no update
    r0 = mr.one_sided_step(restored, inputs, seeds, eps, 0.0, params=mr.trainable_parameters(restored))
    r = mr.one_sided_step(model, inputs, seeds, eps, lr, wd, params=params)
    assert (r.loss, r.losses) == (r0.loss, r0.losses) and r.updated
    mean = sum(r.losses) / 3
    sigma = math.sqrt(sum((x - mean) ** 2 for x in r.losses) / 3)
    assert r.spread == sigma > 0 and r.loss_minus is None
    assert r.g == [(x - r.loss) / sigma for x in r.losses]
    assert r.loss_plus == mean and r.projected_grad == sum(r.g) / 3
    zs = [list(mr.draw_z(params, s, "rademacher")) for s in seeds]
    for k, ((name, p), (_, q)) in enumerate(zip(params, mr.trainable_parameters(restored))):
        step = sum(r.g[i] / 3 * zs[i][k].double() for i in range(3))
        if mr.uses_weight_decay(name):
            step = step + wd * q.double()
        assert torch.allclose(p.double(), q.double() - lr * step, rtol=0, atol=1e-6), name

    kept = copy.deepcopy(restored)  # keep_z: the same bits, gaussian z too
    for dist in ("rademacher", "gaussian"):
        a = mr.one_sided_step(restored, inputs, seeds, eps, lr, wd, distribution=dist)
        b = mr.one_sided_step(kept, inputs, seeds, eps, lr, wd, distribution=dist, keep_z=True)
        assert (a.loss, a.losses) == (b.loss, b.losses), dist
        for (n, p), (_, q) in zip(restored.named_parameters(), kept.named_parameters()):
            assert torch.equal(p, q), (dist, n)

    before = {n: p.clone() for n, p in kept.named_parameters()}  # σ = 0: no update
    flat = mr.one_sided_step(kept, inputs, seeds, eps, lr, wd, loss_fn=lambda m, b: 1.0)
    assert flat.spread == 0 and not flat.updated and all(math.isnan(g) for g in flat.g)
    for n, p in kept.named_parameters():  # only the rounding of the ±εu round trips
        assert torch.allclose(p, before[n], rtol=0, atol=1e-6), n
    print("one_sided_step: update, keep_z, σ = 0: OK")


def test_one_sided_loss_matches_distzo():
    """One one_sided step of the demo deck: the reference's L0 (metrics.csv
    `loss`) is distzo's step-1 `loss`: L(θ) does not depend on z, and both see
    distzo's first micro-batch (needs a built distzo: $DISTZO, default
    build/distzo; skipped without one)."""
    quiet_transformers()
    from distzo_tools.references import mezo_finetune

    distzo = os.environ.get("DISTZO", os.path.join(REPO, "build", "distzo"))
    if not os.path.exists(distzo):
        pytest.skip(f"no distzo binary at {distzo}: build it or set DISTZO")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        for queries, dist in ((4, "rademacher"), (2, "gaussian")):
            out = os.path.join(tmp, f"distzo-{dist}")
            deck = _one_sided_deck(os.path.join(tmp, f"{dist}.yaml"), out, queries=queries, distribution=dist)
            proc = subprocess.run([distzo, "run", deck], capture_output=True, text=True, env=env)
            assert proc.returncode == 0, proc.stderr[-2000:]
            theirs = _metrics(os.path.join(out, "metrics.csv"))[0]
            ref = os.path.join(tmp, f"ref-{dist}")
            assert mezo_finetune.main([deck, "--out", ref, "--threads", "1", "--log-interval", "100"]) == 0
            ours = _metrics(os.path.join(ref, "metrics.csv"))[0]
            assert ours["step"] == theirs["step"] == "1"
            assert ours["loss_minus"] == theirs["loss_minus"] == ""
            a, b = float(ours["loss"]), float(theirs["loss"])
            assert abs(a - b) <= 1e-6 * b, (dist, a, b)  # measured: 8e-8 relative
            print(f"  {dist}, N = {queries}: step-1 L(θ) reference {a:.9g}, distzo {b:.9g}")
    print("one_sided step-1 loss == distzo's: OK")


def test_one_sided_finetune_resume():
    """mezo_finetune with optim.estimator one_sided (FZOO) on the demo model:
    finite, --keep-z changes no bit, and a run cut after a checkpoint and
    resumed ends with the straight run's CSVs and θ, bit for bit; what is not
    implemented is refused."""
    quiet_transformers()
    from distzo_tools.references import mezo_finetune

    with tempfile.TemporaryDirectory() as tmp:
        deck = _one_sided_deck(os.path.join(tmp, "deck.yaml"), eval_examples=32, steps=5, lr=1e-3,
                               weight_decay=0.01)

        def run(out, *extra):
            return _finetune_outputs(deck, out, "--threads", "1", *extra)

        straight = run(os.path.join(tmp, "straight"))
        rows = _metrics(os.path.join(tmp, "straight", "metrics.csv"))
        assert len(rows) == 5 and all(r["loss_minus"] == "" for r in rows)
        assert np.isfinite([[float(r[k]) for k in ("loss", "loss_plus", "g")] for r in rows]).all()
        assert straight[0].count("\n") == 1 + 1 + 2 + 1  # header, step 0, 2 4, end 5

        cut = os.path.join(tmp, "cut")
        run(cut, "--set", "optim.steps=4")  # constant lr: extended to 5 below
        with open(os.path.join(cut, "metrics.csv"), "a", encoding="utf-8") as fh:
            fh.write("5,0.1,0.1,,0,0.001,1\n")  # as if cut off after a row past the checkpoint
        for other in (run(os.path.join(tmp, "kept"), "--keep-z"), run(cut, "--resume")):
            assert other[:2] == straight[:2], "the CSVs differ from the straight run's"
            for k, v in straight[2].items():
                assert np.array_equal(v, other[2][k]), k
        for extra, why in ((["--set", "optim.distribution=gaussian"], "distribution 'rademacher' there"),
                           (["--set", "optim.estimator=spsa", "--set", "optim.queries=1",
                             "--set", "optim.distribution=gaussian"], "estimator 'one_sided' there")):
            try:
                mezo_finetune.main([deck, "--out", cut, "--threads", "1", "--resume", *extra])
                raise AssertionError(f"a resume with {extra} was accepted")
            except SystemExit as e:
                assert why in str(e), e
        for extra, why in ((["optim.queries=1"], "needs optim.queries >= 2"),
                           (["optim.distribution=uniform"], "optim.distribution 'uniform'"),
                           (["optim.estimator=spsa"], "only optim.queries = 1 with the gaussian"),
                           (["optim.estimator=adam"], "optim.estimator 'adam'")):
            try:
                mezo_finetune.read_deck(deck, extra)
                raise AssertionError(f"{extra} was accepted")
            except SystemExit as e:
                assert why in str(e), e
    print("mezo_finetune one_sided: finite, keep_z, cut and resumed, refusals: OK")
