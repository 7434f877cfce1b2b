#!/usr/bin/env python3
"""Markdown table of the MoE dispatch/combine benchmark (moe_run.sh): the R
lines of bench_moe_ushmem / bench_moe_nvshmem, one row per PE count and phase,
with ushmem / NVSHMEM ratios of the best and the mean round.

usage: moe_table.py --run N USHMEM.txt NVSHMEM.txt [--run ...]
Lines: "R moe_<phase> np<N> best <us> mean <us> median <us> p90 <us> max <us>"
(each round's time is the largest over the PEs). "# skipped:" and "# note:"
lines, and a run that printed no numbers, are listed under the table; a
missing number shows as "-"."""
import argparse
import os

PHASES = ("dispatch", "combine", "total")
# where the time goes (moe_common.cuh's phase stamps): the spread of the
# barrier kernel's end over the PEs, the largest gap from a PE's barrier end
# to its dispatch start, the PEs' start skew, then each milestone of the
# slowest PE from the earliest PE's dispatch start
MILESTONES = ("barrier_skew", "launch_gap", "start_skew", "at_issued", "at_quieted", "at_signalled", "at_all_in",
              "at_combine_start", "at_combine_sent", "at_combine_back")
STATS = ("best", "mean", "median", "p90", "max")


def load(path):
    r, notes, done = {}, [], False
    if not os.path.isfile(path):
        return r, ["(%s: missing)" % path]
    with open(path, errors="replace") as f:
        for line in f:
            done = done or line.startswith("# done")
            p = line.split()
            if len(p) == 13 and p[0] == "R" and p[1].startswith("moe_"):
                try:
                    r[p[1][4:]] = {p[i]: float(p[i + 1]) for i in range(3, 13, 2)}
                except ValueError:
                    pass
            elif line.startswith(("# skipped", "# note")):
                notes.append("%s: %s" % (os.path.basename(path), line.strip()))
    if not r:
        notes.append("(%s: no numbers; the run failed or was skipped, see the file)"
                     % os.path.basename(path))
    elif not done:
        notes.append("(%s: did not finish; its numbers may be incomplete, see the file)"
                     % os.path.basename(path))
    return r, notes


def f(v):
    return "-" if v is None else "%.2f" % v


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else "%.2f" % (a / b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", nargs=3, action="append", default=[],
                    metavar=("N", "USHMEM", "NVSHMEM"),
                    help="PE count and the two programs' outputs (repeatable)")
    a = ap.parse_args()
    print("| PEs | phase | ushmem best | NVSHMEM best | best ushmem/NVSHMEM | ushmem mean "
          "| NVSHMEM mean | mean ushmem/NVSHMEM | ushmem median / p90 / max "
          "| NVSHMEM median / p90 / max |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    notes = []
    for n, upath, npath in a.run:
        u, un = load(upath)
        v, vn = load(npath)
        notes += un + vn
        for ph in PHASES:
            us, vs = u.get(ph, {}), v.get(ph, {})
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                n, ph, f(us.get("best")), f(vs.get("best")),
                ratio(us.get("best"), vs.get("best")), f(us.get("mean")), f(vs.get("mean")),
                ratio(us.get("mean"), vs.get("mean")),
                " / ".join(f(us.get(s)) for s in STATS[2:]),
                " / ".join(f(vs.get(s)) for s in STATS[2:])))
    print()
    print("µs per round (dispatch, combine, and the two together), each round's time the "
          "largest over the PEs; ratios below 1: ushmem faster.")
    print()
    print("| PEs | milestone | ushmem mean | NVSHMEM mean | mean ushmem/NVSHMEM "
          "| ushmem best / p90 / max | NVSHMEM best / p90 / max |")
    print("|---|---|---|---|---|---|---|")
    for n, upath, npath in a.run:
        u, _ = load(upath)
        v, _ = load(npath)
        for ms in MILESTONES:
            us, vs = u.get(ms, {}), v.get(ms, {})
            if not us and not vs:
                continue
            print("| %s | %s | %s | %s | %s | %s | %s |" % (
                n, ms, f(us.get("mean")), f(vs.get("mean")), ratio(us.get("mean"), vs.get("mean")),
                " / ".join(f(us.get(s)) for s in ("best", "p90", "max")),
                " / ".join(f(vs.get(s)) for s in ("best", "p90", "max"))))
    print()
    print("Where the time goes (%globaltimer stamps in the kernels, µs): barrier_skew = latest "
          "PE's end of the device barrier before the dispatch - earliest's; launch_gap = the "
          "largest over the PEs of its dispatch start - its barrier end; start_skew = latest PE's "
          "dispatch start - earliest's; at_X = when the slowest PE reached X, from the earliest "
          "PE's dispatch start: issued (last warp done with its fetch_adds and puts), quieted, "
          "signalled (its CTAs' signal adds sent), all_in (every PE's signals arrived), "
          "combine_start, combine_sent (last put_signal issued), combine_back (every row back).")
    if notes:
        print()
        for line in notes:
            print("- " + line)


if __name__ == "__main__":
    main()
