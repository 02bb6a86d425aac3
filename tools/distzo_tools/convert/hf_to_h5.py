"""Convert a local Hugging Face OPT, Llama(-like) or Gemma 3 checkpoint to a distzo model file, and back.

    python3 tools/hf_to_h5.py HF_DIR OUT.h5            # Hugging Face -> distzo
    python3 tools/hf_to_h5.py MODEL.h5 --to-hf OUT_DIR  # distzo -> Hugging Face

HF_DIR holds config.json and the weights in one of: model.safetensors,
model.safetensors.index.json (+ shards), pytorch_model.bin,
pytorch_model.bin.index.json (+ shards). Safetensors are preferred when both
exist. Nothing is downloaded. The way back also accepts a distzo checkpoint
(its parameters become the model; optimizer/run state is dropped) and writes
config.json + model.safetensors, which transformers' OPTForCausalLM,
LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, MistralForCausalLM or
Gemma3ForCausalLM loads.

config.json's model_type picks the architecture: "opt" (OPTForCausalLM),
"llama" (LlamaForCausalLM), one of Llama's kin: "qwen2", "qwen3",
"mistral", or "gemma3_text" (Gemma3ForCausalLM: Gemma 3 270M and 1B); any
other is an error that names it.

Normalisation (docs/formats.md): `decoder.*` keys become `model.decoder.*`
(OPT); a tied `lm_head.weight` (OPT always, the others with
tie_word_embeddings) is checked equal to embed_tokens and dropped (a different
one is an error); an untied head is kept as `lm_head.weight`; Gemma 3's norm
weights stay w, as Hugging Face stores them (the model scales by 1 + w);
tensors keep their dtype —
bfloat16 and float16 weights are written as bfloat16 / float16 datasets, bit
for bit, and distzo stores θ in that dtype unless the deck says otherwise —
and any other float becomes float32 (`--float32`: every tensor float32, exact);
OPT's position table keeps its max_position_embeddings + 2 rows; vocab_size
stays as in config.json. The tokenizer's text files in HF_DIR (tokenizer.json,
tokenizer_config.json, special_tokens_map.json, vocab.json, merges.txt, ...:
formats.TOKENIZER_FILES) go into the model file as they are, every
checkpoint of a run carries them, and the way back writes them next to
config.json, so AutoTokenizer.from_pretrained(OUT_DIR) works (a binary
sentencepiece tokenizer.model is not kept). Files are written with the
usual mode (0666 less the umask), readable by colleagues. The way back writes each tensor in the file's dtype
(`--float32`: float32), so a bf16 checkpoint round trips bit for bit.

Needs numpy and h5py; pytorch_model.bin also needs torch. Safetensors files
are read and written here directly (the format is a JSON header and raw
little-endian data), so bf16 weights need no torch.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import tempfile

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "h5py")

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from distzo_tools import formats  # noqa: E402
from distzo_tools.formats import FormatError  # noqa: E402

LM_HEAD = "lm_head.weight"
# The token embedding each architecture ties a dropped lm_head.weight to.
# (every architecture but OPT: model.embed_tokens.weight).
EMBED = {arch: "model.embed_tokens.weight" for arch in formats.CONFIG_TYPES}
EMBED["opt"] = "model.decoder.embed_tokens.weight"

# Files that may hold the weights, in order of preference.
WEIGHT_FILES = (
    ("model.safetensors.index.json", "safetensors", True),
    ("model.safetensors", "safetensors", False),
    ("pytorch_model.bin.index.json", "bin", True),
    ("pytorch_model.bin", "bin", False),
)


# Phi-3's fused tensors and the Llama tensors they split into, row block by
# row block (Phi3Attention: q, k, v; Phi3MLP: gate_up.chunk(2) = gate, up).
PHI3_FUSED = {
    "self_attn.qkv_proj.weight": ("self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"),
    "mlp.gate_up_proj.weight": ("mlp.gate_proj.weight", "mlp.up_proj.weight"),
}


def _rows(array, start: int, stop: int):
    """Rows [start, stop) of a float array or a Bf16Array, as its own array."""
    if isinstance(array, formats.Bf16Array):
        return formats.Bf16Array(array.words[start:stop])
    return np.ascontiguousarray(array[start:stop])


def _stacked(arrays: list):
    """The arrays' rows one after the other (all float arrays of one dtype, or all Bf16Arrays)."""
    if all(isinstance(a, formats.Bf16Array) for a in arrays):
        return formats.Bf16Array(np.concatenate([a.words for a in arrays]))
    return np.concatenate(arrays)


def split_fused(cfg, name: str, array) -> list[tuple[str, object]]:
    """Phi-3: a fused tensor as the Llama tensors distzo holds (q, k, v rows
    of qkv_proj; gate, up rows of gate_up_proj); any other tensor as itself."""
    for fused, parts in PHI3_FUSED.items():
        if isinstance(cfg, formats.Phi3Config) and name.endswith(fused):
            layer = name[: -len(fused)]
            rows = ((cfg.q_width, cfg.kv_width, cfg.kv_width) if len(parts) == 3
                    else (cfg.intermediate_size, cfg.intermediate_size))
            if array.shape[0] != sum(rows):
                raise FormatError(f"{name}: {array.shape[0]} rows, expected {' + '.join(map(str, rows))}")
            out, start = [], 0
            for part, count in zip(parts, rows):
                out.append((layer + part, _rows(array, start, start + count)))
                start += count
            return out
    return [(name, array)]


def fuse_split(cfg, tensors: dict) -> dict:
    """The way back of split_fused: Phi-3's fused tensors in the place of their parts."""
    if not isinstance(cfg, formats.Phi3Config):
        return tensors
    out = {}
    for name, array in tensors.items():
        for fused, parts in PHI3_FUSED.items():
            if name.endswith(parts[0]):
                layer = name[: -len(parts[0])]
                out[layer + fused] = _stacked([tensors[layer + p] for p in parts])
        if not any(name.endswith(p) for parts in PHI3_FUSED.values() for p in parts):
            out[name] = array
    return out


def canonical_name(key: str) -> str:
    """HF state-dict key -> distzo name (OPT's `decoder.*` -> `model.decoder.*`;
    the other architectures' keys never start with `decoder.`)."""
    if key.startswith("decoder."):
        return "model." + key
    return key


def _to_numpy(tensor, float32: bool = False):
    """A torch.Tensor, ndarray or Bf16Array as the file will hold it: float16
    and bfloat16 kept (bf16 as a formats.Bf16Array), other floats as
    float32; everything float32 (exact upcast) with float32=True."""
    if isinstance(tensor, (np.ndarray, formats.Bf16Array)):
        return formats.as_stored(tensor, float32)
    import torch

    tensor = tensor.detach().to(device="cpu").contiguous()
    if tensor.dtype == torch.bfloat16:
        return formats.as_stored(formats.Bf16Array(tensor.view(torch.int16).numpy().view(np.uint16)), float32)
    if tensor.dtype == torch.float16:
        return formats.as_stored(tensor.numpy(), float32)
    return tensor.to(dtype=torch.float32).numpy()


# safetensors (https://github.com/huggingface/safetensors): an 8-byte
# little-endian header length N, N bytes of JSON {name: {dtype, shape,
# data_offsets: [begin, end)}, "__metadata__": {str: str}} padded with spaces,
# then the tensors' little-endian bytes. Read and written here with numpy, so
# bfloat16 needs no torch.
SAFETENSORS_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "F64": np.dtype("<f8"), "BF16": np.dtype("<u2")}


def read_safetensors(path: str):
    """Yield (key, ndarray or Bf16Array) of a .safetensors file, in key order
    (memory-mapped: one tensor in memory at a time)."""
    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) != 8:
            raise FormatError(f"{path}: not a safetensors file (shorter than its header length)")
        (n,) = struct.unpack("<Q", head)
        try:
            header = json.loads(fh.read(n))
        except ValueError as err:
            raise FormatError(f"{path}: not a safetensors file (header: {err})") from None
    data_start = 8 + n
    size = os.path.getsize(path)
    for key in sorted(k for k in header if k != "__metadata__"):
        info = header[key]
        dtype = SAFETENSORS_DTYPES.get(info.get("dtype"))
        if dtype is None:
            raise FormatError(f"{path}: tensor {key}: dtype {info.get('dtype')} is not supported "
                              f"(supported: {', '.join(SAFETENSORS_DTYPES)})")
        shape = tuple(int(d) for d in info["shape"])
        begin, end = (int(x) for x in info["data_offsets"])
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != count * dtype.itemsize or data_start + end > size:
            raise FormatError(f"{path}: tensor {key}: data_offsets {begin}..{end} do not hold shape {shape}")
        array = (np.memmap(path, dtype=dtype, mode="r", offset=data_start + begin, shape=shape)
                 if count else np.zeros(shape, dtype=dtype))
        array = np.array(array)  # a copy: the file may be replaced later
        yield key, formats.Bf16Array(array) if info["dtype"] == "BF16" else array


def write_safetensors(path: str, tensors: dict, metadata: dict | None = None) -> None:
    """Write {name: float32/float16 ndarray or Bf16Array} as a .safetensors file."""
    header: dict = {"__metadata__": dict(metadata or {})}
    blobs, offset = [], 0
    for name, tensor in tensors.items():
        if isinstance(tensor, formats.Bf16Array):
            code, raw = "BF16", tensor.words.astype("<u2")
        else:
            tensor = np.asarray(tensor)
            code = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16"}.get(tensor.dtype)
            if code is None:
                raise FormatError(f"tensor {name}: dtype {tensor.dtype} cannot be written")
            raw = tensor.astype(SAFETENSORS_DTYPES[code])
        data = np.ascontiguousarray(raw).tobytes()
        header[name] = {"dtype": code, "shape": list(raw.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the Rust writer pads
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)))
        fh.write(text)
        for data in blobs:
            fh.write(data)


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
        for path in paths:
            yield from read_safetensors(path)
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


def _equal(a, b) -> bool:
    """Same shape and the same values (bit for bit for bf16 words)."""
    if isinstance(a, formats.Bf16Array) or isinstance(b, formats.Bf16Array):
        a = a.to_float32() if isinstance(a, formats.Bf16Array) else np.asarray(a, dtype=np.float32)
        b = b.to_float32() if isinstance(b, formats.Bf16Array) else np.asarray(b, dtype=np.float32)
    return a.shape == b.shape and np.array_equal(a, b)


def _as_float32(a) -> np.ndarray:
    return a.to_float32() if isinstance(a, formats.Bf16Array) else np.asarray(a, dtype=np.float32)


def hf_to_h5(hf_dir: str, out_path: str, verbose: bool = True, float32: bool = False) -> formats.ModelConfig:
    """Convert HF_DIR to a distzo model file at out_path (atomically); tensors
    keep a float16 / bfloat16 dtype unless float32."""
    config_path = os.path.join(hf_dir, "config.json")
    if not os.path.isdir(hf_dir):
        raise FormatError(f"{hf_dir}: not a directory")
    if not os.path.isfile(config_path):
        raise FormatError(f"{hf_dir}: config.json missing")
    config_text = formats.read_text(config_path)
    try:
        config = json.loads(config_text)
    except json.JSONDecodeError as err:
        raise FormatError(f"{config_path}: not JSON ({err})") from None
    cfg = formats.config_from_hf(config, hf_config_json=config_text)
    kind, paths = _find_weights(hf_dir)
    tokenizer_files = formats.read_tokenizer_dir(hf_dir)
    if not any(name in tokenizer_files for name in ("tokenizer.json", "vocab.json", "vocab.txt")):
        tokenizer_files = {}  # configs alone (a sentencepiece tokenizer.model aside) make no tokenizer
    expected = formats.expected_tensors(cfg)
    embed_name = EMBED[cfg.architecture]

    lm_head = None  # a head that must equal embed_tokens (tied), held until both are read
    embed = None
    seen: dict[str, str] = {}
    dtypes: dict[str, int] = {}
    with formats.ModelWriter(out_path, cfg, float32=float32, tokenizer_files=tokenizer_files) as writer:
        for key, tensor in _iter_tensors(kind, paths):
            name = canonical_name(key)
            if name in seen:
                raise FormatError(f"tensor {name}: present twice (as {seen[name]!r} and {key!r})")
            seen[name] = key
            if name == LM_HEAD and name not in expected:
                lm_head = _to_numpy(tensor, float32)
                continue
            for name, array in split_fused(cfg, name, _to_numpy(tensor, float32)):
                if name not in expected:
                    raise FormatError(
                        f"{key}: not a parameter of {cfg.hf_class} with this config "
                        f"(expected names like {next(iter(expected))})"
                    )
                if name == embed_name:
                    embed = array
                dtype = str(array.dtype)
                dtypes[dtype] = dtypes.get(dtype, 0) + 1
                writer.add(name, array)
        if lm_head is not None:
            if embed is None:
                raise FormatError(f"{embed_name} missing")
            if lm_head.shape != embed.shape or not _equal(lm_head, embed):
                diff = (
                    f"shape {lm_head.shape} vs {embed.shape}"
                    if lm_head.shape != embed.shape
                    else f"max |difference| {float(np.max(np.abs(_as_float32(lm_head) - _as_float32(embed)))):.3g}"
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
        kinds = ", ".join(f"{n} {d}" for d, n in sorted(dtypes.items()))
        print(
            f"wrote {out_path}: {cfg.architecture}, {len(expected)} tensors ({kinds}) from {source}; {tied}; "
            f"L={cfg.num_hidden_layers} H={cfg.hidden_size} V={cfg.vocab_size}"
        )
        print(_describe_tokenizer(tokenizer_files, hf_dir))
    return cfg


def _describe_tokenizer(files: dict[str, str], hf_dir: str) -> str:
    if files:
        size = sum(len(text.encode("utf-8")) for text in files.values())
        return f"kept the tokenizer for the way back: {', '.join(sorted(files))} ({size / 1024:.1f} KiB)"
    binary = (" (a sentencepiece tokenizer.model is binary and not kept; without a tokenizer.json its "
              "configs alone make no tokenizer)") if os.path.isfile(os.path.join(hf_dir, "tokenizer.model")) else ""
    return (f"no tokenizer kept: {hf_dir} has no tokenizer.json, vocab.json or vocab.txt{binary}; "
            "an export will have none")


def h5_to_hf(h5_path: str, out_dir: str, verbose: bool = True, float32: bool = False) -> None:
    """Write config.json + model.safetensors for the file's class (OPTForCausalLM,
    LlamaForCausalLM, ..., Gemma3ForCausalLM).from_pretrained (a tied head is
    left out of the weights; transformers ties it on load). Each
    tensor keeps the file's dtype (float32, float16, bfloat16) unless float32."""
    cfg, tensors = formats.read_model(h5_path, keep_dtype=not float32)
    with h5py.File(h5_path, "r") as f:
        tokenizer_files = formats.read_tokenizer_files(f)
    config = formats.hf_config_dict(cfg)
    # Files of another model left in out_dir would be loaded with this one
    # (a stale special_tokens_map.json, chat template or weight shard).
    if os.path.isdir(out_dir):
        writes = {"config.json", "model.safetensors", *tokenizer_files}
        known = set(formats.TOKENIZER_FILES) | {f for f, _, _ in WEIGHT_FILES} | {
            "tokenizer.model", "generation_config.json"}
        stale = sorted(n for n in os.listdir(out_dir)
                       if n not in writes and (n in known or n.endswith((".safetensors", ".bin"))))
        if stale:
            raise FormatError(f"{out_dir} already holds {', '.join(stale)}, which this export would not replace: "
                              "transformers would load them with it; export into an empty directory")
    os.makedirs(out_dir, exist_ok=True)
    state = fuse_split(cfg, tensors)

    # Each file is written next to its destination and renamed into place.
    def atomic(filename, write):
        fd, tmp = tempfile.mkstemp(prefix="." + filename + ".", suffix=".tmp", dir=out_dir)
        os.close(fd)
        try:
            write(tmp)
            formats.give_usual_permissions(tmp)
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

    def write_text(text):
        def write(tmp):
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
        return write

    atomic("model.safetensors", lambda tmp: write_safetensors(tmp, state, metadata={"format": "pt"}))
    atomic("config.json", write_config)
    for name, text in sorted(tokenizer_files.items()):
        atomic(name, write_text(text))
    if verbose:
        kinds = sorted({str(t.dtype) for t in state.values()})
        print(f"wrote {out_dir}/config.json and model.safetensors ({len(state)} tensors, {', '.join(kinds)})")
        if tokenizer_files:
            print(f"wrote the tokenizer the import kept: {', '.join(sorted(tokenizer_files))}")
        else:
            print(f"{h5_path} carries no tokenizer (imported without one, or before distzo kept them): "
                  f"copy the model's tokenizer files into {out_dir} for AutoTokenizer")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Convert a local Hugging Face OPT, Llama, Qwen2, Qwen3, Mistral or Gemma 3 (gemma3_text) "
        "checkpoint to a distzo model file (HDF5), or back.",
        epilog="Examples:\n  hf_to_h5.py ./opt-125m opt-125m.h5\n  hf_to_h5.py ckpt-1000.h5 --to-hf ./opt-125m-tuned",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("source", help="Hugging Face model directory, or a distzo .h5 with --to-hf")
    parser.add_argument("output", nargs="?", help="output .h5 file (HF -> distzo)")
    parser.add_argument("--to-hf", metavar="OUT_DIR", help="convert a distzo model/checkpoint file back to HF")
    parser.add_argument("--float32", action="store_true",
                        help="write every tensor as float32 (default: float16 and bfloat16 tensors keep their dtype)")
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        if args.to_hf:
            if args.output:
                parser.error("--to-hf takes the output directory; give no second positional argument")
            if not os.path.isfile(args.source):
                raise FormatError(f"{args.source}: no such file")
            h5_to_hf(args.source, args.to_hf, verbose=not args.quiet, float32=args.float32)
        else:
            if not args.output:
                parser.error("give the output .h5 path (or --to-hf OUT_DIR for the way back)")
            found = [kind for name, kind, _ in WEIGHT_FILES if os.path.isfile(os.path.join(args.source, name))]
            if found[:1] == ["bin"]:  # what _find_weights takes: pytorch_model.bin, a torch pickle
                requires.check(__file__, "torch")
            hf_to_h5(args.source, args.output, verbose=not args.quiet, float32=args.float32)
    except (FormatError, OSError) as err:
        print(f"hf_to_h5: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
