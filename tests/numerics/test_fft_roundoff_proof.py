"""The per-coefficient FFT roundoff bound of docs/fft_roundoff.md, checked.

1. The proof's per-pass constants, by an error interpreter run on a transcription (complex-
   pair form) of pocketfft's rfftp butterflies radf2..5 / radb2..5 at their DC, Nyquist and
   general positions; the transcriptions are checked to be DFT butterflies, and
   ``privamp.numerics.fft._FFT_C`` against the constant over every 5-smooth length.
2. The assumptions on this machine: libm's cos/sin within 2 ulps at pocketfft's arguments,
   its twiddles (sincos_2pibyn, replicated) within the proof's mu.
3. scipy's rfft / irfft (float64, long double) on adversarial inputs against exact
   references (mpmath; scipy's long-double rfft for long float64 ones): within the bound.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math

import mpmath
import numpy as np
import pytest
import scipy.fft as sfft

from privamp.numerics import fft as pfft

U64, ULD = 2.0**-53, 2.0**-64
#: relative error of the twiddles' angle (pi literal, a quotient, a cast, a product)
ARG_REL = {U64: 2.0003, ULD: 3.0003}
#: assumed accuracy of libm's cos and sin (ulps; glibc documents 1 for x86_64)
LIBM_ULPS = 2
MAX_LEN = 2**25


# ------------------------------------------------------------------------------ interpreter
class Val:
    """A computed quantity: exact value sum_c p_c Z_c + q_c conj(Z_c) of the butterfly's
    inputs (|Z_c| <= M_c); |computed - exact| <= sum_c err_c M_c."""

    def __init__(self, p, q, err):
        self.p, self.q, self.err = p, q, err

    def bound(self):
        return np.abs(self.p) + np.abs(self.q)


class Ctx:
    """The rounding rules (unit roundoff u, twiddle error mu, stored constants within rho)."""

    def __init__(self, n_in: int, u: float, mu: float):
        self.n, self.u, self.mu, self.rho = n_in, u, mu, 1.001 * u
        self.s2g2 = math.sqrt(2.0) * 2 * u / (1 - 2 * u)  # complex product: Higham Lemma 3.5

    @property
    def m1(self) -> float:
        """|fl(conj(w^) z) - conj(w) z| / |z| (MULPM by a computed twiddle)."""
        return self.mu + self.s2g2 * (1 + self.mu)

    def inp(self, c: int) -> Val:
        return Val(np.eye(self.n, dtype=complex)[c], np.zeros(self.n, complex), np.zeros(self.n))

    def add(self, a: Val, b: Val, s: int = 1) -> Val:
        """a + s b, computed componentwise: rounding <= u |computed value|."""
        p, q, e = a.p + s * b.p, a.q + s * b.q, a.err + b.err
        return Val(p, q, e + self.u * (np.abs(p) + np.abs(q) + e))

    def sub(self, a: Val, b: Val) -> Val:
        return self.add(a, b, -1)

    def scale(self, a: Val, k: float, stored: bool = True, rounds: bool = True) -> Val:
        """k a, k a real constant (stored: its floating value within rho |k|; rounds=False
        for exact products by powers of 2)."""
        rho = self.rho if stored else 0.0
        ba, ak = a.bound(), abs(k)
        e = ak * (1 + rho) * a.err + rho * ak * ba
        if rounds:
            e = e + self.u * ak * (1 + rho) * (ba + a.err)
        return Val(k * a.p, k * a.q, e)

    def times_i(self, a: Val, s: int = 1) -> Val:
        return Val(s * 1j * a.p, s * 1j * a.q, a.err)

    def re(self, a: Val) -> Val:
        return Val((a.p + np.conj(a.q)) / 2, (a.q + np.conj(a.p)) / 2, a.err)

    def im(self, a: Val) -> Val:
        return Val((a.p - np.conj(a.q)) / 2j, (a.q - np.conj(a.p)) / 2j, a.err)

    def pair(self, re: Val, im: Val) -> Val:
        return Val(re.p + 1j * im.p, re.q + 1j * im.q, re.err + im.err)

    def rot_out(self, a: Val) -> Val:
        """fl(w^ a) against w a (the backward passes' last step); the exact value's modulus
        bound is a's (the functional is left unrotated: outputs only)."""
        mu, s, ba = self.mu, self.s2g2, a.bound()
        return Val(a.p, a.q, (1 + mu) * a.err + mu * ba + s * (1 + mu) * (ba + a.err))


_TR11, _TI11 = math.cos(2 * math.pi / 5), math.sin(2 * math.pi / 5)
_TR12, _TI12 = math.cos(4 * math.pi / 5), math.sin(4 * math.pi / 5)
_TAUI, _H = math.sqrt(3) / 2, math.sqrt(0.5)


def _sum3(x: Ctx, a: Val, b: Val, kb: float, c: Val, kc: float) -> Val:
    return x.add(x.add(a, x.scale(b, kb)), x.scale(c, kc))


def _inputs(x: Ctx) -> list[Val]:
    return [x.inp(c) for c in range(x.n)]


# forward passes: inputs Y_c(f) (general positions: 1.. multiplied by conj(w^) before, see
# pass_constant), outputs the combined block's coefficients (conjugated at ic positions)
def radf2(x: Ctx, pos: str) -> list[Val]:
    c0, c1 = _inputs(x)
    if pos == "nyq":  # CH(ido-1,0) = CC(ido-1,0), CH(0,1) = -CC(ido-1,1): copies
        return [c0, c1]
    return [x.add(c0, c1), x.sub(c0, c1)]


def radf3(x: Ctx, pos: str) -> list[Val]:
    if pos == "dc":
        c0, c1, c2 = _inputs(x)
        cr2 = x.add(c1, c2)
        re = x.add(c0, x.scale(cr2, -0.5, stored=False, rounds=False))
        return [x.add(c0, cr2), x.pair(re, x.scale(x.sub(c2, c1), _TAUI))]
    z0, z1, z2 = _inputs(x)
    s, d = x.add(z1, z2), x.times_i(x.sub(z1, z2), -1)  # REARRANGE
    t2 = x.add(z0, x.scale(s, -0.5, stored=False, rounds=False))
    t3 = x.scale(d, _TAUI)
    return [x.add(z0, s), x.add(t2, t3), x.sub(t2, t3)]


def radf4(x: Ctx, pos: str) -> list[Val]:
    c0, c1, c2, c3 = _inputs(x)
    if pos == "dc":
        tr1, ch02 = x.add(c3, c1), x.sub(c3, c1)
        tr2, ch1 = x.add(c0, c2), x.sub(c0, c2)
        return [x.add(tr2, tr1), x.sub(tr2, tr1), x.pair(ch1, ch02)]
    if pos == "nyq":
        ti1, tr1 = x.scale(x.add(c1, c3), -_H), x.scale(x.sub(c1, c3), _H)
        return [x.pair(x.add(c0, tr1), x.sub(ti1, c2)), x.pair(x.sub(c0, tr1), x.add(ti1, c2))]
    b, p4 = x.add(c1, c3), x.times_i(x.sub(c1, c3), -1)  # (tr1, ti1), (ti4, tr4)
    a, cc = x.add(c0, c2), x.sub(c0, c2)                  # (tr2, ti2), (tr3, ti3)
    return [x.add(a, b), x.sub(a, b), x.add(cc, p4), x.sub(cc, p4)]


def radf5(x: Ctx, pos: str) -> list[Val]:
    if pos == "dc":
        c0, c1, c2, c3, c4 = _inputs(x)
        cr2, ci5, cr3, ci4 = x.add(c4, c1), x.sub(c4, c1), x.add(c3, c2), x.sub(c3, c2)
        out0 = x.add(x.add(c0, cr2), cr3)
        i1 = x.add(x.scale(ci5, _TI11), x.scale(ci4, _TI12))
        i2 = x.sub(x.scale(ci5, _TI12), x.scale(ci4, _TI11))
        return [out0, x.pair(_sum3(x, c0, cr2, _TR11, cr3, _TR12), i1),
                x.pair(_sum3(x, c0, cr2, _TR12, cr3, _TR11), i2)]
    z0, z1, z2, z3, z4 = _inputs(x)
    s25, d25 = x.add(z1, z4), x.times_i(x.sub(z1, z4), -1)
    s34, d34 = x.add(z2, z3), x.times_i(x.sub(z2, z3), -1)
    t2 = _sum3(x, z0, s25, _TR11, s34, _TR12)
    t3 = _sum3(x, z0, s25, _TR12, s34, _TR11)
    t5 = x.add(x.scale(d25, _TI11), x.scale(d34, _TI12))
    t4 = x.sub(x.scale(d25, _TI12), x.scale(d34, _TI11))
    return [x.add(x.add(z0, s25), s34), x.add(t2, t5), x.sub(t2, t5), x.add(t3, t4),
            x.sub(t3, t4)]


# backward passes: inputs the spectrum values read (conjugated where read at ic), with their
# weight in the subset's l1 norm (2: one stored value stands for a frequency and its mirror)
def radb2(x: Ctx, pos: str) -> tuple[list[Val], list[int]]:
    if pos == "nyq":  # CH(ido-1,0) = 2 CC(ido-1,0), CH(ido-1,1) = -2 CC(0,1): exact
        (a,) = _inputs(x)
        return [x.scale(x.re(a), 2, False, False), x.scale(x.im(a), -2, False, False)], [2]
    a, b = _inputs(x)
    if pos == "dc":
        return [x.add(a, b), x.sub(a, b)], [1, 1]
    return [x.add(a, b), x.rot_out(x.sub(a, b))], [1, 1]


def radb3(x: Ctx, pos: str) -> tuple[list[Val], list[int]]:
    if pos == "dc":
        c0, v1 = _inputs(x)
        tr2 = x.scale(x.re(v1), 2, False, False)
        cr2 = x.add(c0, x.scale(tr2, -0.5, False, False))
        ci3 = x.scale(x.im(v1), 2 * _TAUI)
        return [x.add(c0, tr2), x.add(cr2, ci3), x.sub(cr2, ci3)], [1, 2]
    a, b, c = _inputs(x)
    t2 = x.add(b, c)
    cr = x.add(a, x.scale(t2, -0.5, False, False))
    c3 = x.times_i(x.scale(x.sub(b, c), _TAUI))
    return [x.add(a, t2), x.rot_out(x.add(cr, c3)), x.rot_out(x.sub(cr, c3))], [1, 1, 1]


def radb4(x: Ctx, pos: str) -> tuple[list[Val], list[int]]:
    if pos == "dc":
        c0, v1, c2 = _inputs(x)
        tr2, tr1 = x.add(c0, c2), x.sub(c0, c2)
        tr3, tr4 = (x.scale(f(v1), 2, False, False) for f in (x.re, x.im))
        return [x.add(tr2, tr3), x.sub(tr2, tr3), x.add(tr1, tr4), x.sub(tr1, tr4)], [1, 2, 1]
    if pos == "nyq":
        a, b = _inputs(x)
        ti1, ti2 = x.add(x.im(b), x.im(a)), x.sub(x.im(b), x.im(a))
        tr2, tr1 = x.add(x.re(a), x.re(b)), x.sub(x.re(a), x.re(b))
        return [x.scale(tr2, 2, False, False), x.scale(x.sub(tr1, ti1), math.sqrt(2)),
                x.scale(ti2, 2, False, False), x.scale(x.add(tr1, ti1), -math.sqrt(2))], [2, 2]
    a, b, d, e = _inputs(x)  # V(f), V(f+ido), V(f+2ido) [read at ic], V(f+3ido) [read at ic]
    p, q, r, s = x.add(a, d), x.sub(a, d), x.add(b, e), x.sub(b, e)
    i_s = x.times_i(s)
    return [x.add(p, r), x.rot_out(x.add(q, i_s)), x.rot_out(x.sub(p, r)),
            x.rot_out(x.sub(q, i_s))], [1, 1, 1, 1]


def radb5(x: Ctx, pos: str) -> tuple[list[Val], list[int]]:
    if pos == "dc":
        c0, v1, v2 = _inputs(x)
        ti5, ti4 = (x.scale(x.im(v), 2, False, False) for v in (v1, v2))
        tr2, tr3 = (x.scale(x.re(v), 2, False, False) for v in (v1, v2))
        cr2 = _sum3(x, c0, tr2, _TR11, tr3, _TR12)
        cr3 = _sum3(x, c0, tr2, _TR12, tr3, _TR11)
        ci5 = x.add(x.scale(ti5, _TI11), x.scale(ti4, _TI12))
        ci4 = x.sub(x.scale(ti5, _TI12), x.scale(ti4, _TI11))
        return [x.add(x.add(c0, tr2), tr3), x.add(cr2, ci5), x.sub(cr2, ci5), x.add(cr3, ci4),
                x.sub(cr3, ci4)], [1, 2, 2]
    a, b, c, d, e = _inputs(x)
    t2, t5, t3, t4 = x.add(b, c), x.sub(b, c), x.add(d, e), x.sub(d, e)
    cr2 = _sum3(x, a, t2, _TR11, t3, _TR12)
    cr3 = _sum3(x, a, t2, _TR12, t3, _TR11)
    ik5 = x.times_i(x.add(x.scale(t5, _TI11), x.scale(t4, _TI12)))
    ik4 = x.times_i(x.sub(x.scale(t5, _TI12), x.scale(t4, _TI11)))
    return [x.add(x.add(a, t2), t3), x.rot_out(x.add(cr2, ik5)), x.rot_out(x.add(cr3, ik4)),
            x.rot_out(x.sub(cr3, ik4)), x.rot_out(x.sub(cr2, ik5))], [1] * 5


FORWARD = {2: radf2, 3: radf3, 4: radf4, 5: radf5}
BACKWARD = {2: radb2, 3: radb3, 4: radb4, 5: radb5}
POSITIONS = {2: ("dc", "nyq", "gen"), 3: ("dc", "gen"), 4: ("dc", "nyq", "gen"), 5: ("dc", "gen")}
#: inputs of the special butterflies (else the radix)
_N_IN = {("dc", 3, False): 2, ("dc", 4, False): 3, ("dc", 5, False): 3,
         ("nyq", 2, False): 1, ("nyq", 4, False): 2}


def butterfly(r: int, pos: str, forward: bool, u: float, mu: float):
    """(context, outputs, input weights) of one butterfly."""
    x = Ctx(_N_IN.get((pos, r, forward), r), u, mu)
    if forward:
        return x, FORWARD[r](x, pos), [1] * x.n
    return (x, *BACKWARD[r](x, pos))


def position_constant(r: int, pos: str, forward: bool, u: float, mu: float) -> float:
    """max over the outputs of max_c e_c / w_c, in units of u: the pass adds at most this
    times u times the l1 norm of the block's input subset to each coefficient."""
    x, outs, w = butterfly(r, pos, forward, u, mu)
    # forward general butterflies: inputs 1.. MULPM'd first (|delta_c| <= m1 M_c): roundings
    # act on moduli <= (1 + m1) M_c; delta_c passes the exact butterfly with |p_c| + |q_c|
    m1 = np.array([0.0] + [x.m1] * (x.n - 1)) if forward and pos == "gen" else 0.0
    return max(float(np.max((o.err * (1 + m1) + m1 * o.bound()) / np.asarray(w, float)))
               for o in outs) / u


def twiddle_mu(u: float, ulps: float = LIBM_ULPS) -> float:
    """|w^ - w| for sincos_2pibyn: table entries within tau (angle <= pi/4 within ARG_REL u
    relative; cos, sin within `ulps` ulps <= 2 ulps u), their product (docs, section 3)."""
    tau = (math.pi / 4) * ARG_REL[u] * u + 2 * ulps * u
    return 2 * tau + tau * tau + math.sqrt(2) * 2 * u / (1 - 2 * u) * (1 + tau) ** 2


def factors(n: int) -> list[int]:
    """rfftp::factorize() of a 5-smooth n: 4s, one 2 moved to the front, 3s, 5s."""
    a = (n & -n).bit_length() - 1
    f = [2] * (a % 2) + [4] * (a // 2)
    n >>= a
    for p in (3, 5):
        while n % p == 0:
            f.append(p)
            n //= p
    assert n == 1, "5-smooth lengths only"
    return f


def passes(n: int) -> list[tuple[int, tuple[str, ...]]]:
    """(radix, positions present) per pass; ido = product of the later factors."""
    out, l1 = [], 1
    for ip in factors(n):
        ido = n // (l1 * ip)
        pos = ["dc"]
        if ip in (2, 4) and ido % 2 == 0:
            pos.append("nyq")
        if (ip in (2, 4) and ido > 2) or (ip in (3, 5) and ido > 1):
            pos.append("gen")
        out.append((ip, tuple(pos)))
        l1 *= ip
    return out


@functools.cache
def constant_table(forward: bool, u: float) -> dict:
    mu = twiddle_mu(u)
    return {(r, p): position_constant(r, p, forward, u, mu) for r in POSITIONS
            for p in POSITIONS[r]}


def proven_bound(n: int, forward: bool, u: float, table: dict, l2: bool = False) -> float:
    """E(n) / u: error <= E(n) ||x||_1 (forward), E(n) ||Y||_1 / n (inverse, with the scaling
    by fl(1/n)); l2: the 2-norm form, relative to ||F x||_2 (docs, section 6)."""
    lg = sum(math.log1p(u * (math.sqrt(r) if l2 else 1.0) * max(table[(r, p)] for p in pos))
             for r, pos in passes(n))
    if not forward:
        lg += math.log1p(1.001 * u) + math.log1p(u)
    return math.expm1(lg) / u * 1.001  # (float evaluation of the constants: margin 1e-3)


def smooth_lengths(limit: int) -> list[int]:
    out = [2**a * 3**b * 5**c for a in range(26) for b in range(17) for c in range(12)]
    return sorted(n for n in set(out) if 1 < n <= limit)


@functools.cache
def proven_c(u: float, l2: bool = False, limit: int = MAX_LEN) -> float:
    """max over 5-smooth n <= limit, forward and inverse, of E(n) / (u max(log2 n, 1))."""
    tables = {fwd: constant_table(fwd, u) for fwd in (True, False)}
    return max(proven_bound(n, fwd, u, tables[fwd], l2) / max(math.log2(n), 1.0)
               for n in smooth_lengths(limit) for fwd in (True, False))


# ------------------------------------------------------------------- the proof's constants
def _evaluate(v: Val, z: np.ndarray) -> complex:
    return complex(np.sum(v.p * z + v.q * np.conj(z)))


@pytest.mark.parametrize("r", [2, 3, 4, 5])
def test_transcribed_butterflies_are_dft_butterflies(r: int) -> None:
    """The transcriptions' exact algebra: general butterflies combine every input with
    unit-modulus weights and preserve the 2-norm up to sqrt(r) (a DFT: a wrong sign or
    swapped component breaks it); DC butterflies equal numpy's real DFT of r values."""
    rng = np.random.default_rng(r)
    for forward in (True, False):
        _, outs, _ = butterfly(r, "gen", forward, U64, 0.0)
        assert len(outs) == r
        np.testing.assert_allclose([o.bound() for o in outs], 1.0, rtol=1e-12)
        for _ in range(5):
            z = rng.normal(size=r) + 1j * rng.normal(size=r)
            power = sum(abs(_evaluate(o, z)) ** 2 for o in outs)
            assert power == pytest.approx(r * np.sum(np.abs(z) ** 2), rel=1e-12)
    c = rng.normal(size=r)
    _, outs, _ = butterfly(r, "dc", True, U64, 0.0)
    got = sorted((round(v.real, 9), round(abs(v.imag), 9)) for v in
                 (_evaluate(o, c.astype(complex)) for o in outs))
    want = sorted((round(v.real, 9), round(abs(v.imag), 9)) for v in np.fft.rfft(c))
    assert got == want
    # backward DC: the half spectrum (DC, pairs, Nyquist) in, r times the real signal out
    spec = np.fft.rfft(c)
    x, outs, w = butterfly(r, "dc", False, U64, 0.0)
    z = np.array([spec[0]] + list(spec[1:]))[: x.n]
    got_b = sorted(round(_evaluate(o, z).real, 9) for o in outs)
    assert got_b == sorted(round(v, 9) for v in r * c)
    assert sum(w) == r


def test_fft_constant_covers_the_proof() -> None:
    """privamp's _FFT_C bounds the proven per-log2(N) constant of every 5-smooth length up to
    2^25, forward and inverse, float64 and long double (libm within 2 ulps); twice it (the
    inverse's factor in _inverse_error) bounds the 2-norm form of its l2 route."""
    c_fft = vars(pfft)["_FFT_C"]
    c64, cld = proven_c(U64), proven_c(ULD)
    assert 8.0 < c64 <= cld <= c_fft, (c64, cld, c_fft)
    assert 2.0 * c_fft >= proven_c(U64, l2=True), proven_c(U64, l2=True)
    # every length: the per-log2 rate of every pass but the (single) radix-2 one, whose
    # excess is paid by the first forward / last backward pass (DC only; docs, section 5)
    for u in (U64, ULD):
        for fwd in (True, False):
            t = constant_table(fwd, u)
            rates = {r: max(t[(r, p)] for p in POSITIONS[r]) / math.log2(r) for r in (3, 4, 5)}
            assert 1.001 * max(rates.values()) <= c_fft, rates
            assert 2.0 * c_fft >= 1.001 * max(math.sqrt(r) * rates[r] for r in rates)
            # the first pass (DC) and the radix-2 one, with the inverse's scaling: within
            # the rate times their log2 (>= log2(3) + 1), so E(N) / log2 N <= max rate
            extra = max(t[(r, "dc")] for r in POSITIONS) + max(t[(2, p)] for p in POSITIONS[2])
            assert 1.001 * (extra + 2.001) <= max(rates.values()) * (math.log2(3) + 1.0)
    # the proof's pass constants (docs/fft_roundoff.md, table; long double, libm 2 ulps)
    table = constant_table(True, ULD)
    assert max(table[(3, p)] for p in POSITIONS[3]) == pytest.approx(22.97, abs=0.01)
    assert max(table[(5, p)] for p in POSITIONS[5]) == pytest.approx(25.77, abs=0.01)


def test_privamp_lengths_use_rfftp_not_bluestein() -> None:
    """The lengths privamp transforms (scipy.fft.next_fast_len(n, real=True), its divisors
    by <= 16 and by powers of 2) are 5-smooth, so pocketfft_r picks rfftp: its largest
    prime factor p satisfies p^2 <= n for n >= 50 (Bluestein only when that fails)."""
    rng = np.random.default_rng(1)
    for n in list(rng.integers(2, 2**23, size=300)) + [2**23, 2**23 - 1, 3**14 + 1]:
        m = sfft.next_fast_len(int(n), real=True)
        for f in (f for f in range(1, 17) if m % f == 0):
            assert math.prod(factors(m // f)) == m // f  # (factors asserts 5-smoothness)


# ----------------------------------------------------------- the assumptions, on this machine
def _libm_double():
    lib = ctypes.CDLL(ctypes.util.find_library("m"))
    for fn in (lib.cos, lib.sin):
        fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double]
    return lib.cos, lib.sin


def _exact(v) -> mpmath.mpf:
    return mpmath.mpf(v.as_integer_ratio()[0]) / v.as_integer_ratio()[1]


def _calc(x: int, n: int, ang, cos, sin):
    """pocketfft's sincos_2pibyn::calc (octant reduction), in the given precision."""
    x <<= 3
    if x >= 4 * n:  # lower half: the conjugate of the mirrored angle
        c, s_ = _calc_upper(8 * n - x, n, ang, cos, sin)
        return c, -s_
    return _calc_upper(x, n, ang, cos, sin)


def _calc_upper(x: int, n: int, ang, cos, sin):
    sign = 1
    if x >= 2 * n:  # second quadrant: (-sin, cos) of the reduced angle
        x -= 2 * n
        sign = -1
    if x < n:
        c, s_ = cos(x * ang), sin(x * ang)
    else:
        c, s_ = sin((2 * n - x) * ang), cos((2 * n - x) * ang)
    return (c, s_) if sign == 1 else (-s_, c)


@pytest.mark.parametrize("u", [U64, ULD], ids=["float64", "longdouble"])
def test_twiddles_within_the_proofs_mu(u: float) -> None:
    """pocketfft's twiddles (sincos_2pibyn), replicated for n = 64800 with this machine's
    libm, within mu of exp(2 pi i k / n); libm's cos, sin within LIBM_ULPS ulps."""
    mpmath.mp.prec = 130
    n = 3**4 * 5**2 * 2**5
    pi_ld = np.longdouble(np.pi) + 1.2246467991473532e-16  # (pi's long-double rounding)
    ang = np.longdouble(0.25) * pi_ld / np.longdouble(n)
    ftype, (cos, sin) = (float, _libm_double()) if u == U64 else (np.longdouble, (np.cos, np.sin))
    ang = ftype(ang)  # Thigh(0.25L * pi / n)
    nval = (n + 2) // 2
    shift = 1
    while (1 << shift) * (1 << shift) < nval:
        shift += 1
    mask = (1 << shift) - 1

    def entry(i: int):
        return (ftype(1), ftype(0)) if i == 0 else _calc(i, n, ang, cos, sin)

    v1 = [entry(i) for i in range(mask + 1)]
    v2 = [entry(i * (mask + 1)) for i in range((nval + mask) // (mask + 1))]
    worst_ulp = worst_mu = 0.0
    for k in range(0, n // 2 + 1):
        (a, b), (c, d) = v1[k & mask], v2[k >> shift]
        w = (a * c - b * d, a * d + b * c)
        ref = mpmath.expj(2 * mpmath.pi * k / n)
        err = abs(mpmath.mpc(_exact(w[0]), _exact(w[1])) - ref)
        worst_mu = max(worst_mu, float(err) / u)
    for i in range(1, mask + 1):  # the table entries' cos and sin against mpmath
        x = i << 3
        arg = x * ang if x < n else (2 * n - x) * ang if x < 2 * n else None
        if arg is None:
            continue
        for f, g in ((cos, mpmath.cos), (sin, mpmath.sin)):
            val = f(arg)
            ulp = float(np.spacing(ftype(abs(val))))
            worst_ulp = max(worst_ulp, float(abs(_exact(val) - g(_exact(arg)))) / ulp)
    assert worst_ulp <= LIBM_ULPS, worst_ulp
    assert 0.0 < worst_mu <= twiddle_mu(u) / u, (worst_mu, twiddle_mu(u) / u)


# ------------------------------------------------ scipy's transforms against exact references
SMALL = [2, 3, 4, 5, 6, 8, 9, 10, 12, 15, 16, 18, 20, 25, 27, 30, 32, 36, 40, 45, 48, 50, 60,
         64, 75, 80, 81, 96, 100, 120, 125, 128]


def _inputs_for(n: int, seed: int) -> dict[str, np.ndarray]:
    """Adversarial real inputs: random (both signs, nonnegative), impulses (a coefficient is
    one twiddle), geometric decay, phase-aligned signs (X_k0 = sum |x|), chirp, alternating."""
    rng = np.random.default_rng(seed)
    idx = np.arange(n)
    imp = np.zeros(n)
    imp[1 % n] = 1.0
    k0 = max(n // 3, 1)
    return {
        "normal": rng.normal(size=n),
        "uniform": rng.random(n),
        "impulse": imp,
        "geometric": (1.0 - 3.0 / n) ** idx,
        "aligned": np.sign(np.cos(2 * np.pi * k0 * idx / n + 0.3)),
        "chirp": np.cos(np.pi * idx * idx / n),
        "alternating": (-1.0) ** idx,
    }


def _mp_dft(x, ks) -> list:
    n = len(x)
    xs = [_exact(v) for v in x]
    roots = [mpmath.expj(-2 * mpmath.pi * j / n) for j in range(n)]
    return [mpmath.fsum(xs[t] * roots[(k * t) % n] for t in range(n)) for k in ks]


def _l1(x) -> mpmath.mpf:
    return mpmath.fsum(abs(_exact(v)) for v in x)


def _ratio(err: float, u: float, l1, n: int) -> float:
    return err / (u * float(l1) * max(math.log2(n), 1.0))


@pytest.mark.parametrize("dtype", [np.float64, np.longdouble], ids=["float64", "longdouble"])
def test_rfft_small_lengths_within_proven_bound(dtype) -> None:
    """Every coefficient of scipy's rfft, lengths with factors 2, 3, 4, 5 up to 128, within
    E(n) u ||x||_1 of mpmath's DFT (130 bits) of the same floating input."""
    mpmath.mp.prec = 130
    u = U64 if dtype is np.float64 else ULD
    table = constant_table(True, u)
    worst = 0.0
    for n in SMALL:
        bound_c = proven_bound(n, True, u, table)
        for name, x in _inputs_for(n, n).items():
            x = x.astype(dtype)
            got = sfft.rfft(x)
            ref = _mp_dft(x, range(n // 2 + 1))
            l1 = _l1(x)
            for k, r in enumerate(ref):
                err = abs(mpmath.mpc(_exact(got[k].real), _exact(got[k].imag)) - r)
                assert float(err) <= bound_c * u * float(l1), (n, name, k, float(err) / u)
                worst = max(worst, _ratio(float(err), u, l1, n))
    assert 1e-3 < worst <= proven_c(u), worst  # (a reference equal to scipy's would fail)


@pytest.mark.parametrize("dtype", [np.float64, np.longdouble], ids=["float64", "longdouble"])
def test_irfft_small_lengths_within_proven_bound(dtype) -> None:
    """Every entry of scipy's irfft within E_inv(n) u ||Y||_1 / n of mpmath's inverse DFT of
    the Hermitian extension (imaginary parts of the zero and Nyquist terms dropped, as
    pocketfft's c2r does); spectra with random phases, one term, a chirp, a real rfft."""
    mpmath.mp.prec = 130
    u = U64 if dtype is np.float64 else ULD
    ctype = np.complex128 if dtype is np.float64 else np.clongdouble
    table = constant_table(False, u)
    rng = np.random.default_rng(7)
    worst = 0.0
    for n in SMALL[:-4]:
        h = n // 2 + 1
        one = np.eye(h, dtype=complex)[min(1, h - 1)] * (1.0 + 0.5j)
        spectra = {"phases": np.exp(2j * np.pi * rng.random(h)) * rng.random(h),
                   "one": one, "chirp": np.exp(-1j * np.pi * np.arange(h) ** 2 / n),
                   "rfft": np.fft.rfft(rng.normal(size=n))}
        for name, y in spectra.items():
            y = y.astype(ctype)
            got = sfft.irfft(y, n)
            full = [mpmath.mpc(_exact(v.real), 0 if k in (0, n / 2) else _exact(v.imag))
                    for k, v in enumerate(y)]
            spec = {k: full[k] for k in range(h)}
            spec.update({n - k: mpmath.conj(full[k]) for k in range(1, h) if n - k >= h})
            l1 = mpmath.fsum(abs(v) for v in spec.values())
            roots = [mpmath.expj(2 * mpmath.pi * j / n) for j in range(n)]
            for t in range(n):
                ref = mpmath.fsum(v * roots[(k * t) % n] for k, v in spec.items()).real / n
                err = float(abs(_exact(got[t]) - ref))
                assert err <= proven_bound(n, False, u, table) * u * float(l1) / n, (n, name, t)
                worst = max(worst, _ratio(err * n, u, l1, n))
    assert 1e-3 < worst <= proven_c(u), worst


@pytest.mark.parametrize("n", [3**4 * 2**4, 5**4 * 3, 2**11])
def test_long_double_rfft_mid_lengths_within_proven_bound(n: int) -> None:
    """Long-double rfft, a dozen coefficients (0, 1, n/4, n/3, n/5, n/2, random) vs mpmath."""
    mpmath.mp.prec = 130
    table = constant_table(True, ULD)
    rng = np.random.default_rng(n)
    ks = sorted({0, 1, n // 4, n // 3, n // 5, n // 2, *map(int, rng.integers(0, n // 2, 6))})
    for name in ("normal", "impulse", "aligned", "chirp"):
        x = _inputs_for(n, n)[name].astype(np.longdouble)
        got = sfft.rfft(x)
        l1 = _l1(x)
        for k, r in zip(ks, _mp_dft(x, ks), strict=True):
            err = abs(mpmath.mpc(_exact(got[k].real), _exact(got[k].imag)) - r)
            assert float(err) <= proven_bound(n, True, ULD, table) * ULD * float(l1), (name, k)


@pytest.mark.slow
def test_float64_rfft_at_privamp_lengths_within_proven_bound() -> None:
    """float64 rfft at lengths privamp picks (next_fast_len of 1e6, 2^18 + 1, 3^11 + 1, and
    the low-spectrum shape 64 next_fast_len(...)) against scipy's long-double rfft (whose own
    error, by the same proof, is 2^-11 of the float64 bound): every coefficient within
    E64(n) u ||x||_1 + E_ld(n) u_ld ||x||_1."""
    t64, tld = constant_table(True, U64), constant_table(True, ULD)
    worst = 0.0
    for m in (10**6, 2**18 + 1, 3**11 + 1, 64 * sfft.next_fast_len(20001, real=True)):
        n = sfft.next_fast_len(m, real=True)
        for name, x in _inputs_for(n, 3).items():
            l1 = math.fsum(np.abs(x))
            err = np.abs(sfft.rfft(x) - sfft.rfft(x.astype(np.longdouble)).astype(complex))
            bound = (proven_bound(n, True, U64, t64) * U64
                     + proven_bound(n, True, ULD, tld) * ULD) * l1 * (1 + 1e-6)
            assert float(err.max()) <= bound, (n, name, float(err.max()) / bound)
            worst = max(worst, _ratio(float(err.max()), U64, l1, n))
    assert 1e-3 < worst <= proven_c(U64), worst
