#!/usr/bin/env python3
"""Convert a local Hugging Face OPT or Llama checkpoint to a distzo model file, and back.

    python tools/hf_to_h5.py HF_DIR OUT.h5            # Hugging Face -> distzo
    python tools/hf_to_h5.py MODEL.h5 --to-hf OUT_DIR  # distzo -> Hugging Face

HF_DIR holds config.json and the weights in one of: model.safetensors,
model.safetensors.index.json (+ shards), pytorch_model.bin,
pytorch_model.bin.index.json (+ shards). Safetensors are preferred when both
exist. Nothing is downloaded. The way back also accepts a distzo checkpoint
(its parameters become the model; optimizer/run state is dropped) and writes
config.json + model.safetensors, which transformers' OPTForCausalLM or
LlamaForCausalLM loads.

config.json's model_type picks the architecture: "opt" (OPTForCausalLM) or
"llama" (LlamaForCausalLM); any other is an error that names it.

Normalisation (docs/formats.md): `decoder.*` keys become `model.decoder.*`
(OPT); a tied `lm_head.weight` (OPT always, Llama with tie_word_embeddings) is
checked equal to embed_tokens and dropped (a different one is an error); an
untied Llama head is kept as `lm_head.weight`; tensors become float32; OPT's
position table keeps its max_position_embeddings + 2 rows; vocab_size stays as
in config.json.

Needs numpy, h5py, safetensors and torch (pytorch_model.bin and bf16 weights).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import distzo_h5  # noqa: E402
from distzo_h5 import FormatError  # noqa: E402

LM_HEAD = "lm_head.weight"
# The token embedding each architecture ties a dropped lm_head.weight to.
EMBED = {"opt": "model.decoder.embed_tokens.weight", "llama": "model.embed_tokens.weight"}

# Files that may hold the weights, in order of preference.
WEIGHT_FILES = (
    ("model.safetensors.index.json", "safetensors", True),
    ("model.safetensors", "safetensors", False),
    ("pytorch_model.bin.index.json", "bin", True),
    ("pytorch_model.bin", "bin", False),
)


def canonical_name(key: str) -> str:
    """HF state-dict key -> distzo name (OPT's `decoder.*` -> `model.decoder.*`;
    Llama keys never start with `decoder.`)."""
    if key.startswith("decoder."):
        return "model." + key
    return key


def _to_numpy(tensor) -> np.ndarray:
    """torch.Tensor or ndarray -> float32 ndarray (bf16/fp16 upcast exactly)."""
    if isinstance(tensor, np.ndarray):
        return tensor.astype(np.float32, copy=False)
    import torch

    return tensor.detach().to(dtype=torch.float32, device="cpu").contiguous().numpy()


def _find_weights(hf_dir: str) -> tuple[str, list[str]]:
    """(kind, shard paths) of the weights in hf_dir."""
    for filename, kind, is_index in WEIGHT_FILES:
        path = os.path.join(hf_dir, filename)
        if not os.path.isfile(path):
            continue
        if not is_index:
            return kind, [path]
        with open(path) as fh:
            index = json.load(fh)
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise FormatError(f"{path}: no weight_map")
        shards = sorted(set(weight_map.values()))
        paths = [os.path.join(hf_dir, s) for s in shards]
        missing = [p for p in paths if not os.path.isfile(p)]
        if missing:
            raise FormatError(f"{path}: shard file(s) missing: {', '.join(missing)}")
        return kind, paths
    raise FormatError(
        f"{hf_dir}: no weights found (looked for {', '.join(f for f, _, _ in WEIGHT_FILES)})"
    )


def _iter_tensors(kind: str, paths: list[str]):
    """Yield (hf_key, tensor) one at a time so large models stream."""
    if kind == "safetensors":
        from safetensors import safe_open

        for path in paths:
            with safe_open(path, framework="pt") as fh:
                for key in fh.keys():
                    yield key, fh.get_tensor(key)
    else:
        import torch

        for path in paths:
            try:
                state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
            except RuntimeError:
                # legacy (pre-zip) torch.save format cannot be memory-mapped
                state = torch.load(path, map_location="cpu", weights_only=True)
            if not isinstance(state, dict):
                raise FormatError(f"{path}: not a state dict")
            for key in list(state):
                yield key, state.pop(key)
            del state


def hf_to_h5(hf_dir: str, out_path: str, verbose: bool = True) -> distzo_h5.ModelConfig:
    """Convert HF_DIR to a distzo model file at out_path (atomically)."""
    config_path = os.path.join(hf_dir, "config.json")
    if not os.path.isdir(hf_dir):
        raise FormatError(f"{hf_dir}: not a directory")
    if not os.path.isfile(config_path):
        raise FormatError(f"{hf_dir}: config.json missing")
    with open(config_path, encoding="utf-8") as fh:
        config_text = fh.read()
    cfg = distzo_h5.config_from_hf(json.loads(config_text), hf_config_json=config_text)
    kind, paths = _find_weights(hf_dir)
    expected = distzo_h5.expected_tensors(cfg)
    embed_name = EMBED[cfg.architecture]

    lm_head = None  # a head that must equal embed_tokens (tied), held until both are read
    embed = None
    seen: dict[str, str] = {}
    with distzo_h5.ModelWriter(out_path, cfg) as writer:
        for key, tensor in _iter_tensors(kind, paths):
            name = canonical_name(key)
            if name in seen:
                raise FormatError(f"tensor {name}: present twice (as {seen[name]!r} and {key!r})")
            seen[name] = key
            if name == LM_HEAD and name not in expected:
                lm_head = _to_numpy(tensor)
                continue
            if name not in expected:
                raise FormatError(
                    f"{key}: not a parameter of {cfg.hf_class} with this config "
                    f"(expected names like {next(iter(expected))})"
                )
            array = _to_numpy(tensor)
            if name == embed_name:
                embed = array
            writer.add(name, array)
        if lm_head is not None:
            if embed is None:
                raise FormatError(f"{embed_name} missing")
            if lm_head.shape != embed.shape or not np.array_equal(lm_head, embed):
                diff = (
                    f"shape {lm_head.shape} vs {embed.shape}"
                    if lm_head.shape != embed.shape
                    else f"max |difference| {float(np.max(np.abs(lm_head - embed))):.3g}"
                )
                why = (
                    "which distzo does not support (OPT ties them)"
                    if cfg.architecture == "opt"
                    else "but config.json says tie_word_embeddings true (set it false for a separate head)"
                )
                raise FormatError(f"{LM_HEAD} differs from {embed_name} ({diff}): the head is untied, {why}")
    if verbose:
        source = f"{len(paths)} {kind} file(s)"
        if LM_HEAD in expected:
            tied = "untied lm_head kept"
        elif lm_head is not None:
            tied = "lm_head checked equal to embed_tokens, dropped"
        else:
            tied = "no lm_head (tied)"
        print(
            f"wrote {out_path}: {cfg.architecture}, {len(expected)} tensors from {source}; {tied}; "
            f"L={cfg.num_hidden_layers} H={cfg.hidden_size} V={cfg.vocab_size}"
        )
    return cfg


def h5_to_hf(h5_path: str, out_dir: str, verbose: bool = True) -> None:
    """Write config.json + model.safetensors for OPTForCausalLM / LlamaForCausalLM.from_pretrained
    (a tied head is left out of the weights; transformers ties it on load)."""
    import torch
    from safetensors.torch import save_file

    cfg, tensors = distzo_h5.read_model(h5_path)
    config = distzo_h5.hf_config_dict(cfg)
    os.makedirs(out_dir, exist_ok=True)
    state = {name: torch.from_numpy(array) for name, array in tensors.items()}

    # Each file is written next to its destination and renamed into place.
    def atomic(filename, write):
        fd, tmp = tempfile.mkstemp(prefix="." + filename + ".", suffix=".tmp", dir=out_dir)
        os.close(fd)
        try:
            write(tmp)
            os.replace(tmp, os.path.join(out_dir, filename))
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def write_config(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            if cfg.hf_config_json:  # checked against the attributes above; kept verbatim
                fh.write(cfg.hf_config_json)
            else:
                json.dump(config, fh, indent=2, sort_keys=True)
                fh.write("\n")

    atomic("model.safetensors", lambda tmp: save_file(state, tmp, metadata={"format": "pt"}))
    atomic("config.json", write_config)
    if verbose:
        print(f"wrote {out_dir}/config.json and model.safetensors ({len(state)} tensors, float32)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Convert a local Hugging Face OPT or Llama checkpoint to a distzo model file (HDF5), or back.",
        epilog="Examples:\n  hf_to_h5.py ./opt-125m opt-125m.h5\n  hf_to_h5.py ckpt-1000.h5 --to-hf ./opt-125m-tuned",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("source", help="Hugging Face model directory, or a distzo .h5 with --to-hf")
    parser.add_argument("output", nargs="?", help="output .h5 file (HF -> distzo)")
    parser.add_argument("--to-hf", metavar="OUT_DIR", help="convert a distzo model/checkpoint file back to HF")
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        if args.to_hf:
            if args.output:
                parser.error("--to-hf takes the output directory; give no second positional argument")
            if not os.path.isfile(args.source):
                raise FormatError(f"{args.source}: no such file")
            h5_to_hf(args.source, args.to_hf, verbose=not args.quiet)
        else:
            if not args.output:
                parser.error("give the output .h5 path (or --to-hf OUT_DIR for the way back)")
            hf_to_h5(args.source, args.output, verbose=not args.quiet)
    except (FormatError, OSError) as err:
        print(f"hf_to_h5: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
