#!/usr/bin/env python3
"""Helper of scripts/gpu/validate.sh (standard library only, plus torch for `env` and `cudnn-probe`).

  validate_report.py env                       facts about this node as one JSON line (torch, CUDA, cuDNN, GPU)
  validate_report.py cudnn-probe               conv3d under fp16 autocast in torch.profiler: cuDNN or not (JSON line)
  validate_report.py add-row ROWS --id ...     parse one row's log and append the row to ROWS (JSON lines)
  validate_report.py finish ROWS REPORT_DIR    write REPORT_DIR/report.json and REPORT_DIR/report.md

A row is {id, title, kind (cpu|gpu), command, status, rc, wall_s, log, figures, note}. status is "ok",
"failed: ..." or "skipped: ..." (e.g. "skipped: no CUDA device"). The parsers below turn a row's log
into its figures; each knows one program's output (bench/medseg_bench_*.cpp, ctest, medseg_train).
"""
import argparse
import datetime
import json
import os
import re
import sys
import xml.etree.ElementTree as ET


# --- facts about the node -----------------------------------------------------------------------

def cmd_env(_args):
    import platform
    import shutil
    import subprocess
    out = {"python": platform.python_version(), "machine": platform.machine(), "cores": os.cpu_count()}
    try:
        with open("/proc/meminfo") as f:
            out["memory_gib"] = round(int(f.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    try:
        osr = dict(l.rstrip("\n").split("=", 1) for l in open("/etc/os-release") if "=" in l)
        out["os"] = osr.get("PRETTY_NAME", "").strip('"')
    except OSError:
        pass
    for tool, args in (("cmake", ["--version"]), ("ninja", ["--version"]), ("c++", ["--version"]),
                       ("nvcc", ["--version"]), ("ldd", ["--version"])):
        if shutil.which(tool):
            try:
                text = subprocess.run([tool] + args, capture_output=True, text=True, timeout=30).stdout
                lines = [l for l in text.splitlines() if l.strip()]
                out[tool] = lines[-1] if tool == "nvcc" else (lines[0] if lines else "")
            except (OSError, subprocess.SubprocessError):
                out[tool] = "error"
    if shutil.which("nvidia-smi"):
        try:
            q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_mode",
                                "--format=csv,noheader"], capture_output=True, text=True, timeout=30).stdout.strip()
            out["nvidia_smi"] = q
        except (OSError, subprocess.SubprocessError):
            out["nvidia_smi"] = "error"
    import torch
    out["torch"] = torch.__version__
    out["torch_cuda"] = torch.version.cuda
    out["cxx11_abi"] = bool(torch._C._GLIBCXX_USE_CXX11_ABI)
    out["cuda_available"] = torch.cuda.is_available()
    try:
        out["cudnn_version"] = torch.backends.cudnn.version()
    except Exception as e:  # cuDNN not loadable
        out["cudnn_version"] = None
        out["cudnn_error"] = str(e).splitlines()[0]
    try:
        out["nccl_version"] = ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else None
    except Exception:
        out["nccl_version"] = None
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        out["gpu"] = {"name": p.name, "capability": f"{p.major}.{p.minor}",
                      "memory_gib": round(p.total_memory / 2**30, 1), "count": torch.cuda.device_count()}
    print(json.dumps(out))


def cmd_cudnn_probe(_args):
    """Which kernels a 3D convolution (forward + backward) runs under fp16 autocast."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    out = {"cudnn_version": torch.backends.cudnn.version(), "cudnn_enabled": torch.backends.cudnn.enabled}
    dev = torch.device("cuda")
    conv = torch.nn.Conv3d(32, 32, 3, padding=1).to(dev)
    x = torch.randn(2, 32, 64, 64, 64, device=dev, requires_grad=True)
    torch.backends.cudnn.benchmark = False

    def step():
        with torch.autocast("cuda", dtype=torch.float16):
            y = conv(x)
        y.float().sum().backward()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    ops, kernels = set(), {}
    for e in prof.events():
        dt = str(getattr(e, "device_type", ""))
        if dt.endswith("CUDA"):
            tr = getattr(e, "time_range", None)
            t = tr.elapsed_us() if tr is not None else 0
            kernels[e.name] = kernels.get(e.name, 0) + t
        elif e.name.startswith("aten::"):
            ops.add(e.name)
    conv_ops = sorted(o for o in ops if "conv" in o)
    top = sorted(kernels.items(), key=lambda kv: -kv[1])[:10]
    pat = re.compile(r"cudnn|xmma|implicit_?gemm|fprop|dgrad|wgrad|sm\d+_|cutlass|winograd", re.I)
    out.update({
        "aten_conv_ops": conv_ops,
        "uses_cudnn_op": any("cudnn" in o for o in conv_ops),
        "top_kernels": [k for k, _ in top],
        "cudnn_like_kernels": sorted({k for k in kernels if pat.search(k)})[:10],
    })
    out["conv3d_on_cudnn"] = bool(out["uses_cudnn_op"] or out["cudnn_like_kernels"])
    print(json.dumps(out))


# --- log parsers: text -> figures ------------------------------------------------------------------

def last_json_line(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return {}


def parse_keyvalues(text):
    """medseg_bench_models: params=, step_peak_bytes=, median_s=, median_cpu_s="""
    f = {}
    for k, v in re.findall(r"^(params|step_peak_bytes|median_s|median_cpu_s)=(\S+)$", text, re.M):
        f[k] = float(v) if "." in v else int(v)
    if "step_peak_bytes" in f:
        f["step_peak_mib"] = round(f["step_peak_bytes"] / 2**20, 1)
    return f


def parse_dataloader(text):
    """medseg_bench_dataloader: one table row per worker count."""
    f = {"rows": []}
    m = re.search(r"^cases .*$", text, re.M)
    if m:
        f["setup"] = m.group(0)
    for w, wall, ps, msb, pcs, util in re.findall(
            r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", text, re.M):
        f["rows"].append({"workers": int(w), "wall_s": float(wall), "patches_per_s": float(ps),
                          "ms_per_batch": float(msb), "patches_per_cpu_s": float(pcs), "cpu_util": float(util)})
    return f


def parse_bench_memory(text):
    """medseg_bench_memory's Markdown table: config, patch x batch, params, estimated, measured, ratio, phase, pass."""
    f = {"rows": []}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and re.match(r"^[\d.]+$", cells[5] or ""):
            f["rows"].append({"config": cells[0], "patch_x_batch": cells[1], "params": cells[2],
                              "estimated_mib": float(cells[3]), "measured_mib": float(cells[4]),
                              "estimate_over_measured": float(cells[5]), "peak_phase": cells[6],
                              "within_tolerance": cells[7] == "pass"})
    m = re.search(r"^(\d+) of (\d+) rows outside", text, re.M)
    if m:
        f["outside_tolerance"] = int(m.group(1))
    return f


def parse_ctest(text, junit=None):
    """Counts from ctest's JUnit file when there is one, else from its summary lines."""
    f = {}
    tests = []
    if junit and os.path.exists(junit):
        try:
            for tc in ET.parse(junit).getroot().iter("testcase"):
                status = tc.get("status", "run")
                if tc.find("failure") is not None or status == "fail":
                    s = "failed"
                elif tc.find("skipped") is not None or status in ("notrun", "disabled"):
                    s = "skipped"
                else:
                    s = "passed"
                tests.append({"name": tc.get("name"), "status": s, "time_s": float(tc.get("time") or 0)})
        except ET.ParseError:
            tests = []
    if tests:
        for s in ("passed", "failed", "skipped"):
            f[s] = sum(t["status"] == s for t in tests)
        f["total"] = len(tests)
        f["failed_tests"] = [t["name"] for t in tests if t["status"] == "failed"][:50]
        f["skipped_tests"] = [t["name"] for t in tests if t["status"] == "skipped"][:50]
        f["tests"] = tests
        return f
    m = re.search(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)", text)
    if m:
        total, failed = int(m.group(3)), int(m.group(2))
        skipped = len(re.findall(r"^\s*\d+ - .*\((Skipped|Not Run|Disabled)\)\s*$", text, re.M))
        f.update({"total": total, "failed": failed, "skipped": skipped, "passed": total - failed - skipped})
        f["failed_tests"] = re.findall(r"^\s*\d+ - (\S+) \((?:Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)\)",
                                       text, re.M)[:50]
    elif re.search(r"No tests were found", text):
        f.update({"total": 0, "passed": 0, "failed": 0, "skipped": 0})
    return f


def parse_cuda_memory(text):
    """CudaMemory.* (tests/nn/gpu_cuda_test.cpp) prints one summary line per planner and precision."""
    rows, seen = [], set()
    for line in text.splitlines():
        line = re.sub(r"^\d+: ", "", line.strip())  # ctest -V prefixes each line with the test's number
        m = re.match(r"^([\w.+-]+(?: [\w.+-]+)*): estimate (\d+) B \(([^)]*)\), measured (\d+) B, ratio ([\d.]+)", line)
        if not m or m.group(0) in seen:
            continue
        seen.add(m.group(0))
        name, est, phase, meas, ratio = m.groups()
        rows.append({"config": name.strip(), "estimated_mib": round(int(est) / 2**20, 1), "peak_phase": phase,
                     "measured_mib": round(int(meas) / 2**20, 1), "estimate_over_measured": float(ratio)})
    return {"rows": rows}


def parse_train(text):
    """medseg_train: `epoch N: ... 12.3s` lines, whether training finished, GPU utilisation samples."""
    f = {}
    times = [float(t) for t in re.findall(r"epoch \d+: train_loss .* ([\d.]+)s\s*$", text, re.M)]
    f["epoch_s"] = times
    if len(times) > 1:
        f["epoch_s_after_first"] = round(sum(times[1:]) / len(times[1:]), 2)
    f["training_finished"] = "training finished" in text
    m = re.findall(r"pseudo Dice \[([^\]]*)\]", text)
    if m:
        f["last_pseudo_dice"] = m[-1]
    return f


def parse_gpu_util(path):
    if not path or not os.path.exists(path):
        return {}
    util, mem = [], []
    for line in open(path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit():
            util.append(int(parts[0]))
            mem.append(int(parts[1]))
    if not util:
        return {}
    return {"gpu_util_mean_pct": round(sum(util) / len(util), 1), "gpu_util_max_pct": max(util),
            "gpu_mem_used_max_mib": max(mem), "gpu_samples": len(util)}


def parse_predict(text):
    f = {}
    m = re.findall(r"^predict_wall_s=([\d.]+) cases=(\d+) voxels=(\d+)$", text, re.M)
    if m:
        wall, cases, vox = float(m[-1][0]), int(m[-1][1]), int(m[-1][2])
        f.update({"wall_s": wall, "cases": cases, "s_per_case": round(wall / max(cases, 1), 3),
                  "mvoxels_per_s": round(vox / wall / 1e6, 3) if wall > 0 else None})
    return f


def parse_predict_slabs(text):
    f = parse_predict(text)
    f.pop("mvoxels_per_s", None)
    m = re.findall(r"^identical=(\d+) of=(\d+)$", text, re.M)
    if m:
        f.update({"identical": int(m[-1][0]), "cases_compared": int(m[-1][1])})
    return f


PARSERS = {
    "none": lambda text, a: {},
    "json": lambda text, a: last_json_line(text),
    "bench_models": lambda text, a: parse_keyvalues(text),
    "dataloader": lambda text, a: parse_dataloader(text),
    "bench_memory": lambda text, a: parse_bench_memory(text),
    "ctest": lambda text, a: parse_ctest(text, a.junit),
    "cuda_memory": lambda text, a: parse_cuda_memory(text),
    "train": lambda text, a: {**parse_train(text), **parse_gpu_util(a.extra)},
    "predict": lambda text, a: parse_predict(text),
    "predict_slabs": lambda text, a: parse_predict_slabs(text),
    "version": lambda text, a: {"medseg_version": text.strip().splitlines()[0] if text.strip() else None},
}


def cmd_add_row(a):
    text = ""
    if a.log and os.path.exists(a.log):
        with open(a.log, errors="replace") as f:
            text = f.read()
    figures = {}
    status = a.status
    if not status.startswith("skipped"):
        try:
            figures = PARSERS[a.parser](text, a)
        except Exception as e:  # a parser problem must not lose the row
            figures = {"parse_error": f"{type(e).__name__}: {e}"}
    note = a.note or ""
    # Rows whose exit status alone does not tell the outcome.
    if a.parser == "ctest" and status == "ok" and figures.get("failed"):
        status = f"failed: {figures['failed']} test(s) failed"
    if a.parser == "ctest" and status.startswith("failed: exit") and figures.get("failed"):
        status = f"failed: {figures['failed']} test(s) failed"
    if a.parser == "train" and not status.startswith("skipped"):
        if figures.get("training_finished") and status != "ok":
            note = (note + "; " if note else "") + f"final validation {status}" + \
                   (" (it exports NIfTI: needs ITK)" if a.no_itk else "")
            figures["final_validation"] = "failed"
            status = "ok"
        elif figures.get("training_finished"):
            figures["final_validation"] = "ok"
    if a.parser == "bench_memory" and status.startswith("failed: exit 1") and figures.get("rows"):
        status = f"failed: {figures.get('outside_tolerance', '?')} row(s) outside the tolerance"
    if a.parser == "cuda_memory" and status == "ok" and not figures.get("rows"):
        status = "failed: no CudaMemory summary line in the output"
    if a.parser == "ctest" and status == "ok" and figures.get("total") == 0:
        status = "skipped: no test matched"
    elif (a.parser == "ctest" and status == "ok" and figures.get("skipped") and not figures.get("passed")
          and not figures.get("failed")):
        status = "skipped: every matching test skipped itself (see its log)"
    tail = ""
    if status.startswith("failed") and text:
        tail = "\n".join(text.rstrip().splitlines()[-15:])
    row = {"id": a.id, "title": a.title, "kind": a.kind, "command": a.command, "status": status,
           "rc": a.rc, "wall_s": a.wall, "log": os.path.relpath(a.log, a.report) if a.log and a.report else a.log,
           "figures": figures, "note": note}
    if tail:
        row["log_tail"] = tail
    with open(a.rows, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(f"validate.sh: {a.id}: {status}" + (f" ({a.wall:.0f} s)" if a.wall is not None else ""), file=sys.stderr)
    print(status)


# --- the report ----------------------------------------------------------------------------------

def fmt_bytes_mib(x):
    return f"{x:.1f} MiB" if isinstance(x, (int, float)) else "-"


def summary_of(r):
    """One short line of figures for the Markdown table."""
    f = r.get("figures") or {}
    if r["status"].startswith("skipped"):
        return ""
    p = r.get("parser_hint") or ""
    if "median_s" in f:
        s = f"step {f['median_s']:.4f} s (cpu {f.get('median_cpu_s', 0):.3f} s)"
        if "step_peak_mib" in f:
            s += f", peak {f['step_peak_mib']} MiB"
        return s
    if {"passed", "failed", "skipped"} <= f.keys():
        return f"{f['passed']} passed, {f['failed']} failed, {f['skipped']} skipped (of {f.get('total', '?')})"
    if "rows" in f and f["rows"] and "estimate_over_measured" in f["rows"][0]:
        return "; ".join(f"{x['config']}: {x['estimate_over_measured']:.3f}" for x in f["rows"])
    if "rows" in f and f["rows"] and "workers" in f["rows"][0]:
        return "; ".join(f"{x['workers']} w: {x['patches_per_s']:.2f} patches/s ({x['patches_per_cpu_s']:.2f}/cpu-s)"
                         for x in f["rows"])
    if "epoch_s" in f:
        s = "epochs " + ", ".join(f"{t:.1f}" for t in f["epoch_s"]) + " s"
        if "gpu_util_mean_pct" in f:
            s += f"; GPU util mean {f['gpu_util_mean_pct']} % (max {f['gpu_util_max_pct']} %)"
        return s
    if "conv3d_on_cudnn" in f:
        return (f"cuDNN {f.get('cudnn_version')}; conv3d on cuDNN: {'yes' if f['conv3d_on_cudnn'] else 'NO'}"
                f" ({', '.join(f.get('aten_conv_ops', [])[:3])})")
    if "torch" in f:
        g = f.get("gpu") or {}
        return (f"torch {f.get('torch')} (CUDA {f.get('torch_cuda')}, cuDNN {f.get('cudnn_version')}); "
                + (f"{g.get('name')} {g.get('memory_gib')} GiB" if g else "no CUDA device"))
    if "s_per_case" in f:
        return f"{f['s_per_case']} s/case, {f.get('mvoxels_per_s')} Mvox/s"
    if "medseg_version" in f:
        return str(f["medseg_version"])
    return ""


def cmd_finish(a):
    rows = [json.loads(l) for l in open(a.rows) if l.strip()]
    counts = {"ok": 0, "failed": 0, "skipped": 0}
    for r in rows:
        counts[r["status"].split(":")[0] if r["status"].split(":")[0] in counts else "failed"] += 1
    meta = json.loads(a.meta) if a.meta else {}
    report = {"format": "medseg.gpu_validation", "version": 1,
              "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              **meta, "counts": counts, "rows": rows}
    with open(os.path.join(a.report, "report.json"), "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    md = ["# medseg GPU validation report", ""]
    md.append(f"Finished {report['finished']}; {counts['ok']} ok, {counts['failed']} failed, "
              f"{counts['skipped']} skipped. Written by `scripts/gpu/validate.sh`; the same rows with every figure "
              f"are in `report.json`, each row's full output under `logs/`.")
    md.append("")
    for k in ("checkout", "bundle", "node", "build", "options"):
        if k in meta:
            md.append(f"- **{k}**: `{json.dumps(meta[k])}`")
    md += ["", "| row | kind | status | figures | s |", "|---|---|---|---|---|"]
    for r in rows:
        wall = f"{r['wall_s']:.0f}" if isinstance(r.get("wall_s"), (int, float)) else ""
        st = r["status"] + (f" ({r['note']})" if r.get("note") else "")
        md.append(f"| {r['id']}: {r['title']} | {r['kind']} | {st} | {summary_of(r)} | {wall} |")
    md += ["", "## Commands", ""]
    for r in rows:
        md.append(f"- `{r['id']}`: `{r['command']}`")
    failed = [r for r in rows if r["status"].startswith("failed") and r.get("log_tail")]
    if failed:
        md += ["", "## Failures (last lines of each log)", ""]
        for r in failed:
            md += [f"### {r['id']}", "", "```", r["log_tail"], "```", ""]
    with open(os.path.join(a.report, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print(f"validate.sh: report: {os.path.join(a.report, 'report.md')} ({counts['ok']} ok, {counts['failed']} failed, "
          f"{counts['skipped']} skipped)", file=sys.stderr)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("env")
    sub.add_parser("cudnn-probe")
    r = sub.add_parser("add-row")
    r.add_argument("rows")
    r.add_argument("--id", required=True)
    r.add_argument("--title", default="")
    r.add_argument("--kind", choices=["cpu", "gpu"], required=True)
    r.add_argument("--command", default="")
    r.add_argument("--status", required=True)
    r.add_argument("--rc", type=int)
    r.add_argument("--wall", type=float)
    r.add_argument("--log")
    r.add_argument("--report")
    r.add_argument("--parser", default="none", choices=sorted(PARSERS))
    r.add_argument("--junit")
    r.add_argument("--extra")
    r.add_argument("--note", default="")
    r.add_argument("--no-itk", action="store_true")
    fi = sub.add_parser("finish")
    fi.add_argument("rows")
    fi.add_argument("report")
    fi.add_argument("--meta", default="")
    a = ap.parse_args()
    return {"env": cmd_env, "cudnn-probe": cmd_cudnn_probe, "add-row": cmd_add_row, "finish": cmd_finish}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
