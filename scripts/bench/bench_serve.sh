#!/usr/bin/env bash
# medseg_serve against medseg_predict run once per case (the start-up and model load a server saves): CLIENTS
# concurrent clients submit CASES small cases to one server (WORKERS prediction threads, THREADS torch threads
# in all), each polling its job and fetching the result; the same cases are predicted by one medseg_predict
# process each. Prints jobs per minute of both and their ratio, the server's p50/p95 latency (submit to result
# fetched), and its resident memory over the run (sampled every 0.2 s). Every server result is checked to be
# medseg_predict's file byte for byte. The model: a synthetic dataset planned by medseg (3d_fullres), untrained
# weights (medseg_init_model): the work per case is a real model's, the weights do not matter for time.
#
#   scripts/bench/bench_serve.sh [BUILD_DIR]
# Environment: CLIENTS (4), CASES (24), WORKERS (1), THREADS (2), MIN_SHAPE / MAX_SHAPE of the cases (z y x;
# "20 28 28" / "24 36 36": small cases, where a process's start-up and model load weigh most), PYTHON (an interpreter with requests; default
# scripts/serve_reference.sh's), KEEP (1: keep the work folder).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
clients=${CLIENTS:-4}
cases=${CASES:-24}
workers=${WORKERS:-1}
threads=${THREADS:-2}
py=${PYTHON:-$(bash "$root/scripts/serve_reference.sh")}
work=$(mktemp -d /tmp/medseg-bench-serve.XXXXXX)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  [ "${KEEP:-0}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
export MEDSEG_RAW=$work/raw MEDSEG_PREPROCESSED=$work/pre MEDSEG_RESULTS=$work/res MEDSEG_NUM_THREADS=$threads
bin=$build/bin
read -r -a min_shape <<<"${MIN_SHAPE:-20 28 28}"
read -r -a max_shape <<<"${MAX_SHAPE:-24 36 36}"
"$bin/medseg_make_dataset" -d 905 -n ServeBench --cases 6 --test-cases "$cases" --min-shape "${min_shape[@]}" \
  --max-shape "${max_shape[@]}" >/dev/null
"$bin/medseg_plan_and_preprocess" -d 905 -c 3d_fullres -np 1 >/dev/null 2>&1
"$bin/medseg_init_model" -d 905 -c 3d_fullres -f 0 >/dev/null 2>&1
model=$work/res/Dataset905_ServeBench/nnUNetTrainer__nnUNetPlans__3d_fullres
images=$work/raw/Dataset905_ServeBench/imagesTs

# One process per case, as a script calling medseg_predict would do.
t0=$(date +%s.%N)
for f in "$images"/*_0000.nii.gz; do
  "$bin/medseg_predict" -i "$f" -o "$work/predict" -m "$model" --threads "$threads" --disable_progress_bar \
    >/dev/null 2>&1
done
t1=$(date +%s.%N)

"$bin/medseg_serve" -m "$model" --port 0 --workers "$workers" --threads "$threads" --max_queue $((cases + 1)) \
  --scratch "$work" >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 600); do grep -q "listening on" "$work/serve.log" && break; sleep 0.1; done
port=$(sed -n 's|.*listening on http://[^:]*:\([0-9]*\)/.*|\1|p' "$work/serve.log")
"$py" - "$port" "$server_pid" "$images" "$work/predict" "$clients" "$t0" "$t1" "$cases" <<'PY'
import concurrent.futures, os, statistics, sys, threading, time
import requests
port, pid, images, expected, clients, t0, t1, cases = sys.argv[1:]
url = f"http://127.0.0.1:{port}"
model = requests.get(url + "/v1/models").json()["models"][0]["name"]
files = sorted(f for f in os.listdir(images) if f.endswith("_0000.nii.gz"))
rss, stop = [], threading.Event()
def sample():
    while not stop.is_set():
        with open(f"/proc/{pid}/statm") as f:
            rss.append(int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE"))
        time.sleep(0.2)
def one(name):
    start = time.time()
    with open(os.path.join(images, name), "rb") as f:
        r = requests.post(f"{url}/v1/models/{model}/jobs", data=f.read())
    r.raise_for_status()
    job = r.json()["id"]
    while requests.get(f"{url}/v1/jobs/{job}").json()["state"] not in ("done", "failed", "cancelled"):
        time.sleep(0.02)
    result = requests.get(f"{url}/v1/jobs/{job}/result").content
    with open(os.path.join(expected, name.replace("_0000.nii.gz", ".nii.gz")), "rb") as f:
        same = result == f.read()
    return time.time() - start, same
sampler = threading.Thread(target=sample)
sampler.start()
s0 = time.time()
with concurrent.futures.ThreadPoolExecutor(int(clients)) as pool:
    out = list(pool.map(one, files))
s1 = time.time()
stop.set()
sampler.join()
lat = sorted(t for t, _ in out)
n = len(files)
cli_rate = n / (float(t1) - float(t0)) * 60
srv_rate = n / (s1 - s0) * 60
p = lambda q: lat[min(len(lat) - 1, int(round(q * (len(lat) - 1))))]
print(f"cases: {n}, clients: {clients}")
print(f"medseg_predict once per case: {cli_rate:.1f} jobs/min ({(float(t1) - float(t0)) / n:.2f} s per case)")
print(f"medseg_serve:                 {srv_rate:.1f} jobs/min -> {srv_rate / cli_rate:.2f}x")
print(f"latency (submit to result fetched): p50 {p(0.5):.2f} s, p95 {p(0.95):.2f} s")
print(f"server resident memory: first {rss[0] / 2**20:.0f} MiB, max {max(rss) / 2**20:.0f} MiB, last {rss[-1] / 2**20:.0f} MiB")
print(f"results equal to medseg_predict's byte for byte: {sum(s for _, s in out)}/{n}")
sys.exit(0 if all(s for _, s in out) else 1)
PY
