#!/usr/bin/env python3
# Derives the constants of lib/codegen/math_expansions.h: the multi-part
# splits of ln 2, pi/2, 1/ln 2 and 2/sqrt(pi), and the polynomial fits
# (mpmath's Chebyshev fits, near-minimax, computed in 256-bit arithmetic and
# rounded to double). Prints each as a C++ hex-float initializer and the fit's
# error after rounding, so that a reader can check where every number of the
# header came from and regenerate them. Needs mpmath (pip install mpmath);
# the build does not run it.
import mpmath as mp

mp.mp.prec = 256


def dbl(v):
    """v rounded to the nearest double, as an exact mpf."""
    return mp.mpf(float(mp.mpf(v)))


def hexf(v):
    return float(v).hex()


def split(name, v, parts, bits=None):
    """v = parts doubles, each the rounding of what is left; the first one
    rounded to `bits` significant bits when given (so that small integer
    multiples of it are exact)."""
    out, rest = [], mp.mpf(v)
    for i in range(parts):
        if i == 0 and bits:
            e = mp.floor(mp.log(abs(rest), 2))
            q = mp.mpf(2) ** (e - bits + 1)
            p = mp.nint(rest / q) * q
        else:
            p = dbl(rest)
        out.append(p)
        rest -= p
    print(f"// {name}: " + ", ".join(hexf(p) for p in out) + f"   (left over {mp.nstr(rest, 3)})")


def fit(name, f, lo, hi, degree, rel=None):
    """Chebyshev fit of f on [lo, hi]; prints coefficients lowest first and
    the largest error of the double-rounded polynomial on a fine grid
    (relative to `rel(x)` when given, else absolute)."""
    poly, _ = mp.chebyfit(f, [lo, hi], degree + 1, error=True)
    c = [dbl(p) for p in reversed(poly)]
    worst = mp.mpf(0)
    for i in range(2001):
        x = lo + (hi - lo) * i / 2000
        p = mp.mpf(0)
        for a in reversed(c):
            p = p * x + a
        err = abs(p - f(x))
        if rel:
            err /= abs(rel(x))
        worst = max(worst, err)
    print(f"// {name}: degree {degree} on [{mp.nstr(lo, 5)}, {mp.nstr(hi, 5)}], error {mp.nstr(worst, 3)}"
          f" (2^{mp.nstr(mp.log(worst, 2), 4) if worst else '-inf'})")
    print("  " + ", ".join(hexf(a) for a in c))


def safe(f, at0):
    return lambda x: at0 if x == 0 else f(x)


ln2, pi = mp.log(2), mp.pi
split("ln2 (k * hi exact for |k| < 2^11)", ln2, 2, bits=42)
split("ln2 double-double", ln2, 2)
split("1/ln2 double-double", 1 / ln2, 2)
split("pi/2 in three doubles", pi / 2, 3)
split("2/pi", 2 / pi, 1)
split("2/sqrt(pi) double-double", 2 / mp.sqrt(pi), 2)

# exp(r) = 1 + r + r^2 q(r), |r| <= ln2/2 (a little more: k rounds x/ln2).
h = ln2 / 2 * (1 + mp.mpf(2) ** -20)
fit("exp: q(r) = (e^r - 1 - r) / r^2", safe(lambda r: (mp.exp(r) - 1 - r) / r**2, mp.mpf(1) / 2), -h, h, 10)

# log(1 + f) = 2 atanh(s), s = f / (2 + f), |s| <= (sqrt2 - 1)/(sqrt2 + 1):
# log(1 + f) = 2s + s z P(z), z = s^2.
smax = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1) * (1 + mp.mpf(2) ** -20)
fit("log: P(z) = (2 atanh(sqrt z)/sqrt z - 2) / z", safe(lambda z: (2 * mp.atanh(mp.sqrt(z)) / mp.sqrt(z) - 2) / z,
                                                          mp.mpf(2) / 3), 0, smax**2, 8)

# sin r = r + r z S(z), cos r = 1 - z/2 + z^2 C(z), z = r^2, |r| <= pi/4 (a little more).
zmax = (pi / 4 * (1 + mp.mpf(2) ** -20)) ** 2
fit("sin: S(z) = (sin(sqrt z)/sqrt z - 1) / z", safe(lambda z: (mp.sin(mp.sqrt(z)) / mp.sqrt(z) - 1) / z,
                                                      -mp.mpf(1) / 6), 0, zmax, 7)
fit("cos: C(z) = (cos(sqrt z) - 1 + z/2) / z^2", safe(lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z**2,
                                                       mp.mpf(1) / 24), 0, zmax, 7)

# erf x = x (2/sqrt(pi) + z E(z)), z = x^2, |x| <= 1.
c0 = 2 / mp.sqrt(pi)
fit("erf: E(z) = (erf(sqrt z)/sqrt z - 2/sqrt(pi)) / z",
    safe(lambda z: (mp.erf(mp.sqrt(z)) / mp.sqrt(z) - c0) / z, -c0 / 3), 0, 1, 17)

# erfc x = exp(-x^2) F(x) for 1 <= x < 6, F fitted on pieces in t = x - a.
for a, b, d in [(1, 2, 17), (2, 3.5, 17), (3.5, 6, 17)]:
    a, b = mp.mpf(a), mp.mpf(b)
    F = lambda t, a=a: mp.erfc(t + a) * mp.exp((t + a) ** 2)
    fit(f"erfc: F(a + t) = erfc(a + t) exp((a + t)^2), a = {mp.nstr(a, 3)}", F, 0, b - a, d, rel=F)

# 2/pi as 19 64-bit words, most significant first (Payne-Hanek's table).
mp.mp.prec = 1400
bits = int(mp.floor(2 / mp.pi * mp.mpf(2) ** (64 * 19)))
words = [(bits >> (64 * (18 - i))) & (2**64 - 1) for i in range(19)]
print("// 2/pi words: " + ", ".join(f"0x{w:016x}" for w in words))
