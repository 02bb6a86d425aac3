"""The parameter digest of distzo (version 3), in Python.

The reference for docs/formats.md ("Parameter digest") and src/core/digest.hpp:

    element_sum(values, first=0, dtype="fp32")
                                        S of one tensor (an iterable of float32 bit patterns
                                        or floats; for dtype "bf16" / "fp16" its 16-bit
                                        words), standard library only
    fold(records)                       the digest of [(name, shape, S), ...] in canonical order
    file_digest(path)                   the digest of a distzo model or checkpoint file
                                        (numpy + h5py; equals `distzo inspect FILE --digest`)

    python3 tools/digest_reference.py FILE.h5 ...               # one hex digest per file
    python3 tools/digest_reference.py --check DISTZO FILE.h5 ...  # compare with `DISTZO inspect --digest`
    python3 tools/digest_reference.py --known-answers           # the values tests/test_digest.cpp pins

The definition and --known-answers use the standard library only; reading a
file needs numpy and h5py (tools/README.md).
"""

from __future__ import annotations

import argparse
import struct
import subprocess
import sys

from distzo_tools import requires  # standard library only, as this file

VERSION = 3
# The first word folded: 2, version 2's number, kept by version 3 (which
# digests float32 tensors exactly as version 2 did).
FIRST_WORD = 2
# The format tag of a 2-byte element's word (bits 32 and up); float32 has none.
FORMAT_TAG = {"fp32": 0, "bf16": 1 << 32, "fp16": 2 << 32}
MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15  # splitmix64's increment
MIX_M1, MIX_M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB  # splitmix64's output function


def mix(x: int) -> int:
    """splitmix64's output function (Stafford's Mix13), a bijection of uint64."""
    x = ((x ^ (x >> 30)) * MIX_M1) & MASK
    x = ((x ^ (x >> 27)) * MIX_M2) & MASK
    return x ^ (x >> 31)


def element_term(index: int, bits: int) -> int:
    """mix(key(i) XOR bits) with key(i) = mix((i + 1) * GAMMA)."""
    return mix(mix(((index + 1) * GAMMA) & MASK) ^ bits)


def float_bits(value) -> int:
    """The 32 bits of a float32 (an int is taken as the bits themselves)."""
    if isinstance(value, int):
        return value & 0xFFFFFFFF
    return struct.unpack("<I", struct.pack("<f", value))[0]


def element_sum(values, first: int = 0, dtype: str = "fp32") -> int:
    """S = sum of element_term(first + k, word(values[k])) mod 2^64: a float32's
    bits, or (dtype "bf16", "fp16") the 16-bit word with its format's tag."""
    s = 0
    tag = FORMAT_TAG[dtype]
    for k, v in enumerate(values):
        word = float_bits(v) if dtype == "fp32" else tag | (int(v) & 0xFFFF)
        s = (s + element_term(first + k, word)) & MASK
    return s


def fold(records) -> int:
    """The digest of [(name, shape, S), ...], given in canonical parameter order."""
    state = 0

    def absorb(word: int) -> None:
        nonlocal state
        state = mix(state ^ (word & MASK))

    absorb(FIRST_WORD)
    count = 0
    for name, shape, s in records:
        data = name.encode("utf-8")
        absorb(len(data))
        for b in data:
            absorb(b)
        absorb(len(shape))
        numel = 1
        for d in shape:
            absorb(d)
            numel *= d
        absorb(numel)
        absorb(s)
        count += 1
    return mix(state ^ count)


def hex_digest(value: int) -> str:
    return f"{value:016x}"


# --- files (numpy + h5py) -----------------------------------------------------


def element_sum_numpy(array, chunk: int = 1 << 22) -> int:
    """element_sum of a float32 array, a float16 array or a formats.Bf16Array
    (row-major; the 2-byte ones over their words), vectorised in chunks."""
    import numpy as np

    tag = np.uint64(0)
    if isinstance(array, _formats().Bf16Array):
        bits, tag = array.words.reshape(-1), np.uint64(FORMAT_TAG["bf16"])
    elif np.asarray(array).dtype == np.float16:
        bits, tag = np.ascontiguousarray(array).reshape(-1).view(np.uint16), np.uint64(FORMAT_TAG["fp16"])
    else:
        bits = np.ascontiguousarray(array, dtype=np.float32).reshape(-1).view(np.uint32)
    m1, m2, gamma = np.uint64(MIX_M1), np.uint64(MIX_M2), np.uint64(GAMMA)
    s30, s27, s31 = np.uint64(30), np.uint64(27), np.uint64(31)

    def mix_array(x):  # uint64 arrays wrap on overflow, as C++ does
        x = (x ^ (x >> s30)) * m1
        x = (x ^ (x >> s27)) * m2
        return x ^ (x >> s31)

    total = 0
    for start in range(0, bits.size, chunk):
        part = bits[start : start + chunk].astype(np.uint64) | tag
        index = np.arange(start + 1, start + 1 + part.size, dtype=np.uint64)  # i + 1
        terms = mix_array(mix_array(index * gamma) ^ part)
        total = (total + int(terms.sum(dtype=np.uint64))) & MASK
    return total


def _formats():
    """distzo_tools.formats, imported on demand (it needs numpy and h5py)."""
    from distzo_tools import formats

    return formats


def canonical_order(cfg) -> list[str]:
    """Tensor names in parameter-id order (src/model/parameter_registry.cpp).

    Not the order formats.expected_tensors lists (and the Python writer
    writes): there project_out follows project_in; here it is the last
    parameter, in the head group, after the final layer norm.
    """
    names = list(_formats().expected_tensors(cfg))
    out = "model.decoder.project_out.weight"
    if out in names:
        names.remove(out)
        names.append(out)
    return names


def file_digest(path) -> str:
    """The parameter digest of a distzo model or checkpoint file (over the
    tensors as stored: float32, float16 or bfloat16)."""
    cfg, tensors = _formats().read_model(path, keep_dtype=True)
    return hex_digest(
        fold((name, tensors[name].shape, element_sum_numpy(tensors[name])) for name in canonical_order(cfg))
    )


# --- known answers ------------------------------------------------------------


def known_answer_tensors():
    """The synthetic tensor set of tests/test_digest.cpp: (name, shape, float32 bits)."""
    special = [
        0x00000000,  # +0
        0x80000000,  # -0
        0x3F800000,  # 1
        0xBFC00000,  # -1.5
        0x7F800000,  # +inf
        0xFF800000,  # -inf
        0x7FC00000,  # quiet NaN
        0x7FC00001,  # another NaN payload
        0x00000001,  # smallest subnormal
        0x7F7FFFFF,  # largest finite
        0xFFFFFFFF,  # all bits set
        0x12345678,
    ]
    ramp = [float_bits((k - 100) / 64) for k in range(200)]  # exact in float32
    return [
        ("model.decoder.layers.0.fc1.weight", (3, 4), special),
        ("model.decoder.layers.0.fc1.bias", (200,), ramp),
        ("empty", (0, 5), []),
    ]


def known_answer_words() -> list[int]:
    """16-bit words for the 2-byte known answers: ±0, 1 (bf16), inf (bf16),
    a NaN (bf16), the smallest subnormal, all bits set."""
    return [0x0000, 0x8000, 0x3F80, 0x7F80, 0x7FC0, 0x0001, 0xFFFF]


def known_answers() -> str:
    lines = [
        f"mix(GAMMA) = {mix(GAMMA):#018x}  (splitmix64's first output for seed 0)",
        f"element_term(0, 0) = {element_term(0, 0):#018x}",
        f"element_term(1, 0x3f800000) = {element_term(1, 0x3F800000):#018x}",
        f"element_term(2^64 - 1, 0xffffffff) = {element_term(MASK, 0xFFFFFFFF):#018x}",
    ]
    records = []
    for name, shape, bits in known_answer_tensors():
        s = element_sum(bits)
        records.append((name, shape, s))
        lines.append(f"element_sum({name}) = {s:#018x}")
    lines.append(f"element_sum(ramp elements 50..199, first = 50) = {element_sum(known_answer_tensors()[1][2][50:], 50):#018x}")
    words = known_answer_words()
    for dtype in ("bf16", "fp16"):
        lines.append(f"element_sum({dtype} words {', '.join(f'{w:#06x}' for w in words)}) = "
                     f"{element_sum(words, 0, dtype):#018x}")
    two_byte = [("model.decoder.layers.0.fc1.weight", (3, 4), element_sum(words + [0] * 5, 0, "bf16"))]
    # digests as distzo prints them (inspect --digest, checkpoints): 16 hex digits, no 0x
    as_printed = "(16 hex digits, as distzo inspect --digest prints a digest)"
    lines.append(f"digest of fc1.weight (3, 4) in bf16, those words then five 0 = {hex_digest(fold(two_byte))}  {as_printed}")
    lines.append(f"digest = {hex_digest(fold(records))}  {as_printed}")
    lines.append(f"digest of no tensors = {hex_digest(fold([]))}  {as_printed}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="distzo model or checkpoint files")
    ap.add_argument("--check", metavar="DISTZO", help="compare with `DISTZO inspect FILE --digest`")
    ap.add_argument("--known-answers", action="store_true", help="print the values tests/test_digest.cpp pins")
    args = ap.parse_args(argv)
    if args.known_answers:
        print(known_answers())
        return 0
    if args.files:
        requires.check(__file__, "numpy", "h5py")
    bad = 0
    for path in args.files:
        mine = file_digest(path)
        if args.check:
            theirs = subprocess.run(
                [args.check, "inspect", path, "--digest"], check=True, capture_output=True, text=True
            ).stdout.strip()
            ok = mine == theirs
            bad += not ok
            print(f"{'ok' if ok else 'DIFFERS'}: {path}: python {mine}, distzo {theirs}")
        else:
            print(mine)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
