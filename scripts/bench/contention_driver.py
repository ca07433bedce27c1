#!/usr/bin/env python3
"""Runs commands idle and beside a controlled CPU load, alternated, and prints wall and CPU seconds.

    python3 contention_driver.py SPEC.json

SPEC: {"repeat": R, "load": N, "load_cmd": [...] or null, "runs": [{"name": ..., "cmd": [...], "env": {...}}, ...]}
Each round runs every command idle, then every command beside N busy processes (load_cmd, or plain spin
loops; started just before and killed right after the command, so no run sees a load another did not). The order
of the commands flips every round, so drift in the machine's background load falls on both sides.
Reports, per command and condition, the median wall and CPU seconds (the command's own rusage, the load
excluded), the slowdown under load (wall with load / wall idle) and the ratios of each command to the last.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import time

SPIN = "import time\nend = time.monotonic() + 3600\nwhile time.monotonic() < end: pass\n"


def timed(cmd, env):
    e = dict(os.environ)
    e.update(env)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode}):\n{out.decode(errors='replace')[-3000:]}")
    return wall, ru.ru_utime + ru.ru_stime


def with_load(n, load_cmd, fn):
    load = [subprocess.Popen(load_cmd or [sys.executable, "-c", SPIN]) for _ in range(n)]
    time.sleep(0.5)  # the spinners are running before the command starts
    try:
        return fn()
    finally:
        for p in load:
            p.kill()
        for p in load:
            p.wait()


def main():
    # SIGTERM unwinds like Ctrl-C, so the finally in with_load stops the load processes.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    spec = json.load(open(sys.argv[1]))
    runs, repeat, n = spec["runs"], spec["repeat"], spec["load"]
    res = {(r["name"], c): [] for r in runs for c in ("idle", "load")}
    for k in range(repeat):
        order = runs if k % 2 == 0 else runs[::-1]
        for cond in ("idle", "load"):
            for r in order:
                fn = lambda: timed(r["cmd"], r.get("env", {}))
                wall, cpu = fn() if cond == "idle" else with_load(n, spec.get("load_cmd"), fn)
                res[(r["name"], cond)].append((wall, cpu))
                print(f"  round {k + 1}: {r['name']:8} {cond:4} wall {wall:7.2f} s  cpu {cpu:7.2f} s", flush=True)
    med = {key: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for key, v in res.items()}
    print(f"\nmedians of {repeat} round(s); load = {n} busy process(es) on {os.cpu_count()} cores")
    print(f"{'':10}{'idle wall':>10}{'idle cpu':>10}{'load wall':>10}{'load cpu':>10}{'slowdown':>10}")
    for r in runs:
        (iw, ic), (lw, lc) = med[(r["name"], "idle")], med[(r["name"], "load")]
        print(f"{r['name']:10}{iw:10.2f}{ic:10.2f}{lw:10.2f}{lc:10.2f}{lw / iw:9.2f}x")
    b = runs[-1]["name"]  # the reference: every other command is compared with the last one
    for r in runs[:-1]:
        a = r["name"]
        for cond in ("idle", "load"):
            print(f"{a}/{b} wall {cond}: {med[(a, cond)][0] / med[(b, cond)][0]:.2f}   "
                  f"cpu {cond}: {med[(a, cond)][1] / med[(b, cond)][1]:.2f}")
        sa = med[(a, "load")][0] / med[(a, "idle")][0]
        sb = med[(b, "load")][0] / med[(b, "idle")][0]
        print(f"slowdown {a} / slowdown {b}: {sa / sb:.2f}")

if __name__ == "__main__":
    main()
