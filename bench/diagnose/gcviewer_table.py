#!/usr/bin/env python3
"""Runs `concord diagnose --single --json` and GCViewer 1.36 on every GC log fixture under
crates/concord-cli/tests/fixtures/diagnose/real/ and prints, tab-separated, what each counts:
the raw figures behind real/expected.tsv (whose `agree` and `note` columns are written by hand
after reading the logs; see real/SOURCES.md).

GCViewer's figures: `pauseCount` of its `-t SUMMARY` export, and the total of its `-t CSV`
export's pause column (the same pauses, to the microsecond; the summary rounds `accumPause` to
10 ms). Columns: file, concord exit status, pauses, sum of records[].real_ms, max real_ms,
pause_total_ms, GCViewer pauses, GCViewer total ms, GCViewer summary accumPause (s).

Usage: bench/diagnose/gcviewer_table.py [GCVIEWER_JAR]   (concord is built first, debug)
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REAL = os.path.join(ROOT, "crates/concord-cli/tests/fixtures/diagnose/real")
JAR = (sys.argv[1] if len(sys.argv) > 1 else os.environ.get("GCVIEWER_JAR_PATH")) or \
    os.path.expanduser("~/.m2/repository/com/github/chewiebug/gcviewer/1.36/gcviewer-1.36.jar")


def fixtures():
    for sub in ("jdk17", "jdk25", "public"):
        for name in sorted(os.listdir(os.path.join(REAL, sub))):
            if name.endswith((".md", ".tsv")):
                continue
            yield f"{sub}/{name}"


def concord(binary, path):
    out = subprocess.run([binary, "diagnose", "--single", "--json", path],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return out.returncode, None, None, None, None, out.stderr.strip().splitlines()[-1:]
    j = json.loads(out.stdout)
    real = [r["real_ms"] for r in j["records"] if r.get("real_ms") is not None]
    return (0, j["pauses"], round(sum(real), 4), max(real, default=0.0),
            j["pause_total_ms"], None)


def gcviewer(path, tmp):
    summary = os.path.join(tmp, "summary.csv")
    events = os.path.join(tmp, "events.csv")
    for f in (summary, events):
        if os.path.exists(f):
            os.remove(f)
    subprocess.run(["java", "-jar", JAR, path, summary, "-t", "SUMMARY"], capture_output=True)
    subprocess.run(["java", "-jar", JAR, path, events, "-t", "CSV"], capture_output=True)
    count = accum = None
    if os.path.exists(summary):
        for line in open(summary, encoding="utf-8"):
            parts = [p.strip() for p in line.split(";")]
            if parts[0] == "pauseCount":
                count = int(parts[1].replace(",", ""))
            if parts[0] == "accumPause":
                accum = parts[1]
    total = None
    n = 0
    if os.path.exists(events):
        rows = list(csv.reader(open(events, encoding="utf-8")))[1:]
        pauses = [float(r[3]) for r in rows if r and r[4] != "NONE"]
        n = len(pauses)
        total = round(sum(pauses) * 1000, 4)
    if count is None:
        count = 0
    return count, n, total, accum


def main():
    subprocess.run(["cargo", "build", "-q", "-p", "concord-cli"], cwd=ROOT, check=True)
    binary = os.path.join(ROOT, "target/debug/concord")
    print("\t".join(["file", "exit", "pauses", "real_total_ms", "real_max_ms", "pause_total_ms",
                     "gcv_pauses", "gcv_csv_events", "gcv_total_ms", "gcv_accum_s"]))
    with tempfile.TemporaryDirectory() as tmp:
        for rel in fixtures():
            path = os.path.join(REAL, rel)
            code, pauses, total, mx, ptotal, err = concord(binary, path)
            gc, gn, gt, ga = gcviewer(path, tmp)
            row = [rel, code, pauses, total, mx, ptotal, gc, gn, gt, ga]
            if err:
                row.append(err[0])
            print("\t".join("" if v is None else str(v) for v in row), flush=True)


if __name__ == "__main__":
    main()
