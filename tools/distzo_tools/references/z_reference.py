"""The perturbation z of distzo, in Python with the standard library only.

    z(seed, step, query, param_id, element, dist="gaussian", recipe=2)

is the reference for docs/perturbation.md and src/core/perturbation.hpp,
bit for bit. Recipe 2 is binary32 arithmetic operation by operation; Python
floats are binary64, and every +, -, *, / and sqrt of two binary32 values
computed in binary64 and rounded once to binary32 is the correctly rounded
binary32 result (binary64 has at least 2*24 + 2 bits: double rounding is
innocuous), so f32(a * b) here is exactly C++'s float a * b. No fused
multiply-add appears in the recipe, so none needs emulating.

    python3 tools/z_reference.py --write-kat tests/data/z_recipe2.kat
    python3 tools/z_reference.py --check-kat tests/data/z_recipe2.kat

write or check the known answers that tests/test_perturbation.cpp reads.

The 2-byte storage of θ (bf16, fp16), round to nearest and stochastic
rounding with its random word rounding_bits(seed, step, param_id, element)
(docs/perturbation.md, "Stochastic rounding of θ, bit for bit";
src/core/storage_dtype.hpp) are here too, in exact rational arithmetic on the
values (the C++ works on the bits, so the two are independent derivations):

    python3 tools/z_reference.py --write-storage-kat tests/data/storage_rounding.kat
    python3 tools/z_reference.py --check-storage-kat tests/data/storage_rounding.kat

The blocks a block-sparse step perturbs (src/core/block_choice.hpp):

    python3 tools/z_reference.py --chosen-blocks SEED STEP K B
"""

from __future__ import annotations

import argparse
import math
from fractions import Fraction
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
    against it (python3 tools/z_reference.py --check-constants)."""
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


SELECT_TAG = 0x5A53454C  # "ZSEL"


def chosen_blocks(seed, step, k, blocks):
    """S_t, the K of B decoder blocks step `step` perturbs (optim.perturbed_blocks;
    src/core/block_choice.hpp): a partial Fisher-Yates shuffle, sorted; every block when K = 0."""
    perm = list(range(blocks))
    if k == 0:
        return perm
    for i in range(k):
        w = philox4x32_10([step & MASK, step >> 32, i, SELECT_TAG], [seed & MASK, seed >> 32])[0]
        j = i + ((w * (blocks - i)) >> 32)
        perm[i], perm[j] = perm[j], perm[i]
    return sorted(perm[:k])


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


# --- 2-byte storage of θ: formats, round to nearest, stochastic rounding --------

ROUND_KEY_TAG, ROUND_BLOCK_TAG = 0x524B4559, 0x5256414C  # "RKEY", "RVAL"

# name: (mantissa bits, exponent bits, exponent bias)
FORMATS = {"bf16": (7, 8, 127), "fp16": (10, 5, 15)}


def pow2(e: int) -> Fraction:
    return Fraction(2) ** e


def floor_log2(v: Fraction) -> int:
    """floor(log2 v) for v > 0, exactly."""
    e = v.numerator.bit_length() - v.denominator.bit_length()
    return e - 1 if pow2(e) > v else e


class Format:
    def __init__(self, name):
        self.name = name
        self.mbits, ebits, self.bias = FORMATS[name]
        self.emask = (1 << ebits) - 1
        self.emin = 1 - self.bias                   # smallest normal is 2^emin
        self.emax = self.emask - 1 - self.bias      # largest finite is (2 - 2^-mbits) 2^emax
        self.beyond = pow2(self.emax + 1)           # no value of the format from here on
        self.inf = self.emask << self.mbits         # magnitude word of infinity
        self.max_finite = self.inf - 1

    def value(self, word: int) -> Fraction:
        """The magnitude a finite word stands for (sign bit ignored)."""
        e, m = (word >> self.mbits) & self.emask, word & ((1 << self.mbits) - 1)
        if e == 0:
            return m * pow2(self.emin - self.mbits)
        return (pow2(self.mbits) + m) * pow2(e - self.bias - self.mbits)

    def word(self, v: Fraction) -> int:
        """The magnitude word of a value of the format (or of 2^(emax+1): inf)."""
        if v < pow2(self.emin):
            m = v / pow2(self.emin - self.mbits)
            assert m.denominator == 1
            return int(m)
        e = floor_log2(v)
        m = v / pow2(e - self.mbits) - pow2(self.mbits)
        assert m.denominator == 1
        return ((e + self.bias) << self.mbits) | int(m)

    def quantum(self, v: Fraction) -> Fraction:
        """The spacing of the format at magnitude v (v below 2^(emax+1))."""
        e = floor_log2(v) if v >= pow2(self.emin) else self.emin
        return pow2(e - self.mbits)

    def bracket(self, v: Fraction):
        """(lo, hi, frac): v rounded toward zero, the next value away from
        zero, and (v - lo) / (hi - lo)."""
        q = self.quantum(v) if v > 0 else pow2(self.emin - self.mbits)
        lo = (v // q) * q
        return lo, lo + q, (v - lo) / q

    def nan(self, b: int) -> int:
        """The quiet NaN a NaN float (bits b) becomes: sign, quiet bit, top payload bits."""
        sign = (b >> 31) << 15
        payload = (b & 0x7FFFFF) >> (23 - self.mbits)
        return sign | self.inf | (1 << (self.mbits - 1)) | payload


def float_value(b: int) -> Fraction:
    return Fraction(from_bits(b))


def decode16(fmt: str, w: int) -> int:
    """The float bits of 16-bit word w, exactly (NaN: sign and payload kept)."""
    f = Format(fmt)
    sign = (w >> 15) << 31
    e, m = (w >> f.mbits) & f.emask, w & ((1 << f.mbits) - 1)
    if e == f.emask:  # inf, or NaN keeping its payload (shifted into the float's)
        return sign | 0x7F800000 | (m << (23 - f.mbits))
    return sign | bits(float(f.value(w)))  # exact: every value is a float


def round_nearest(fmt: str, b: int) -> int:
    """float bits b -> word, IEEE round to nearest, ties to even."""
    f = Format(fmt)
    sign, a = (b >> 31) << 15, b & 0x7FFFFFFF
    if a > 0x7F800000:
        return f.nan(b)
    if a == 0x7F800000:
        return sign | f.inf
    v = float_value(a)
    if v >= f.beyond:
        return sign | f.inf
    lo, hi, frac = f.bracket(v)
    lo_w, hi_w = f.word(lo), f.word(hi)  # hi = 2^(emax+1) gives the inf word: IEEE overflow
    if frac == Fraction(1, 2):
        return sign | (lo_w if lo_w % 2 == 0 else hi_w)
    return sign | (hi_w if frac > Fraction(1, 2) else lo_w)


def sr_fraction(fmt: str, b: int) -> int:
    """F = floor(2^32 (|x| - |lo|) / (|hi| - |lo|)) of a finite float below 2^(emax+1)."""
    _, _, frac = Format(fmt).bracket(float_value(b & 0x7FFFFFFF))
    return int(frac * 2**32)  # floor: frac >= 0


def round_stochastic(fmt: str, b: int, r: int) -> int:
    """float bits b -> word, stochastic rounding with random word r: hi iff
    r < F; a finite x never becomes inf (beyond the largest finite it takes
    the largest finite); non-finite as round_nearest."""
    f = Format(fmt)
    sign, a = (b >> 31) << 15, b & 0x7FFFFFFF
    if a >= 0x7F800000:
        return round_nearest(fmt, b)
    v = float_value(a)
    if v >= f.beyond:
        return sign | f.max_finite
    lo, hi, _ = f.bracket(v)
    w = f.word(hi) if r < sr_fraction(fmt, a) else f.word(lo)
    return sign | min(w, f.max_finite)


def rounding_key(seed, step):
    d = philox4x32_10([step & MASK, step >> 32, 0, ROUND_KEY_TAG], [seed & MASK, seed >> 32])
    return d[0], d[1]


def rounding_bits(seed, step, param_id, element):
    """The random word of stochastic rounding for element `element` of
    parameter `param_id` when the update of step `step` is stored."""
    b = element >> 2
    return philox4x32_10([b & MASK, b >> 32, param_id, ROUND_BLOCK_TAG],
                         rounding_key(seed, step))[element & 3]


def storage_inputs():
    """Float bits at the edges of both formats, then a spread of magnitudes."""
    h = lambda s: bits(hexf(s))  # noqa: E731
    xs = [0x00000000, 0x80000000, h("0x1p0"), h("-0x1p0"), h("0x1.5p0"),
          # bf16 (8 significant bits): exact, halfway with lo even / odd, just above half
          h("0x1.01p0"), h("0x1.03p0"), h("0x1.010002p0"), h("-0x1.03p0"), h("0x1.fffffep0"),
          # fp16 (11 significant bits): halfway with lo even / odd, one above, at 2048
          h("0x1.002p0"), h("0x1.006p0"), h("0x1.002002p0"), h("0x1.0p11") + (1 << 12),
          h("0x1.0p11") + (3 << 12), bits(f32(math.pi)), bits(f32(-math.pi)), bits(f32(0.1)),
          bits(f32(-0.1)), bits(f32(1e-3)), bits(f32(3.0e-5)), bits(f32(-7.25)),
          # fp16's top: max finite, just above, below/at the RN overflow midpoint, 2^16 on
          bits(65504.0), bits(65505.0), bits(65519.0), bits(65520.0), bits(f32(65535.99)),
          bits(65536.0), bits(1.0e5), bits(-1.0e5),
          # fp16's bottom: smallest normal, subnormals, ties at 2^-25 and 3*2^-25, underflow
          h("0x1p-14"), h("0x1.ffcp-15"), h("0x1.ffep-15"), h("0x1p-24"), h("-0x1p-24"),
          h("0x1p-25"), h("0x1.8p-24"), h("0x1.000002p-25"), h("0x1p-26"), h("-0x1p-26"),
          h("0x1.234568p-30"), h("0x1.fffffep-33"), h("0x1p-33"), h("0x1.abcdeep-34"),
          h("0x1.fffffep-57"), bits(f32(1e-9)),
          # float's extremes: smallest normal and subnormals (bf16 keeps them), FLT_MAX
          0x00800000, 0x00000001, 0x007FFFFF, 0x80018000, 0x00008000, 0x7F7FFFFF, 0xFF7FFFFF,
          # bf16's top: max finite 0x1.fep127, the RN overflow tie 0x1.ffp127, between
          0x7F7F0000, 0x7F7F8000, 0x7F7F7FFF, 0x7F7F4000, 0xFF7F8000,
          # inf and NaNs (quiet, negative with payload, signalling with low payload only)
          0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FA00000, 0x7FFFFFFF]
    state = 0x243F6A88
    for _ in range(24):  # magnitudes 2^-30 .. 2^17, both signs: xorshift32
        state ^= (state << 13) & MASK
        state ^= state >> 17
        state ^= (state << 5) & MASK
        exponent = 97 + state % 48
        xs.append((state & 0x80000000) | (exponent << 23) | ((state >> 5) & 0x7FFFFF))
    return xs


def storage_known_answers():
    """(kind, fields) rows of tests/data/storage_rounding.kat."""
    rows = []
    decode_words = {
        "bf16": [0x0000, 0x8000, 0x0001, 0x007F, 0x0080, 0x3F80, 0xBF80, 0x4049, 0x7F7F,
                 0xFF7F, 0x7F80, 0xFF80, 0x7F81, 0x7FC0, 0xFFFF],
        "fp16": [0x0000, 0x8000, 0x0001, 0x8001, 0x0200, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3555,
                 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7C01, 0x7E00, 0xFFFF]}
    for fmt, words in decode_words.items():
        for w in words:
            rows.append(("decode", (fmt, w, decode16(fmt, w))))
    for fmt in FORMATS:
        f = Format(fmt)
        for x in storage_inputs():
            a = x & 0x7FFFFFFF
            rs = [0, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]
            if a < 0x7F800000 and float_value(a) < f.beyond:
                fr = sr_fraction(fmt, a)  # the comparison's edge: r = F - 1 rounds up, r = F not
                rs += [fr] + ([fr - 1] if fr > 0 else [])
            for r in sorted(set(rs)):
                rows.append(("round", (fmt, x, r, round_nearest(fmt, x), round_stochastic(fmt, x, r))))
    coords = [(0, 0, 0, 0), (0x0123456789ABCDEF, 1000, 17, 0), (0x0123456789ABCDEF, 1000, 17, 1),
              (0x0123456789ABCDEF, 1000, 17, 2), (0x0123456789ABCDEF, 1000, 17, 3),
              (0x0123456789ABCDEF, 1000, 17, 2**64 - 1), (42, 2**32 + 7, 0xFFFFFFFF, 123456789),
              (2**64 - 1, 2**64 - 1, 2, 5)]
    coords += [(7, 41, 5, i * 1000003) for i in range(16)]
    for c in coords:
        rows.append(("bits", (*c, rounding_bits(*c))))
    # θ stored at coordinates: the word rounding_bits gives, through SR.
    thetas = [bits(f32(t)) for t in (0.0123, -1.5, 3.0e-5, 2.75, -0.000731, 1.0e-3, -7.25,
                                      0.33333334, 1.0e-6, -6.0e-8, 60000.0, -65510.0)]
    for fmt in FORMATS:
        for i, x in enumerate(thetas):
            seed, step, pid, element = 7, 41, 5, 3 + 37 * i
            r = rounding_bits(seed, step, pid, element)
            rows.append(("store", (fmt, seed, step, pid, element, x, round_stochastic(fmt, x, r))))
    # The fused update of a 2-byte θ (kernels::update_and_perturb): decode,
    # update_element's float32 arithmetic, store θ' with the rounding (SR:
    # the word of the pending step 41), w± from the θ' stored.
    for fmt in FORMATS:
        for rounding in ("nearest", "stochastic"):
            for element, theta, _ in update_rows():
                word = round_nearest(fmt, bits(theta))
                held = from_bits(decode16(fmt, word))
                zs = [z(UPDATE_SEED, UPDATE_PENDING_STEP, q, UPDATE_PARAM, element) for q in range(2)]
                now = z(UPDATE_SEED, UPDATE_STEP, 0, UPDATE_PARAM, element)
                new, _, _ = update_element(held, UPDATE_DECAY, UPDATE_COEFFICIENTS, zs, UPDATE_EPS, now)
                r = rounding_bits(UPDATE_SEED, UPDATE_PENDING_STEP, UPDATE_PARAM, element)
                stored = (round_nearest(fmt, bits(new)) if rounding == "nearest"
                          else round_stochastic(fmt, bits(new), r))
                value = from_bits(decode16(fmt, stored))
                ez = mul(UPDATE_EPS, now)
                rows.append(("update", (fmt, rounding, element, word, stored, bits(add(value, ez)),
                                        bits(sub(value, ez)))))
    return rows


def write_storage_kat(path):
    with open(path, "w", encoding="ascii") as fh:
        fh.write("# Known answers of the 2-byte storage of theta and its stochastic rounding\n"
                 "# (docs/perturbation.md), written by tools/z_reference.py --write-storage-kat;\n"
                 "# tests/test_storage_dtype.cpp reads them. Hexadecimal except SEED STEP\n"
                 "# PARAM_ID ELEMENT (decimal).\n"
                 "# decode DTYPE WORD FLOAT_BITS                          (exact decoding)\n"
                 "# round DTYPE X_BITS R NEAREST_WORD STOCHASTIC_WORD     (R: the random word)\n"
                 "# bits SEED STEP PARAM_ID ELEMENT WORD                  (rounding_bits)\n"
                 "# store DTYPE SEED STEP PARAM_ID ELEMENT X_BITS WORD    (stochastic, r = rounding_bits)\n"
                 "# update DTYPE ROUNDING ELEMENT THETA_WORD NEW_WORD W_PLUS W_MINUS  (the fused\n"
                 "#   kernel on 2-byte theta: z_recipe2.kat's update rows, theta stored first)\n")
        for kind, fields in storage_known_answers():
            if kind == "decode":
                fh.write("decode %s %04x %08x\n" % fields)
            elif kind == "round":
                fh.write("round %s %08x %08x %04x %04x\n" % fields)
            elif kind == "bits":
                fh.write("bits %d %d %d %d %08x\n" % fields)
            elif kind == "update":
                fh.write("update %s %s %d %04x %04x %08x %08x\n" % fields)
            else:
                fh.write("store %s %d %d %d %d %08x %04x\n" % fields)


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


def check_kat(path, write=None):
    import os
    import tempfile
    want = open(path, encoding="ascii").read()
    with tempfile.TemporaryDirectory() as d:
        tmp = os.path.join(d, "kat")
        (write or write_kat)(tmp)
        got = open(tmp, encoding="ascii").read()
    if got != want:
        sys.exit(f"{path}: differs from what tools/z_reference.py computes")
    print(f"{path}: {sum(1 for line in want.splitlines() if not line.startswith('#'))} known answers agree")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write-kat", metavar="FILE")
    g.add_argument("--check-kat", metavar="FILE")
    g.add_argument("--write-storage-kat", metavar="FILE",
                   help="the known answers of bf16/fp16 storage and stochastic rounding")
    g.add_argument("--check-storage-kat", metavar="FILE")
    g.add_argument("--check-constants", action="store_true",
                   help="rederive the polynomial coefficients and compare")
    g.add_argument("--chosen-blocks", nargs=4, type=int, metavar=("SEED", "STEP", "K", "B"),
                   help="the blocks a step of a block-sparse run perturbs")
    args = ap.parse_args()
    if args.chosen_blocks:
        print(" ".join(map(str, chosen_blocks(*args.chosen_blocks))))
    elif args.write_kat:
        write_kat(args.write_kat)
    elif args.check_kat:
        check_kat(args.check_kat)
    elif args.write_storage_kat:
        write_storage_kat(args.write_storage_kat)
    elif args.check_storage_kat:
        check_kat(args.check_storage_kat, write_storage_kat)
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
