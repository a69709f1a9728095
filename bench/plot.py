#!/usr/bin/env python3
"""Plots of one benchmark run, as SVG text written with the standard library
alone (neither CI machines nor the GPU machine's python3 have matplotlib or
numpy), so every GPU run can leave pictures beside its JSON:

  <kind>-bars.svg      per shape, grouped bars of throughput (TFLOP/s for
                       gemm and attention, GB/s for norms) of tiledsl and of
                       each peer present; above each tiledsl bar its ratio to
                       the fastest peer of that shape
  <kind>-roofline.svg  log-log roofline: arithmetic intensity (FLOP/byte)
                       against achieved TFLOP/s, under the compute and
                       memory ceilings, one point per kernel and shape
  <kind>-ratios.json   per shape, tiledsl's ratio to each peer, to the
                       fastest peer and to the roofline's ceiling (one flat
                       object a shape)

BENCH.json is what bench_gemm, bench_attention or bench_norms write with
--benchmark_format=json (the kind is told by the benchmark names); each
PEER.json is the matching bench/compare_<kind>.py output.

    python3 bench/plot.py OUT_DIR BENCH.json [PEER.json ...] [--peak-tflops T] [--peak-tbps B]

Series: tiledsl is the best of its configurations at a shape (as in the
bench/summarize_*.py tables: gemm's configurations and its autotuned pick,
norms' one-program-a-row and persistent forms); cuBLAS comes from
bench_gemm; torch, Triton (the best of its kernels and configurations),
cuDNN and FA2 from the compare scripts. The warps sweeps and cold compiles
of bench_norms are not plotted. Repeated runs of one benchmark count as
their median.

Counting, for the roofline (the fewest bytes a kernel must move):
  gemm       2*M*N*K FLOPs; (M*K + K*N + M*N) * 2 bytes (bf16 A, B, C)
  attention  4*B*H*N^2*D FLOPs, halved when causal (bench/attention.cpp);
             Q and O of H heads, K and V of H (or H/4, grouped-query)
             heads, bf16: B and D cancel in FLOP/byte; varlen: 4*H*D a
             (query, key) pair of its sequence-length pattern, counted as
             bench/attention.cpp counts them, and Q, K, V, O of 16k tokens
  norms      bytes as bench/norms.cpp counts them (each element read and
             written once, 2 * sizeof(T) an element); it counts no FLOPs,
             so this script counts the row math: softmax 5 an element (max,
             subtract, exp, sum, divide), layernorm 7 (sum, subtract,
             square and add, scale, weight, bias); copy has none and is not
             on the roofline (it is the memory ceiling itself).
The ceilings default to the H200's: bf16 dense 790 TFLOP/s (cuBLAS's best),
copy 3.8 TB/s (docs/perf.md). A file this script cannot interpret (a
benchmark name of no known kind, a missing counter) ends it with status 2
and one line saying what and where.
"""
import argparse
import json
import math
import os
import re
import statistics
import sys
from collections import namedtuple
from xml.sax.saxutils import escape, quoteattr


class InputError(Exception):
    """A file this script cannot interpret; the message says what and where."""


# --- What each kind of run holds ----------------------------------------

UNIT = {"gemm": "TFLOP/s", "attention": "TFLOP/s", "norms": "GB/s"}
SERIES = {  # the order of the bars; tiledsl first
    "gemm": ["tiledsl", "cuBLAS", "torch", "Triton"],
    "attention": ["tiledsl", "cuDNN", "FA2", "Triton"],
    "norms": ["tiledsl", "torch", "Triton"],
}
COLOR = {"tiledsl": "#d62728", "cuBLAS": "#1f77b4", "torch": "#ff7f0e", "Triton": "#2ca02c",
         "cuDNN": "#9467bd", "FA2": "#8c564b"}

# A shape: its label on the x axis, where it sorts, and its FLOP/byte.
Shape = namedtuple("Shape", "label order flop_per_byte")

GEMM_SHAPE = re.compile(r"(\d+)x(\d+)x(\d+)$")


def gemm_shape(text, where):
    m = GEMM_SHAPE.match(text)
    if not m or 0 in map(int, m.groups()):
        raise InputError(f"{where}: '{text}' is not a GEMM shape MxNxK")
    M, N, K = map(int, m.groups())
    # Order 0 everywhere: the shapes stay in the order the run has them.
    return Shape(text, 0, (2.0 * M * N * K) / (2.0 * (M * K + K * N + M * N)))


TOKENS, MODEL_WIDTH, GQA_GROUP = 16384, 2048, 4  # as in bench/attention.cpp
ATTENTION_OPS = ["attention", "attention_gqa", "attention_varlen"]


def varlen_pairs(mean, causal):
    """The (query, key) pairs bench/attention.cpp's attention_varlen counts:
    16k tokens in sequences of mean / 2 + (i * 37 % 101) * mean / 100
    tokens (the last one cut short), a query seeing every key of its
    sequence, or those up to itself when causal."""
    if mean < 2:  # the pattern would never reach 16k tokens
        raise InputError(f"attention_varlen at a mean length of {mean}: expected 2 or more")
    starts = [0]
    i = 0
    while starts[-1] < TOKENS:
        starts.append(min(TOKENS, starts[-1] + mean // 2 + (i * 37 % 101) * mean // 100))
        i += 1
    lengths = [b - a for a, b in zip(starts, starts[1:])]
    return sum(0.5 * n * (n + 1.0) if causal else float(n) * n for n in lengths)


def attention_shape(op, d, causal, n):
    """op: attention (B = 16k / N sequences of N), attention_gqa (the same,
    4 query heads a key/value head) or attention_varlen (16k tokens in
    sequences of lengths around N); H = 2048 / D; bf16 Q, K, V and O."""
    h = MODEL_WIDTH / d
    if op == "attention_varlen":
        flops = 4.0 * h * d * varlen_pairs(n, causal)
        nbytes = 2.0 * 4 * TOKENS * h * d
    else:
        b = TOKENS / n
        kv = h / GQA_GROUP if op == "attention_gqa" else h
        flops = 4.0 * b * h * n * n * d * (0.5 if causal else 1.0)
        nbytes = 2.0 * (2 * b * h * n * d + 2 * b * kv * n * d)  # Q, O; K, V
    prefix = {"attention": "", "attention_gqa": "GQA ", "attention_varlen": "varlen "}[op]
    label = f"{prefix}d{d}{' causal' if causal else ''} N{'~' if op == 'attention_varlen' else '='}{n}"
    return Shape(label, (ATTENTION_OPS.index(op), d, causal, n), flops / nbytes)


NORM_OPS = ["copy", "softmax", "layernorm"]
NORM_FLOPS = {"copy": 0, "softmax": 5, "layernorm": 7}  # an element
DTYPES = {"bf16": 2, "f32": 4}  # bytes an element


def norm_shape(op, dtype, n):
    label = f"{op} {dtype}" + (f" {n}" if op != "copy" else "")
    order = (list(DTYPES).index(dtype), NORM_OPS.index(op), n)
    return Shape(label, order, NORM_FLOPS[op] / (2.0 * DTYPES[dtype]))


# --- Reading bench_*.json -------------------------------------------------

ATTENTION_NAME = re.compile(r"(attention|attention_gqa|attention_varlen)<(\d+), (true|false)>$")
NORM_NAME = re.compile(r"(copy|softmax|layernorm)(_persistent|_warps)?<(tl::bf16|float)((?:, \d+)*)>$")
CPP_DTYPE = {"tl::bf16": "bf16", "float": "f32"}
KNOWN_NAMES = ("gemm_tiledsl/MxNxK/<config>, gemm_cublas/MxNxK, gemm_paired/MxNxK/<config>, attention<D, causal>/N, "
               "attention_gqa<D, causal>/N, attention_varlen<D, causal>/N, attention_tuned<D, causal>/N, attention_bhn<D, causal>/B/H/N, copy<T>, softmax<T, N>, "
               "layernorm<T, N> and their _persistent and _warps forms, softmax_cold_compile")


def parse_bench_name(name):
    """(kind, shape, series) of a Google Benchmark name; shape is None for a
    benchmark of a known kind that is not plotted; None for a name of no
    known kind."""
    parts = name.split("/")
    family = parts[0]
    arg = parts[1] if len(parts) > 1 else ""
    if family in ("gemm_tiledsl", "gemm_cublas") and GEMM_SHAPE.match(arg):
        series = "tiledsl" if family == "gemm_tiledsl" else "cuBLAS"
        return "gemm", gemm_shape(arg, name), series
    if family == "gemm_paired" and GEMM_SHAPE.match(arg):  # in summarize_gemm.py's table only
        return "gemm", None, None
    m = ATTENTION_NAME.match(family)
    if m and arg.isdigit() and int(arg) > 0 and int(m.group(2)) > 0:
        shape = attention_shape(m.group(1), int(m.group(2)), m.group(3) == "true", int(arg))
        return "attention", shape, "tiledsl"
    if family == "softmax_cold_compile":
        return "norms", None, None
    if family.startswith(("attention_tuned<", "attention_bhn<")):  # in summarize_attention.py's tables only
        return "attention", None, None
    m = NORM_NAME.match(family)
    if m:
        op, form, dtype, ints = m.group(1), m.group(2), CPP_DTYPE[m.group(3)], m.group(4)
        if op == "copy" and not form and not ints:
            return "norms", norm_shape(op, dtype, 0), "tiledsl"
        if op != "copy" and ints:
            if form == "_warps":  # the warps sweep: not plotted, as in summarize_norms.py
                return "norms", None, None
            return "norms", norm_shape(op, dtype, int(re.findall(r"\d+", ints)[0])), "tiledsl"
    return None


def number(record, key, where):
    """record[key] as a positive float, or an InputError saying it is not there."""
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where}: no numeric '{key}' counter")
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}: '{key}' is {value}, expected a positive number")
    return float(value)


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read it ({e.strerror})")
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise InputError(f"{path}: not JSON ({e})")


class Results:
    """Throughput samples per (shape, series, configuration), and the kind."""

    def __init__(self):
        self.kind = None
        self.shapes = {}   # label -> Shape, in the order first seen
        self.samples = {}  # (label, series) -> {configuration: [values]}
        self.notes = []

    def set_kind(self, kind, where):
        if self.kind is None:
            self.kind = kind
        elif kind != self.kind:
            raise InputError(f"{where}: {kind} results mixed with {self.kind} ones")

    def add_shape(self, shape):
        self.shapes.setdefault(shape.label, shape)

    def add(self, shape, series, config, value):
        self.add_shape(shape)
        self.samples.setdefault((shape.label, series), {}).setdefault(config, []).append(value)

    def value(self, label, series):
        """The best configuration's median, or None."""
        configs = self.samples.get((label, series))
        return max(statistics.median(v) for v in configs.values()) if configs else None


def read_bench(path, results):
    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise InputError(f"{path}: not Google Benchmark JSON (no 'benchmarks' list)")
    for i, b in enumerate(data["benchmarks"]):
        where = f"{path}: benchmarks[{i}]"
        if not isinstance(b, dict) or not isinstance(b.get("name"), str):
            raise InputError(f"{where}: not an object with a 'name'")
        name = b["name"]
        if b.get("run_type") == "aggregate":  # mean/median/stddev of repetitions
            continue
        parsed = parse_bench_name(name)
        if parsed is None:
            raise InputError(f"{where}: unknown benchmark name '{name}' (known: {KNOWN_NAMES})")
        kind, shape, series = parsed
        results.set_kind(kind, f"{where} ({name})")
        if shape is None:
            continue
        if b.get("error_occurred"):
            results.add_shape(shape)  # on the axis, without this bar
            message = str(b.get("error_message", "")).strip()
            results.notes.append(f"skipped {name}: {message.splitlines()[0] if message else 'error'}")
            continue
        value = number(b, UNIT[kind], f"{where} ({name})")
        results.add(shape, series, name.split("/iterations")[0], value)


# --- Reading compare_*.py JSON ----------------------------------------------

PEER_SERIES = {
    "gemm": {"torch": "torch", "triton": "Triton", "triton_tma": "Triton", "triton_tma_ws": "Triton"},
    "attention": {"cudnn": "cuDNN", "fa2": "FA2", "triton": "Triton", "triton_best": "Triton"},
    "norms": {"torch": "torch", "triton": "Triton"},
}
NORM_PEER_OP = re.compile(r"(copy|softmax|layernorm)(_persistent_\w+)?$")


def field(row, key, kind, where):
    """row[key] if it is of `kind` (int, bool or str; a bool is no int here)."""
    value = row.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InputError(f"{where}: no {kind.__name__} '{key}'")
    return value


def parse_peer_row(row, where):
    """(kind, shape, series) of one compare_*.py row; shape None for a row
    of a known kind that is not plotted."""
    if not isinstance(row, dict):
        raise InputError(f"{where}: not an object")
    op = row.get("op")
    if "shape" in row:  # compare_gemm.py
        kind, shape = "gemm", gemm_shape(str(row["shape"]), where)
    elif op in ATTENTION_OPS:  # compare_attention.py
        d, n = field(row, "d", int, where), field(row, "n", int, where)
        if d <= 0 or n <= 0:
            raise InputError(f"{where}: d and n must be positive")
        kind, shape = "attention", attention_shape(op, d, field(row, "causal", bool, where), n)
    elif op == "attention_bhn":  # B x H x N given: in summarize_attention.py's table only
        return "attention", None, None
    elif isinstance(op, str) and (op == "softmax_cold_compile" or re.match(r"softmax_warps\d+$", op)):
        return "norms", None, None  # compare_norms.py's cold compile and warps sweep
    elif isinstance(op, str) and NORM_PEER_OP.match(op):  # compare_norms.py
        dtype, n = field(row, "dtype", str, where), field(row, "n", int, where)
        if dtype not in DTYPES:
            raise InputError(f"{where}: unknown dtype '{dtype}' (known: {', '.join(DTYPES)})")
        kind, shape = "norms", norm_shape(NORM_PEER_OP.match(op).group(1), dtype, n)
    else:
        raise InputError(f"{where}: a row of no known kind (op {op!r}; expected compare_gemm.py's 'shape' "
                         "or compare_attention.py's or compare_norms.py's 'op')")
    impl = row.get("impl")
    if impl not in PEER_SERIES[kind]:
        raise InputError(f"{where}: unknown {kind} impl {impl!r} (known: {', '.join(PEER_SERIES[kind])})")
    return kind, shape, PEER_SERIES[kind][impl]


def read_peer(path, results):
    data = load_json(path)
    if not isinstance(data, list) or not data:
        raise InputError(f"{path}: not compare_*.py JSON (expected a non-empty list of result rows)")
    for i, row in enumerate(data):
        where = f"{path}: row {i}"
        kind, shape, series = parse_peer_row(row, where)
        results.set_kind(kind, where)
        if shape is None:
            continue
        if "error" in row:
            results.add_shape(shape)
            results.notes.append(f"skipped {row['impl']} {shape.label}: {str(row['error'])[:120]}")
            continue
        config = f"{row['impl']} {row.get('op', '')} {row.get('config', '')}"
        results.add(shape, series, config, number(row, UNIT[kind], where))


# --- Ratios -----------------------------------------------------------------

def attainable_tflops(flop_per_byte, peak_tflops, peak_tbps):
    return min(peak_tflops, peak_tbps * flop_per_byte)


def ceiling_ratio(kind, value, shape, peak_tflops, peak_tbps):
    """value / what the roofline allows at this shape's FLOP/byte."""
    if UNIT[kind] == "TFLOP/s":
        return value / attainable_tflops(shape.flop_per_byte, peak_tflops, peak_tbps)
    # GB/s: bytes at the copy rate, unless the FLOPs bind first
    limit_tbps = peak_tbps if shape.flop_per_byte == 0 else min(peak_tbps, peak_tflops / shape.flop_per_byte)
    return value / 1e3 / limit_tbps


def tflops_of(kind, value, shape):
    return value if UNIT[kind] == "TFLOP/s" else value / 1e3 * shape.flop_per_byte


def significant(x, digits):
    """x rounded to `digits` significant digits (None stays None)."""
    return None if x is None else float(f"{x:.{digits}g}")


def table(results, peak_tflops, peak_tbps):
    """(series present, rows): one row a shape, values and ratios."""
    kind = results.kind
    shapes = sorted(results.shapes.values(), key=lambda s: s.order)  # stable: gemm keeps run order
    present = [s for s in SERIES[kind] if any(results.value(sh.label, s) for sh in shapes)]
    rows = []
    for shape in shapes:
        values = {s: results.value(shape.label, s) for s in present}
        ours = values.get("tiledsl")
        peers = {s: v for s, v in values.items() if s != "tiledsl" and v}
        best = max(peers, key=peers.get) if peers else None
        row = {"shape": shape.label, "flop_per_byte": significant(shape.flop_per_byte, 6)}
        row.update({s: significant(v, 6) for s, v in values.items()})
        for s in present[1:]:
            row[f"tiledsl/{s}"] = significant(ours / values[s], 5) if ours and values[s] else None
        row["best_peer"] = best
        row["tiledsl/best_peer"] = significant(ours / peers[best], 5) if ours and best else None
        row["tiledsl/ceiling"] = (significant(ceiling_ratio(kind, ours, shape, peak_tflops, peak_tbps), 5)
                                  if ours else None)
        rows.append((shape, values, row))
    return present, rows


# --- SVG --------------------------------------------------------------------

class Svg:
    """SVG text built element by element; attributes named as in SVG
    (class_ for class, underscores elsewhere become dashes)."""

    def __init__(self, width, height):
        self.width, self.height = width, height
        self.parts = [f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>']

    @staticmethod
    def attrs(attrs):
        out = []
        for key, value in attrs.items():
            name = "class" if key == "class_" else key.replace("_", "-")
            if isinstance(value, float):
                value = f"{value:.2f}"
            out.append(f" {name}={quoteattr(str(value))}")
        return "".join(out)

    def add(self, tag, text=None, title=None, **attrs):
        inner = (f"<title>{escape(title)}</title>" if title else "") + (escape(text) if text is not None else "")
        self.parts.append(f"<{tag}{self.attrs(attrs)}>{inner}</{tag}>" if inner else f"<{tag}{self.attrs(attrs)}/>")

    def text(self, x, y, text, size=12, anchor="start", rotate=None, **attrs):
        if rotate is not None:
            attrs["transform"] = f"rotate({rotate:.1f} {x:.2f} {y:.2f})"
        self.add("text", text, x=x, y=y, font_size=size, text_anchor=anchor, font_family="sans-serif", **attrs)

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write('<?xml version="1.0" encoding="UTF-8"?>\n')
            f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                    f'viewBox="0 0 {self.width} {self.height}">\n')
            f.write("\n".join(self.parts))
            f.write("\n</svg>\n")


def nice_step(span, ticks=5):
    """A step of 1, 2 or 5 times a power of ten giving about `ticks` ticks."""
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def log_ticks(lo, hi):
    """1, 2 and 5 times the powers of ten from below lo to above hi."""
    return [m * 10.0 ** k for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
            for m in (1, 2, 5)]


def log_range(values, margin=1.3):
    """Log-axis bounds on ticks of log_ticks, a margin outside the values."""
    lo, hi = min(values) / margin, max(values) * margin
    ticks = log_ticks(lo, hi)
    return max(t for t in ticks if t <= lo * 1.0001), min(t for t in ticks if t >= hi * 0.9999)


def legend(svg, x, y, series, horizontal):
    for s in series:
        svg.add("rect", x=x, y=y - 10, width=12, height=12, fill=COLOR[s], class_="legend")
        svg.text(x + 16, y, s)
        if horizontal:
            x += 30 + 8 * len(s)
        else:
            y += 18


def draw_bars(path, kind, present, rows):
    unit = UNIT[kind]
    bar, gap = 14, 20
    group = bar * len(present) + gap
    left, right, top, bottom, plot_h = 70, 20, 90, 130, 360
    plot_w = group * len(rows)
    width = max(left + plot_w + right, 600)
    svg = Svg(width, top + plot_h + bottom)
    y0 = top + plot_h
    top_value = max(v for _, values, _ in rows for v in values.values() if v) * 1.18
    step = nice_step(top_value)
    top_value = math.ceil(top_value / step) * step

    def y(v):
        return y0 - plot_h * v / top_value

    svg.text(left, 24, f"{kind}: {unit} per shape", size=15)
    svg.text(left, 44, "the number above a tiledsl bar: tiledsl / the fastest peer at that shape", size=12)
    legend(svg, left, 70, present, horizontal=True)
    tick = 0.0
    while tick <= top_value + step / 2:
        svg.add("line", x1=left, x2=left + plot_w, y1=y(tick), y2=y(tick), stroke="#dddddd")
        svg.text(left - 6, y(tick) + 4, f"{tick:g}", size=11, anchor="end")
        tick += step
    svg.text(18, top + plot_h / 2, unit, anchor="middle", rotate=-90)
    for i, (shape, values, row) in enumerate(rows):
        x0 = left + i * group + gap / 2
        for j, s in enumerate(present):
            v = values[s]
            if not v:
                continue
            svg.add("rect", title=f"{s}, {shape.label}: {v:.4g} {unit}", class_="bar", data_shape=shape.label,
                    data_series=s, x=x0 + j * bar, y=y(v), width=bar - 1, height=y0 - y(v), fill=COLOR[s])
            if s == "tiledsl" and row["tiledsl/best_peer"] is not None:
                svg.text(x0 + bar / 2 + 4, y(v) - 4, f"{row['tiledsl/best_peer']:.2f}×", size=10, rotate=-90,
                         class_="ratio", data_shape=shape.label)
        svg.text(x0 + group / 2 - gap / 2, y0 + 14, shape.label, size=11, anchor="end", rotate=-35)
    svg.add("line", x1=left, x2=left + plot_w, y1=y0, y2=y0, stroke="black")
    svg.add("line", x1=left, x2=left, y1=top, y2=y0, stroke="black")
    svg.save(path)


def draw_roofline(path, kind, present, rows, peak_tflops, peak_tbps):
    # Draw order puts tiledsl's points on top of its peers'.
    points = [(shape, s, shape.flop_per_byte, tflops_of(kind, values[s], shape))
              for s in reversed(present) for shape, values, _ in rows if values[s] and shape.flop_per_byte > 0]
    ridge = peak_tflops / peak_tbps
    x_lo, x_hi = log_range([p[2] for p in points] + [ridge])
    y_lo, y_hi = log_range([p[3] for p in points] + [peak_tflops, peak_tbps * x_lo])
    left, right, top, bottom, plot_w, plot_h = 70, 190, 50, 60, 560, 420
    svg = Svg(left + plot_w + right, top + plot_h + bottom)

    def px(x):
        return left + plot_w * math.log10(x / x_lo) / math.log10(x_hi / x_lo)

    def py(t):
        return top + plot_h - plot_h * math.log10(t / y_lo) / math.log10(y_hi / y_lo)

    svg.text(left, 24, f"{kind}: roofline, {peak_tflops:g} TFLOP/s and {peak_tbps:g} TB/s ceilings", size=15)
    # Grid lines at 1, 2 and 5 times the powers of ten; the 2s and 5s
    # labelled only where the axis spans few decades.
    for lo, hi, horizontal in ((x_lo, x_hi, False), (y_lo, y_hi, True)):
        few = math.log10(hi / lo) <= 2.5
        for v in log_ticks(lo, hi):
            if not lo <= v <= hi:
                continue
            major = abs(math.log10(v) - round(math.log10(v))) < 1e-9
            color = "#cccccc" if major else "#eeeeee"
            label = f"{v:g}" if major or few else None
            if horizontal:
                svg.add("line", x1=left, x2=left + plot_w, y1=py(v), y2=py(v), stroke=color)
                if label:
                    svg.text(left - 6, py(v) + 4, label, size=11, anchor="end")
            else:
                svg.add("line", x1=px(v), x2=px(v), y1=top, y2=top + plot_h, stroke=color)
                if label:
                    svg.text(px(v), top + plot_h + 16, label, size=11, anchor="middle")
    svg.text(left + plot_w / 2, top + plot_h + 40, "arithmetic intensity, FLOP/byte", anchor="middle")
    svg.text(18, top + plot_h / 2, "achieved TFLOP/s", anchor="middle", rotate=-90)
    # The ceiling: the memory slope up to the ridge, then flat.
    line = [(x, attainable_tflops(x, peak_tflops, peak_tbps)) for x in (x_lo, ridge, x_hi) if x_lo <= x <= x_hi]
    svg.add("polyline", class_="ceiling", fill="none", stroke="black", stroke_width=2,
            points=" ".join(f"{px(x):.2f},{py(t):.2f}" for x, t in line))
    svg.text(left + plot_w - 4, py(peak_tflops) - 6, f"{peak_tflops:g} TFLOP/s (bf16 dense)", size=11, anchor="end")
    # The memory ceiling's label, along its slope, past the points below it.
    slope_end = min(ridge, x_hi)
    at = x_lo * (slope_end / x_lo) ** 0.6
    angle = math.degrees(math.atan2(py(peak_tbps * slope_end) - py(peak_tbps * x_lo), px(slope_end) - px(x_lo)))
    svg.text(px(at), py(peak_tbps * at) - 6, f"{peak_tbps:g} TB/s (copy)", size=11, anchor="middle", rotate=angle)
    # The kernels of one shape share its FLOP/byte: each series a few
    # pixels to the side, so that equal figures do not hide each other.
    for shape, s, x, t in points:
        dodge = 5 * (present.index(s) - (len(present) - 1) / 2)
        svg.add("circle", title=f"{s}, {shape.label}: {x:.3g} FLOP/byte, {t:.4g} TFLOP/s", class_="point",
                data_shape=shape.label, data_series=s, cx=px(x) + dodge, cy=py(t), r=4.5, fill=COLOR[s],
                fill_opacity=0.85, stroke="black", stroke_width=0.5)
    legend(svg, left + plot_w + 20, top + 10, present, horizontal=False)
    note_y = top + 24 + 18 * len(present)
    svg.text(left + plot_w + 20, note_y, "a shape's points: side by side", size=11)
    svg.text(left + plot_w + 20, note_y + 16, "at its FLOP/byte", size=11)
    if kind == "norms":
        svg.text(left + plot_w + 20, note_y + 36, "copy: no FLOPs, not shown", size=11)
    svg.add("rect", x=left, y=top, width=plot_w, height=plot_h, fill="none", stroke="black")
    svg.save(path)


# --- Main -------------------------------------------------------------------

def main(argv):
    parser = argparse.ArgumentParser(description="SVG plots and ratios of a bench_gemm, bench_attention or "
                                     "bench_norms JSON and its compare_*.py JSON.")
    parser.add_argument("out_dir", metavar="OUT_DIR")
    parser.add_argument("bench_json", metavar="BENCH.json")
    parser.add_argument("peer_json", metavar="PEER.json", nargs="*")
    parser.add_argument("--peak-tflops", type=float, default=790.0, metavar="T",
                        help="compute ceiling, TFLOP/s (default 790: H200 bf16 dense, cuBLAS's best)")
    parser.add_argument("--peak-tbps", type=float, default=3.8, metavar="B",
                        help="memory ceiling, TB/s (default 3.8: H200 copy)")
    args = parser.parse_args(argv)
    if args.peak_tflops <= 0 or args.peak_tbps <= 0:
        parser.error("the ceilings must be positive")

    results = Results()
    read_bench(args.bench_json, results)
    for peer in args.peer_json:
        read_peer(peer, results)
    if results.kind is None or not results.samples:
        raise InputError(f"{args.bench_json}: no {UNIT.get(results.kind, 'throughput')} results to plot")
    present, rows = table(results, args.peak_tflops, args.peak_tbps)

    kind = results.kind
    try:
        os.makedirs(args.out_dir, exist_ok=True)
        out = {name: os.path.join(args.out_dir, f"{kind}-{name}")
               for name in ("bars.svg", "roofline.svg", "ratios.json")}
        draw_bars(out["bars.svg"], kind, present, rows)
        draw_roofline(out["roofline.svg"], kind, present, rows, args.peak_tflops, args.peak_tbps)
        with open(out["ratios.json"], "w", encoding="utf-8") as f:
            json.dump({"kind": kind, "unit": UNIT[kind], "peak_tflops": args.peak_tflops, "peak_tbps": args.peak_tbps,
                       "series": present, "shapes": [row for _, _, row in rows]}, f, indent=1)
            f.write("\n")
    except OSError as e:
        raise InputError(f"{args.out_dir}: cannot write ({e.strerror}: {e.filename})")
    for note in results.notes:
        print(note)
    for path in out.values():
        print(f"wrote {path}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except InputError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        sys.exit(2)
