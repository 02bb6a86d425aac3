#!/usr/bin/env python3
"""The perturbation z of distzo, in Python with the standard library only.

    z(seed, step, query, param_id, element, dist="gaussian", recipe=2)

is the reference for docs/perturbation.md and src/core/perturbation.hpp,
bit for bit. Recipe 2 is binary32 arithmetic operation by operation; Python
floats are binary64, and every +, -, *, / and sqrt of two binary32 values
computed in binary64 and rounded once to binary32 is the correctly rounded
binary32 result (binary64 has at least 2*24 + 2 bits: double rounding is
innocuous), so f32(a * b) here is exactly C++'s float a * b. No fused
multiply-add appears in the recipe, so none needs emulating.

    python tools/z_reference.py --write-kat tests/data/z_recipe2.kat
    python tools/z_reference.py --check-kat tests/data/z_recipe2.kat

write or check the known answers that tests/test_perturbation.cpp reads.
"""

from __future__ import annotations

import argparse
import math
import struct
import sys

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF
KEY_TAG, BLOCK_TAG = 0x5A4B4559, 0x5A56414C  # "ZKEY", "ZVAL"


def philox4x32_10(c, k):
    c, k = list(c), list(k)
    for r in range(10):
        if r:
            k = [(k[0] + W0) & MASK, (k[1] + W1) & MASK]
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & MASK, (p0 >> 32) ^ c[3] ^ k[1], p0 & MASK]
    return c


def stream_key(seed, step, query):
    d = philox4x32_10([step & MASK, step >> 32, query, KEY_TAG], [seed & MASK, seed >> 32])
    return d[0], d[1]


# --- binary32 ------------------------------------------------------------------

def f32(x: float) -> float:
    """x rounded to the nearest binary32 (ties to even)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def from_bits(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b & MASK))[0]


def add(a, b): return f32(a + b)
def sub(a, b): return f32(a - b)
def mul(a, b): return f32(a * b)
def div(a, b): return f32(a / b)
def sqrt(a): return f32(math.sqrt(a))
def mul_add(a, x, b): return add(mul(a, x), b)


def hexf(s: str) -> float:
    """A binary32 constant written as a hexadecimal float, exact."""
    v = float.fromhex(s)
    assert f32(v) == v, s
    return v


def fit_coefficients():
    """The polynomial coefficients of recipe 2, rederived: least squares on
    200 Chebyshev points (a near-minimax fit) in binary64, rounded to
    binary32. With y in [-1, 1], t = y^2, f in [-(sqrt2-1)/(sqrt2+1), +...]:
      sin(pi/4 y) = y * (S1 + S3 t + S5 t^2 + S7 t^3)        max error 2.4e-9
      cos(pi/4 y) = 1 + t * (C2 + C4 t + C6 t^2 + C8 t^3)    max error 1.9e-10
      log((1+f)/(1-f)) = 2f * (1 + L3 s + L5 s^2 + L7 s^3), s = f^2   2.4e-10
    Returns {name: float}; tools/z_reference.py checks the constants below
    against it (python tools/z_reference.py --check-constants)."""
    def solve(a, b):
        n = len(b)
        m = [row[:] + [b[i]] for i, row in enumerate(a)]
        for c in range(n):
            p = max(range(c, n), key=lambda r: abs(m[r][c]))
            m[c], m[p] = m[p], m[c]
            for r in range(n):
                if r != c:
                    factor = m[r][c] / m[c][c]
                    for k in range(c, n + 1):
                        m[r][k] -= factor * m[c][k]
        return [m[i][n] / m[i][i] for i in range(n)]

    def fit(fn, hi, degree):
        pts = [hi / 2 + hi / 2 * math.cos(math.pi * (k + 0.5) / 200) for k in range(200)]
        a = [[sum(t ** (i + j) for t in pts) for j in range(degree + 1)] for i in range(degree + 1)]
        b = [sum(fn(t) * t ** i for t in pts) for i in range(degree + 1)]
        return [f32(c) for c in solve(a, b)]

    q = math.pi / 4
    sin_c = fit(lambda t: q if t == 0 else math.sin(q * math.sqrt(t)) / math.sqrt(t), 1.0, 3)
    cos_c = fit(lambda t: -q * q / 2 if t == 0 else (math.cos(q * math.sqrt(t)) - 1) / t, 1.0, 3)
    s_max = ((math.sqrt(2) - 1) / (math.sqrt(2) + 1)) ** 2
    log_c = fit(lambda s: 1.0 if s == 0 else math.atanh(math.sqrt(s)) / math.sqrt(s), s_max, 3)
    names = {}
    names.update(zip(("S1", "S3", "S5", "S7"), sin_c))
    names.update(zip(("C2", "C4", "C6", "C8"), cos_c))
    names.update(zip(("L1", "L3", "L5", "L7"), log_c))
    return names


S1, S3, S5, S7 = (hexf(x) for x in ("0x1.921fb6p-1", "-0x1.4abbbap-4", "0x1.465ec4p-9",
                                     "-0x1.2d9b7cp-15"))
C2, C4, C6, C8 = (hexf(x) for x in ("-0x1.3bd3ccp-2", "0x1.03c1eap-6", "-0x1.55cb98p-12",
                                     "0x1.db64d6p-19"))
L3, L5, L7 = (hexf(x) for x in ("0x1.555588p-2", "0x1.99578cp-3", "0x1.326fc8p-3"))
LN2_HI, LN2_LO = hexf("0x1.62e400p-1"), hexf("0x1.7f7d1cp-20")
SQRT2_MANTISSA = 0x3504F3


def radius_v2(a: int) -> float:
    x = f32(float((a >> 2) + 1))
    b = bits(x)
    mantissa = b & 0x7FFFFF
    big = 1 if mantissa > SQRT2_MANTISSA else 0
    e = (b >> 23) - 127 + big
    m = from_bits(mantissa | (0x3F800000 - (big << 23)))
    f = div(sub(m, 1.0), add(m, 1.0))
    s = mul(f, f)
    p = mul_add(mul_add(mul_add(L7, s, L5), s, L3), s, 1.0)
    ln_m = mul(add(f, f), p)
    k = f32(float(30 - e))
    neg_log_u1 = add(mul(k, LN2_HI), sub(mul(k, LN2_LO), ln_m))
    return sqrt(add(neg_log_u1, neg_log_u1))


def cos_sin_v2(b: int):
    v = (b + 0x20000000) & MASK
    q = v >> 30
    t = ((v & 0x3FFFFFFF) - 0x20000000) >> 6  # Python's >> on a negative int is arithmetic
    y = mul(f32(float(t)), 2.0 ** -23)
    y2 = mul(y, y)
    sn = mul(y, mul_add(mul_add(mul_add(S7, y2, S5), y2, S3), y2, S1))
    cs = add(mul(mul_add(mul_add(mul_add(C8, y2, C6), y2, C4), y2, C2), y2), 1.0)
    return [(cs, sn), (-sn, cs), (-cs, -sn), (sn, -cs)][q]


def box_muller_v2(a: int, b: int):
    r = radius_v2(a)
    c, s = cos_sin_v2(b)
    return mul(r, c), mul(r, s)


def box_muller_v1(a: int, b: int):
    u1 = (float(a) + 1.0) * 2.0 ** -32
    u2 = float(b) * 2.0 ** -32
    r = math.sqrt(-2.0 * math.log(u1))
    theta = 6.283185307179586 * u2
    return f32(r * math.cos(theta)), f32(r * math.sin(theta))


def z(seed, step, query, param_id, element, dist="gaussian", recipe=2):
    key = stream_key(seed, step, query)
    b, lane = element >> 2, element & 3
    w = philox4x32_10([b & MASK, b >> 32, param_id, BLOCK_TAG], key)
    if dist == "rademacher":
        return -1.0 if w[lane] >> 31 else 1.0
    pair = (box_muller_v2 if recipe == 2 else box_muller_v1)(w[lane & 2], w[(lane & 2) + 1])
    return pair[lane & 1]


# --- the update of θ ---------------------------------------------------------------

def update_element(theta, decay, coefficients, pending_z, eps, z_now):
    """One element of kernels::update_and_perturb, in its order of operations:
    step = decay*θ + Σ_q a_q z_q (q in order), θ' = θ − step, w± = θ' ± ε z.
    All binary32; returns (θ', w+, w−)."""
    step = mul(decay, theta)
    for a, zq in zip(coefficients, pending_z):
        step = add(step, mul(a, zq))
    new = sub(theta, step)
    ez = mul(eps, z_now)
    return new, add(new, ez), sub(new, ez)


UPDATE_SEED, UPDATE_PENDING_STEP, UPDATE_STEP, UPDATE_PARAM = 7, 41, 42, 5
UPDATE_DECAY = f32(1e-3)
UPDATE_COEFFICIENTS = (f32(0.25e-2), f32(-0.5e-2))
UPDATE_EPS = f32(1e-3)


def update_rows():
    """(element, θ) -> (θ', w+, w−) for a two-query pending update of step 41
    applied while perturbing step 42, parameter 5 (tests/test_perturb_update.cpp)."""
    rows = []
    thetas = [0.0, 0.0123, -1.5, 3.0e-5, 2.75, -0.000731, 1.0e-3, -7.25]
    for i, t in enumerate(thetas):
        element = 3 + 37 * i
        t = f32(t)
        zs = [z(UPDATE_SEED, UPDATE_PENDING_STEP, q, UPDATE_PARAM, element) for q in range(2)]
        now = z(UPDATE_SEED, UPDATE_STEP, 0, UPDATE_PARAM, element)
        rows.append((element, t, update_element(t, UPDATE_DECAY, UPDATE_COEFFICIENTS, zs, UPDATE_EPS, now)))
    return rows


# --- known answers -------------------------------------------------------------

def known_answers():
    """(kind, fields, bits) rows: z at chosen coordinates, and Box–Muller
    pairs at the edge words (u1 = 1 and the smallest u1, every quadrant
    boundary, the sqrt(2) split of the mantissa)."""
    rows = []
    coords = [(0, 0, 0, 0, 0), (0x0123456789ABCDEF, 1000, 3, 17, 0),
              (0x0123456789ABCDEF, 1000, 3, 17, 1), (0x0123456789ABCDEF, 1000, 3, 17, 2),
              (0x0123456789ABCDEF, 1000, 3, 17, 3), (0x0123456789ABCDEF, 1000, 3, 17, 2**64 - 1),
              (42, 2**32 + 7, 0xFFFFFFFF, 0xFFFFFFFF, 123456789),
              (2**64 - 1, 2**64 - 1, 1, 2, 5)]
    for i in range(40):  # a spread of elements of one tensor
        coords.append((7, 11, i % 3, 5, i * 1000003))
    for seed, step, query, pid, element in coords:
        rows.append(("z", (seed, step, query, pid, element), bits(z(seed, step, query, pid, element))))
    words_a = [0, 1, 2, 3, 4, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFC, 0xFFFFFFFF, 0x5A827998 << 1,
               0xB504F300, 0xB504F400, 0x12345678]
    words_b = [0, 1, 0x1FFFFFFF, 0x20000000, 0x3FFFFFFF, 0x40000000, 0x5FFFFFFF, 0x7FFFFFFF,
               0x80000000, 0xBFFFFFFF, 0xE0000000, 0xFFFFFFFF, 0x9E3779B9]
    for a in words_a:
        for b in words_b:
            even, odd = box_muller_v2(a & MASK, b)
            rows.append(("pair", (a & MASK, b), (bits(even) << 32) | bits(odd)))
    return rows


def write_kat(path):
    with open(path, "w", encoding="ascii") as fh:
        fh.write("# Known answers of z, recipe 2 (docs/perturbation.md), written by\n"
                 "# tools/z_reference.py --write-kat; tests/test_perturbation.cpp reads them.\n"
                 "# z SEED STEP QUERY PARAM_ID ELEMENT FLOAT_BITS   (Gaussian)\n"
                 "# pair A B EVEN_BITS ODD_BITS                      (Box-Muller of words A, B)\n"
                 "# update ELEMENT THETA NEW_THETA W_PLUS W_MINUS   (all float bits; seed 7,\n"
                 "#   pending step 41 with coefficients 0.25e-2, -0.5e-2 and decay 1e-3,\n"
                 "#   perturbing step 42 with eps 1e-3, parameter 5)\n")
        for kind, fields, value in known_answers():
            if kind == "z":
                fh.write("z %d %d %d %d %d %08x\n" % (*fields, value))
            else:
                fh.write("pair %08x %08x %08x %08x\n" % (*fields, value >> 32, value & MASK))
        for element, theta, (new, plus, minus) in update_rows():
            fh.write("update %d %08x %08x %08x %08x\n"
                     % (element, bits(theta), bits(new), bits(plus), bits(minus)))


def check_kat(path):
    import os
    import tempfile
    want = open(path, encoding="ascii").read()
    with tempfile.TemporaryDirectory() as d:
        tmp = os.path.join(d, "kat")
        write_kat(tmp)
        got = open(tmp, encoding="ascii").read()
    if got != want:
        sys.exit(f"{path}: differs from what tools/z_reference.py computes")
    print(f"{path}: {sum(1 for line in want.splitlines() if not line.startswith('#'))} known answers agree")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write-kat", metavar="FILE")
    g.add_argument("--check-kat", metavar="FILE")
    g.add_argument("--check-constants", action="store_true",
                   help="rederive the polynomial coefficients and compare")
    args = ap.parse_args()
    if args.write_kat:
        write_kat(args.write_kat)
    elif args.check_kat:
        check_kat(args.check_kat)
    else:
        fitted = fit_coefficients()
        used = {"S1": S1, "S3": S3, "S5": S5, "S7": S7, "C2": C2, "C4": C4, "C6": C6, "C8": C8,
                "L1": 1.0, "L3": L3, "L5": L5, "L7": L7}
        bad = [k for k in used if fitted[k] != used[k]]
        for k in used:
            print(f"{k:3} {float.hex(used[k]):>16} {'ok' if k not in bad else 'fit gives ' + float.hex(fitted[k])}")
        if bad:
            sys.exit("the constants differ from the fit: " + ", ".join(bad))


if __name__ == "__main__":
    main()
