"""Print the runs of scripts/device_check.sh e2eprof's timelines.txt, in seconds from each process's start.

usage: show_timelines.py TIMELINES [TEXT ...]   (only the runs whose header holds one of the TEXTs; rows of
       pipeline steps, exports, stores and backend runs under 30 ms are left out)
Each run is a header `## <input> <arm> round <r>: shell start S end E` and the TSV rows of $GPUEXT_TIMELINE
(gpuext/timeline.py): what, thread, start, end (wall clock).
"""
import re
import sys


def main(path: str, want: list[str]) -> None:
    for block in open(path).read().split("## ")[1:]:
        lines = block.strip().split("\n")
        head = lines[0]
        if want and not any(w in head for w in want):
            continue
        m = re.search(r"(.*): shell start ([\d.]+) end ([\d.]+)", head)
        s0, e0 = float(m.group(2)), float(m.group(3))
        print(f"### {m.group(1)}: wall {e0 - s0:.3f} s")
        for row in lines[2:]:
            what, thread, a, b = row.split("\t")
            a, b = float(a) - s0, float(b) - s0
            if re.search(r"step|export|store|cuda run", what) and b - a < 0.03:
                continue
            print(f"  {a:7.3f} {b:7.3f} {b - a:6.3f}  {thread[:22]:22s} {what}")
        print(f"  {'':15s} {e0 - s0:6.3f}  process end")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
