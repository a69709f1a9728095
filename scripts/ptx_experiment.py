#!/usr/bin/env python3
"""Rewrites a kernel's PTX in place before ptxas assembles it, for timing a
change to the generated code on the GPU machine before building it into
the compiler (scripts/ptxas-experiment.sh runs it as TILEDSL_PTXAS).
PTX_EXPERIMENT picks the rewrite:

  none        nothing (the baseline, through the same path)
  fence-wait  a `fence.acq_rel.cta` right before each `wgmma.wait_group 0`
              followed within a few lines by an mbarrier arrive (attention's
              P V wait: keeps ptxas from scheduling it at the top of the
              softmax's block; docs/perf.md run 91)
  tie-arrive  that arrive made to depend on the last f32 fma or add before
              the wait (x == x), so ptxas cannot move it up

Prints to stderr how many places it rewrote.

    python3 scripts/ptx_experiment.py kernel.ptx
"""
import os
import re
import sys


def arrive_follows(lines, i):
    return any("mbarrier.arrive.shared::cta" in x for x in lines[i:i + 12])


def main(path):
    what = os.environ.get("PTX_EXPERIMENT", "none")
    lines = open(path).read().split("\n")
    out, done = [], 0
    for i, line in enumerate(lines):
        waits = "wgmma.wait_group.sync.aligned 0;" in line and arrive_follows(lines, i)
        if waits and what == "fence-wait":
            at = len(out) - 1 if out and "begin inline asm" in out[-1] else len(out)
            out.insert(at, "\tfence.acq_rel.cta;")
            done += 1
        if waits and what == "tie-arrive":
            dep = next((m.group(1) for x in reversed(out[-80:])
                        if (m := re.match(r"\s*(?:fma\.rn\.ftz\.f32|add\.ftz\.f32)\s+(%r\d+),", x))), None)
            for j in range(i + 1, min(len(lines), i + 14)):
                if lines[j].startswith("setp.ne.u32 tl_p,") and dep:
                    lines[j] += f"\n.reg .pred tl_q;\nsetp.eq.f32 tl_q, {dep}, {dep};\nand.pred tl_p, tl_p, tl_q;"
                    done += 1
                    break
        out.append(line)
    open(path, "w").write("\n".join(out))
    sys.stderr.write(f"ptx_experiment {what}: {done} places\n")


if __name__ == "__main__":
    main(sys.argv[1])
