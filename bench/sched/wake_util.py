#!/usr/bin/env python3
"""Reads tracefs traces of bench/sched/pingpong (sched_waking, sched_wakeup, sched_switch, as
wake_placement.sh records them) and says, for every wake-up of a sleeper by the pingpong's
main thread made while another CPU was idle, whether the sleeper was packed onto the waker's
CPU, beside PELT-style utilizations at the waking: of the waker's CPU (the share of recent time
it ran any task, plus what the new pingpong threads brought to it), of the waker and of the
wakee (the share of recent time each ran), each decayed with PELT's 32 ms half-life (32 periods
of 1024 us), on PELT's 0..1024 scale. A pingpong thread starts as PELT starts a new task
(post_init_entity_util_avg): at half its CPU's spare capacity, which its CPU takes on at once.

Then, over the traces of one sleeper, for each candidate signal, the threshold that best
separates packed from not packed wake-ups ("packed iff signal < threshold") and how many it
gets wrong; the pack model's room (the best threshold of "the waker's CPU with the wakee on
it"), how often a wakee was packed with and without room when its previous CPU was the
waker's (it stays) or another (it is pulled over), and the pull share as one in n. For the
traces of several sleepers woken together, how many of each futex wake's were packed. This is
the evidence for `concord sim --wake-placement pack` (docs/simulator.md, "This machine's
wake-up placement", and crates/concord-sim/src/sched/pack.rs).

On this machine's kernel the trace has no sched_switch for a switch from the idle task to a
woken task on some CPUs (CPU 1 here), so a task is taken as running on a CPU from the moment
any line of that CPU names it as the current task, back-dated to its wake-up onto that CPU.

Usage: wake_util.py [-v] DIR...   (each DIR as wake_placement.sh leaves it: trace.txt and
machine.txt, whose first pingpong pid is the main thread)
"""
import json
import re
import sys

LINE = re.compile(
    r"^\s*(?P<task>.+?)-(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S+\s+(?P<ts>[\d.]+):\s+(?P<event>\w+):\s+(?P<rest>.*)$"
)
FIELD = re.compile(r"(\w+)=(\S+)")
HALF_LIFE = 32 * 1024e-6  # s
CAPACITY = 1024.0


class Pelt:
    """A running-share average: 1024 × the decayed share of time `on`."""

    def __init__(self):
        self.value, self.since, self.on = 0.0, None, False

    def at(self, t):
        if self.since is None:
            return 0.0
        keep = 2 ** (-(t - self.since) / HALF_LIFE)
        return self.value * keep + (CAPACITY * (1 - keep) if self.on else 0.0)

    def set(self, t, on):
        self.value, self.since, self.on = self.at(t), t, on


def main_pid(trace_path):
    """The pingpong's main thread: the lowest pid named pingpong in the trace."""
    pids = {int(m) for m in re.findall(r"pingpong-(\d+)", open(trace_path, errors="replace").read())}
    if not pids:
        sys.exit(f"wake_util.py: no pingpong thread in {trace_path}")
    return min(pids)


def wakeups(trace_path):
    main = main_pid(trace_path)
    text = open(trace_path, errors="replace").read()
    pingpong = {int(m) for m in re.findall(r"pingpong-(\d+)", text)}
    pingpong |= {int(m) for m in re.findall(r"comm=pingpong pid=(\d+)", text)}
    events = []
    for line in open(trace_path, encoding="utf-8", errors="replace"):
        m = LINE.match(line)
        if m:
            events.append((float(m["ts"]), int(m["cpu"]), int(m["tid"]), m["event"], m["rest"]))
    running, cpu_avg, task_avg = {}, {}, {}
    idle_since = {}  # cpu -> when it last went idle
    attached = {}  # pid -> the CPU it last ran on
    new_on = {}  # cpu -> (starting utilization, when) of the new tasks it took
    woken_at = {}  # (pid, cpu) -> time of its last sched_wakeup onto cpu
    pending, rows = {}, []
    t0 = events[0][0] if events else 0.0

    def cpu_util(cpu, t):
        """A CPU's utilization: the share of recent time it ran, plus what the new tasks it
        took brought (PELT attaches a new task's starting utilization to its CPU), decayed."""
        brought = sum(v * 2 ** (-(t - since) / HALF_LIFE) for v, since in new_on.get(cpu, []))
        return cpu_avg.get(cpu, Pelt()).at(t) + brought

    def task(pid, t, cpu):
        """A task's average; a pingpong thread, new in the trace, starts as PELT starts a new
        task (post_init_entity_util_avg): at half the spare capacity of its CPU."""
        if pid not in task_avg:
            avg = task_avg[pid] = Pelt()
            if pid in pingpong:
                start = max(CAPACITY - cpu_util(cpu, t), 0.0) / 2
                avg.value, avg.since = start, t
                new_on.setdefault(cpu, []).append((start, t))
        return task_avg[pid]

    def switch(t, cpu, prev, nxt):
        if nxt == 0 and running.get(cpu) != 0:
            idle_since[cpu] = t
        running[cpu] = nxt
        if nxt:
            attached[nxt] = cpu
        cpu_avg.setdefault(cpu, Pelt()).set(t, nxt != 0)
        if prev:
            task(prev, t, cpu).set(t, False)
        if nxt:
            task(nxt, t, cpu).set(t, True)

    for ts, cpu, tid, event, rest in events:
        if event != "sched_switch" and tid != 0 and running.get(cpu) != tid:
            # An untraced switch to `tid`: it has run since its wake-up onto this CPU.
            since = woken_at.get((tid, cpu), ts)
            switch(min(since, ts), cpu, running.get(cpu, 0), tid)
        fields = dict(FIELD.findall(rest))
        if event == "sched_switch":
            nxt = re.search(r"next_pid=(\d+)", rest)
            prev = re.search(r"prev_pid=(\d+)", rest)
            if nxt and prev:
                switch(ts, cpu, int(prev.group(1)), int(nxt.group(1)))
            continue
        pid = int(fields.get("pid", -1))
        if event == "sched_wakeup":
            target = int(fields["target_cpu"])
            woken_at[(pid, target)] = ts
        if event == "sched_waking" and tid == main and pid != main and "pingpong" in rest:
            prevc = int(fields["target_cpu"])
            pending[pid] = {
                "t_ms": round((ts - t0) * 1e3, 3),
                "waker_cpu": cpu,
                "previous_cpu": int(fields["target_cpu"]),
                "idle_elsewhere": any(c != cpu and p == 0 for c, p in running.items()),
                "previous_cpu_idle_us": (
                    round((ts - idle_since[prevc]) * 1e6)
                    if running.get(prevc) == 0 and prevc in idle_since
                    else None
                ),
                "util_waker_cpu": cpu_util(cpu, ts),
                "util_other_cpus": max([cpu_util(c, ts) for c in cpu_avg if c != cpu] or [0.0]),
                "util_waker": task(main, ts, cpu).at(ts),
                "util_wakee": task(pid, ts, int(fields["target_cpu"])).at(ts),
                # PELT's way: the CPU's utilization is its tasks' (running or not), each
                # task's following it; the wakee's own left out (cpu_util_without()).
                "util_waker_cpu_tasks": sum(
                    task_avg[p].at(ts) for p, c in attached.items() if c == cpu and p != pid
                ),
            }
        elif event == "sched_wakeup" and pid in pending:
            row = pending.pop(pid)
            row["chosen_cpu"] = int(fields["target_cpu"])
            row["wakee"] = pid
            row["packed"] = row["chosen_cpu"] == row["waker_cpu"]
            rows.append(row)
    return [r for r in rows if r["idle_elsewhere"]]


SIGNALS = {
    "waker CPU": lambda r: r["util_waker_cpu"],
    "waker CPU + wakee": lambda r: r["util_waker_cpu"] + r["util_wakee"],
    # The waker's CPU with the wakee on it: the wakee's own share is already in the CPU's when
    # it last ran there (as PELT's cpu_util_without() takes it out of a CPU's before adding it).
    "waker CPU with wakee": lambda r: r["util_waker_cpu"]
    + (0.0 if r["previous_cpu"] == r["waker_cpu"] else r["util_wakee"]),
    "waker": lambda r: r["util_waker"],
    "waker + wakee": lambda r: r["util_waker"] + r["util_wakee"],
    "waker CPU's tasks + wakee": lambda r: r["util_waker_cpu_tasks"] + r["util_wakee"],
}


def rounds(rows):
    """The wake-ups grouped by futex wake: wakings less than 0.5 ms apart."""
    groups, last = [], None
    for r in sorted(rows, key=lambda r: r["t_ms"]):
        if last is None or r["t_ms"] - last > 0.5:
            groups.append([])
        groups[-1].append(r)
        last = r["t_ms"]
    return groups


def best_threshold(rows, signal):
    """The threshold (a round figure, 0..2048) with the fewest rows for which `packed` is not
    `signal < threshold`, and that count; ties: the range of thresholds that tie."""
    values = sorted({round(signal(r)) for r in rows})
    candidates = sorted({0, 2048} | {v for v in values} | {v + 1 for v in values})
    best, at = None, []
    for t in candidates:
        wrong = sum(r["packed"] != (signal(r) < t) for r in rows)
        if best is None or wrong < best:
            best, at = wrong, [t]
        elif wrong == best:
            at.append(t)
    return best, at


def main():
    args = [a for a in sys.argv[1:] if a != "-v"]
    verbose = "-v" in sys.argv[1:]
    if not args:
        sys.exit("usage: wake_util.py [-v] DIR...")
    everything = []
    for d in args:
        rows = wakeups(f"{d}/trace.txt")
        wakees = {r["wakee"] for r in rows}
        lines = open(f"{d}/machine.txt").read().splitlines()[1:]
        setting = "; ".join(lines).split("pingpong ", 1)[-1]
        packed = sum(r["packed"] for r in rows)
        med = lambda k, rs: sorted(r[k] for r in rs)[len(rs) // 2] if rs else float("nan")
        print(
            f"{d}: {setting}: {packed} of {len(rows)} wake-ups with another CPU idle packed; "
            f"median util at the waking: waker CPU {med('util_waker_cpu', rows):.0f}, "
            f"wakee {med('util_wakee', rows):.0f}"
        )
        if verbose:
            for r in rows:
                print("  " + json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in r.items()}))
        if len(wakees) > 1:
            # Several sleepers woken by one futex wake: how many of each wake's were packed.
            packed_per_wake = {}
            for group in rounds(rows):
                n = sum(r["packed"] for r in group)
                packed_per_wake[n] = packed_per_wake.get(n, 0) + 1
            print(
                f"  {len(wakees)} sleepers woken together: futex wakes by wake-ups packed "
                + ", ".join(f"{n} packed: {c}" for n, c in sorted(packed_per_wake.items()))
            )
        else:
            everything += rows
    print(
        f"one sleeper: {sum(r['packed'] for r in everything)} of {len(everything)} packed"
    )
    fitted = {}
    for name, signal in SIGNALS.items():
        wrong, at = best_threshold(everything, signal)
        fitted[name] = (at[0] + at[-1]) // 2
        print(
            f"  packed iff {name} util < T: best T {at[0]}..{at[-1]} gets {wrong} of "
            f"{len(everything)} wrong"
        )
    # The pack model's signal and room, and its two cases: the wakee's previous CPU is the
    # waker's (it stays) or another, idle, CPU (it is pulled over).
    name = "waker CPU with wakee"
    room, signal = fitted[name], SIGNALS[name]
    print(f"the pack model's room: {room} ({name} util, the best T's middle)")
    pulls = None
    for case, here in (("previous CPU the waker's", True), ("previous CPU another", False)):
        rows = [r for r in everything if (r["previous_cpu"] == r["waker_cpu"]) == here]
        for side, below in (("below", True), ("at or above", False)):
            part = [r for r in rows if (signal(r) < room) == below]
            packed = sum(r["packed"] for r in part)
            print(f"  {case}, {side} the room: {packed} of {len(part)} packed")
            if not here and below:
                pulls = (packed, len(part))
    if pulls and pulls[0]:
        share = pulls[0] / pulls[1]
        every = min(range(1, 101), key=lambda n: abs(1 / n - share))
        print(f"the pack model's pull_every: {every} (1/{every} nearest the pulled share {share:.3f})")


if __name__ == "__main__":
    main()
