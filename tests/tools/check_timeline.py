#!/usr/bin/env python3
"""Checks a merged dist_sync timeline (dtrun --timeline FILE):

 - it is trace-event JSON (parsed here, not read by eye): an object whose
   traceEvents are complete events ("ph":"X") with name, ts, dur >= 0, pid,
   tid (or async "b"/"e" pairs with an id, for spans that overlap on a
   thread: a worker's requests in flight), and metadata naming the processes;
 - every process of the job has a row: worker 0..W-1, server 0..S-1, the
   scheduler, each with events;
 - on each thread, complete events nest: one that starts inside another ends inside
   it (no partial overlap);
 - causality across processes: for every key part and round, every server
   "sum" of it ends before any worker's pull of it ("pull" or "pushpull")
   ends; and every matched pull has a sum (the arguments key, begin and
   round name the part's round on both sides).

  check_timeline.py FILE SERVERS WORKERS

Prints what the timeline holds (the time of each worker's step in its
phases) and exits 1 naming the first violation.
"""
import collections
import json
import sys


def fail(text):
    print("FAIL: " + text)
    sys.exit(1)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    path, servers, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(path, encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            fail(f"{path} is not JSON: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("no traceEvents array")

    names = {}
    events = []      # complete events, and async spans made whole from their pairs
    complete = []    # complete events only: they nest per thread
    opened = {}
    for e in doc["traceEvents"]:
        if not isinstance(e, dict) or "ph" not in e:
            fail(f"not an event: {e!r}")
        if e["ph"] == "M":
            if e.get("name") == "process_name":
                names[e["pid"]] = e["args"]["name"]
            continue
        if e["ph"] not in ("X", "b", "e"):
            fail(f"an event of phase {e['ph']!r}: only complete events and async pairs are written")
        for field, kind in (("name", str), ("ts", int), ("pid", int), ("tid", int)):
            if not isinstance(e.get(field), kind):
                fail(f"event without an integer/string {field}: {e!r}")
        if e["ph"] == "X":
            if not isinstance(e.get("dur"), int) or e["dur"] < 0:
                fail(f"complete event without a duration >= 0: {e!r}")
            events.append(e)
            complete.append(e)
            continue
        key = (e["pid"], e.get("id"))
        if key[1] is None:
            fail(f"async event without an id: {e!r}")
        if e["ph"] == "b":
            if key in opened:
                fail(f"async id {key} begins twice")
            opened[key] = e
            continue
        begin = opened.pop(key, None)
        if begin is None or begin["name"] != e["name"]:
            fail(f"async end without its begin: {e!r}")
        if e["ts"] < begin["ts"]:
            fail(f"async span ends before it begins: {begin!r} {e!r}")
        events.append(dict(begin, ph="X", dur=e["ts"] - begin["ts"]))
    if opened:
        fail(f"{len(opened)} async spans never end, e.g. {next(iter(opened.values()))!r}")

    expected = [f"worker {w}" for w in range(workers)] + [f"server {s}" for s in range(servers)] + ["scheduler"]
    by_process = collections.defaultdict(list)
    for e in events:
        if e["pid"] not in names:
            fail(f"event of a process without a name: {e!r}")
        by_process[names[e["pid"]]].append(e)
    for name in expected:
        if not by_process.get(name):
            fail(f"no events from {name} (processes: {sorted(by_process)})")

    # Nesting per thread: sorted by start (longer first on ties), each event
    # must end within the innermost open event that contains its start.
    by_thread = collections.defaultdict(list)
    for e in complete:
        by_thread[(e["pid"], e["tid"])].append(e)
    for (pid, tid), list_ in by_thread.items():
        list_.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in list_:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"]:
                outer = stack[-1]
                fail(f"{names[pid]} thread {tid}: {e['name']} [{e['ts']}, +{e['dur']}] starts inside "
                     f"{outer['name']} [{outer['ts']}, +{outer['dur']}] and ends after it")
            stack.append(e)

    # Causality: a round's sums end before any pull of that round ends.
    def part_round(e):
        a = e.get("args", {})
        return (a.get("key"), a.get("begin"), a.get("round"))

    sum_end = collections.defaultdict(int)
    for name in (f"server {s}" for s in range(servers)):
        for e in by_process[name]:
            if e["name"] == "sum":
                k = part_round(e)
                sum_end[k] = max(sum_end[k], e["ts"] + e["dur"])
    if not sum_end:
        fail("no server sums")
    pulls = 0
    for name in (f"worker {w}" for w in range(workers)):
        for e in by_process[name]:
            if e["name"] not in ("pull", "pushpull") or e.get("args", {}).get("round", -1) < 1:
                continue
            k = part_round(e)
            if k not in sum_end:
                fail(f"{name}'s {e['name']} of key {k[0]} [{k[1]}...) round {k[2]} has no server sum")
            end = e["ts"] + e["dur"]
            if end < sum_end[k]:
                fail(f"{name}'s {e['name']} of key {k[0]} [{k[1]}...) round {k[2]} ends at {end}, before the "
                     f"server's sum of that round ends at {sum_end[k]}")
            pulls += 1
    if pulls == 0:
        fail("no worker pulls of a round")

    print(f"OK: {len(events)} events from {', '.join(expected)}; {len(by_thread)} threads nest; "
          f"{pulls} pulls end after their round's sums ({len(sum_end)} part-rounds)")
    # Where a worker's step goes: each phase inside the training steps, and
    # the data wait just before each step (an evaluation's forwards and
    # waits lie outside the steps and are left out).
    for w in range(workers):
        mine = sorted((e for e in events if names[e["pid"]] == f"worker {w}"), key=lambda e: e["ts"])
        steps = [e for e in mine if e["name"] == "step"]
        if not steps:
            continue
        phases = collections.defaultdict(int)
        for s in steps:
            phases["step"] += s["dur"]
            end = s["ts"] + s["dur"]
            for e in mine:
                if e["name"] in ("forward", "backward", "wait", "optimizer") and s["ts"] <= e["ts"] and \
                        e["ts"] + e["dur"] <= end and e["tid"] == s["tid"]:
                    phases[e["name"]] += e["dur"]
            before = [e for e in mine if e["name"] == "data wait" and e["ts"] + e["dur"] <= s["ts"]]
            if before:
                phases["data wait"] += before[-1]["dur"]
        parts = ", ".join(f"{n} {phases[n] / len(steps) / 1000:.2f}"
                          for n in ("step", "data wait", "forward", "backward", "wait", "optimizer") if n in phases)
        print(f"worker {w}: {len(steps)} steps; ms per step: {parts}")


if __name__ == "__main__":
    main()
