"""Rotary scaling as a config.json names it (transformers 5.25's
rope_parameters, or transformers 4's rope_scaling): the types distzo
implements, the keys each reads, transformers' defaults, and distzo's
refusals, as the C++ reader has them (src/io/hf_config.cpp,
src/model/rope.cpp). A scaling is kept as a dict of Hugging Face keys
without rope_theta (the base is the config's own attribute), or None for
plain RoPE. Standard library only.
"""

from __future__ import annotations

import json
import math
from typing import Mapping

from distzo_tools.formats.configs import FormatError

# The keys each rope_type reads besides rope_type / type / rope_theta.
ROPE_KEYS = {
    "default": (),
    "linear": ("factor",),
    "dynamic": ("factor",),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
    "yarn": ("factor", "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
             "mscale", "mscale_all_dim", "truncate"),
    "longrope": ("factor", "original_max_position_embeddings", "attention_factor", "short_factor",
                 "long_factor"),
}
# The types whose original context defaults to max_position_embeddings
# (transformers' standardize_rope_params).
_WITH_ORIGINAL_CONTEXT = ("llama3", "yarn", "longrope")


def rope_entry(entry, key: str, max_positions: int) -> tuple[dict | None, float | None]:
    """(scaling, rope_theta) of one rope_parameters entry named `key`: the
    scaling as a dict of its keys (None for plain RoPE) and the entry's own
    base (None when it names none). A key the type does not read is refused:
    it may change the angles."""
    if not isinstance(entry, Mapping):
        raise FormatError(f"config.json {key} is {json.dumps(entry)}: expected an object")
    rope_type = entry.get("rope_type") if entry.get("rope_type") is not None else entry.get("type")
    rope_type = "default" if rope_type is None else rope_type
    if not isinstance(rope_type, str):
        raise FormatError(f"config.json {key}.rope_type must be a string, found {json.dumps(rope_type)}")
    if rope_type not in ROPE_KEYS:
        raise FormatError(
            f"config.json {key} has rope_type {rope_type!r}: distzo implements {', '.join(ROPE_KEYS)}"
        )
    scaling: dict = {"rope_type": rope_type}
    for name, value in entry.items():
        if value is None or name in ("rope_type", "type", "rope_theta"):
            continue
        if name == "partial_rotary_factor":
            if value != 1:
                raise FormatError(
                    f"config.json {key}.partial_rotary_factor is {value}: distzo rotates every channel "
                    "of a head (partial_rotary_factor 1)"
                )
            continue
        if name not in ROPE_KEYS[rope_type]:
            raise FormatError(f"config.json {key}.{name} is set, but rope_type {rope_type!r} has no such parameter")
        scaling[name] = value
    if rope_type in _WITH_ORIGINAL_CONTEXT:
        scaling.setdefault("original_max_position_embeddings", max_positions)
    theta = entry.get("rope_theta")
    return (None if rope_type == "default" else scaling), (None if theta is None else float(theta))


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _require_positive(where: str, scaling: dict, name: str) -> None:
    if scaling.get(name) is None:
        raise FormatError(f"{where}: {name} is missing: give a positive number")
    if not _positive(scaling[name]):
        raise FormatError(f"{where}: {name} must be a positive number, got {scaling[name]}")


def validate(scaling: dict | None, head_dim: int) -> None:
    """The checks of distzo's RopeScaling::validate: what each type needs to
    give finite frequencies."""
    if scaling is None:
        return
    rope_type = scaling["rope_type"]
    where = f"rope_scaling (rope_type {rope_type})"
    if rope_type != "longrope" or "factor" in scaling:
        _require_positive(where, scaling, "factor")
    if rope_type == "dynamic" and head_dim <= 2:
        raise FormatError(f"{where}: head_dim {head_dim} is too small: dynamic scaling raises the base to dim / (dim - 2)")
    if rope_type in ("linear", "dynamic"):
        return
    original = scaling.get("original_max_position_embeddings")
    if not (isinstance(original, int) and not isinstance(original, bool) and original > 0):
        raise FormatError(f"{where}: original_max_position_embeddings must be a positive integer, got {original}")
    if rope_type == "llama3":
        for name in ("low_freq_factor", "high_freq_factor"):
            _require_positive(where, scaling, name)
        if scaling["low_freq_factor"] == scaling["high_freq_factor"]:
            raise FormatError(f"{where}: high_freq_factor and low_freq_factor are equal: the blend divides by their difference")
        return
    if "attention_factor" in scaling and not _positive(scaling["attention_factor"]):
        raise FormatError(f"{where}: attention_factor must be a positive number, got {scaling['attention_factor']}")
    if rope_type == "yarn":
        if "truncate" in scaling and not isinstance(scaling["truncate"], bool):
            raise FormatError(f"{where}: truncate must be true or false, got {scaling['truncate']!r}")
        return
    for name in ("short_factor", "long_factor"):
        values = scaling.get(name)
        if not isinstance(values, list) or len(values) != head_dim // 2 or not all(_positive(v) for v in values):
            raise FormatError(f"{where}: {name} must be a list of head_dim / 2 = {head_dim // 2} positive numbers")


def to_json(scaling: dict) -> str:
    """The model file's `rope_scaling` attribute: the entry as one line of JSON."""
    return json.dumps(scaling)


def from_json(text: str, where: str) -> dict:
    """The scaling of a `rope_scaling` attribute (to_json's text)."""
    try:
        entry = json.loads(text)
    except ValueError as err:
        raise FormatError(f"{where}: not JSON ({err})") from None
    scaling, _ = rope_entry(entry, where, 0)
    if scaling is None:
        raise FormatError(f"{where}: names plain RoPE; a file without the attribute has it")
    return scaling
