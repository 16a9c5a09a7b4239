#!/usr/bin/env python3
"""Reads a tracefs trace of bench/sched/pingpong (sched_waking, sched_wakeup, sched_switch)
and says where the kernel placed each woken sleeper: on the waker's (busy) CPU, on its
previous CPU, or elsewhere, and whether its previous CPU was idle at the time.

Usage: wake_placement.py TRACE_FILE PINGPONG_PID   (prints a summary line and one JSON line)
"""
import json
import re
import sys

LINE = re.compile(r"^\s*(?P<task>.+?)-(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S+\s+(?P<ts>[\d.]+):\s+(?P<event>\w+):\s+(?P<rest>.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: wake_placement.py TRACE_FILE PINGPONG_PID")
    path, pid = sys.argv[1], int(sys.argv[2])
    running = {}  # CPU -> pid running there (0: idle), from sched_switch
    pending = {}  # wakee pid -> (waker CPU, previous CPU, previous CPU idle)
    wakeups = []
    with open(path, encoding="utf-8", errors="replace") as trace:
        for line in trace:
            m = LINE.match(line)
            if not m:
                continue
            cpu, event, rest = int(m["cpu"]), m["event"], m["rest"]
            if event == "sched_switch":
                nxt = re.search(r"next_pid=(\d+)", rest)
                if nxt:
                    running[cpu] = int(nxt.group(1))
                continue
            fields = dict(FIELD.findall(rest))
            wakee = int(fields.get("pid", -1))
            if event == "sched_waking" and int(m["tid"]) == pid and wakee != pid:
                prev = int(fields["target_cpu"])
                idle_elsewhere = any(c != cpu and p == 0 for c, p in running.items())
                pending[wakee] = (cpu, prev, running.get(prev) == 0, idle_elsewhere)
            elif event == "sched_wakeup" and wakee in pending:
                waker_cpu, prev, prev_idle, idle_elsewhere = pending.pop(wakee)
                wakeups.append(
                    {
                        "waker_cpu": waker_cpu,
                        "previous_cpu": prev,
                        "previous_idle": prev_idle,
                        "idle_cpu_elsewhere": idle_elsewhere,
                        "chosen_cpu": int(fields["target_cpu"]),
                    }
                )
    if not wakeups:
        sys.exit(f"wake_placement.py: no wake-up by pid {pid} in {path}")
    spread_possible = [w for w in wakeups if w["previous_idle"] and w["previous_cpu"] != w["waker_cpu"]]
    summary = {
        "wakeups": len(wakeups),
        "on_waker_cpu": sum(w["chosen_cpu"] == w["waker_cpu"] for w in wakeups),
        "on_previous_cpu": sum(w["chosen_cpu"] == w["previous_cpu"] for w in wakeups),
        "previous_idle_elsewhere": len(spread_possible),
        "packed_onto_busy_waker": sum(w["chosen_cpu"] == w["waker_cpu"] for w in spread_possible),
        "idle_cpu_elsewhere": sum(w["idle_cpu_elsewhere"] for w in wakeups),
        "on_busy_waker_despite_idle_cpu": sum(
            w["chosen_cpu"] == w["waker_cpu"] and w["idle_cpu_elsewhere"] for w in wakeups
        ),
    }
    print(
        f"{summary['wakeups']} wake-ups: {summary['on_waker_cpu']} on the waker's busy CPU, "
        f"{summary['on_previous_cpu']} on the wakee's previous CPU; of the "
        f"{summary['previous_idle_elsewhere']} whose previous CPU was idle and not the waker's, "
        f"{summary['packed_onto_busy_waker']} were put on the waker's busy CPU; "
        f"{summary['on_busy_waker_despite_idle_cpu']} of the {summary['idle_cpu_elsewhere']} "
        "made while another CPU was idle went to the waker's busy CPU"
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
