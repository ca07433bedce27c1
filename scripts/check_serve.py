#!/usr/bin/env python3
"""A real HTTP client for medseg_serve's tests (tests/nn/serve_cli_itk_test.cpp): drives a running server the
way a user's program would, with Python's requests and plain sockets, and prints one line per failed check.
Exit status 0 when every check of the phase held.

  check_serve.py --url http://127.0.0.1:PORT --phase main --model1 NAME --image1 F --expect1 F
                 --model2 NAME --image2 F0 F1 --expect2 F --slow F --scratch DIR
  check_serve.py --url ... --phase token --token T --model1 NAME
  check_serve.py --url ... --phase running --model1 NAME --slow F     (leaves a job running; prints its id)
"""
import argparse
import concurrent.futures
import gzip
import json
import os
import resource
import socket
import struct
import sys
import time
import urllib.parse

import requests

FAILURES = []


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print("FAILED: " + what, flush=True)
    return ok


def url_of(args, path):
    return args.url.rstrip("/") + path


def jobs_path(model):
    return "/v1/models/" + model + "/jobs"


def one_line_error(r, status, what, scratch=None):
    """An error answer: the status, JSON {"error": one line}, no server path in it."""
    check(r.status_code == status, f"{what}: status {r.status_code}, expected {status} ({r.text[:200]!r})")
    try:
        body = r.json()
    except ValueError:
        return check(False, f"{what}: the answer is not JSON: {r.text[:200]!r}")
    check(set(body) == {"error"} and isinstance(body["error"], str), f"{what}: not {{'error': str}}: {body}")
    msg = body.get("error", "")
    check(msg and "\n" not in msg, f"{what}: the error is not one line: {msg!r}")
    for bad in ["/tmp/", "medseg-serve-", "job-"] + ([scratch] if scratch else []):
        check(bad not in msg, f"{what}: the error shows a server path ({bad}): {msg!r}")
    return msg


def submit_retrying(args, model, files):
    """A patient client: a 429 is retried after (at most half a second of) its Retry-After."""
    for _ in range(600):
        r = submit(args, model, files)
        if r.status_code != 429:
            return r
        time.sleep(min(float(r.headers.get("Retry-After", "1")), 0.5))
    return r


def submit(args, model, files, params=None, headers=None):
    if isinstance(files, str):
        with open(files, "rb") as f:
            return requests.post(url_of(args, jobs_path(model)), data=f.read(), params=params, headers=headers)
    parts = [(f"{k:04d}", (f"x{k}", open(p, "rb").read(), "application/octet-stream")) for k, p in enumerate(files)]
    return requests.post(url_of(args, jobs_path(model)), files=parts, params=params, headers=headers)


def wait_state(args, job_id, states, timeout=120, headers=None):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        r = requests.get(url_of(args, "/v1/jobs/" + job_id), headers=headers)
        if r.status_code != 200:
            return {"state": f"HTTP {r.status_code}"}
        last = r.json()
        if last["state"] in states:
            return last
        time.sleep(0.05)
    return last or {"state": "timeout"}


def expect_result(args, job_id, expected_file, what):
    j = wait_state(args, job_id, {"done", "failed", "cancelled"})
    if not check(j["state"] == "done", f"{what}: job ended {j}"):
        return
    r = requests.get(url_of(args, f"/v1/jobs/{job_id}/result"))
    check(r.status_code == 200, f"{what}: result status {r.status_code}")
    with open(expected_file, "rb") as f:
        check(r.content == f.read(), f"{what}: the result differs from medseg_predict's {expected_file} byte for byte")
    o = requests.get(url_of(args, f"/v1/jobs/{job_id}/overlay"))
    check(o.status_code == 200 and o.content[:8] == b"\x89PNG\r\n\x1a\n", f"{what}: no PNG overlay ({o.status_code})")


def nifti_claiming_huge():
    """A NIfTI-1 header that promises 2^31 float voxels, followed by a few bytes, gzipped."""
    hdr = bytearray(348)
    struct.pack_into("<i", hdr, 0, 348)
    struct.pack_into("<8h", hdr, 40, 3, 2048, 1024, 1024, 1, 1, 1, 1)
    struct.pack_into("<h", hdr, 70, 16)   # float32
    struct.pack_into("<h", hdr, 72, 32)
    struct.pack_into("<8f", hdr, 76, 1, 1, 1, 1, 1, 1, 1, 1)
    struct.pack_into("<f", hdr, 108, 352)
    hdr[344:348] = b"n+1\0"
    return gzip.compress(bytes(hdr) + b"\0" * 4 + b"\0" * 4096)


def raw_request(args, head, body=b"", wait=10):
    """Sends bytes on a socket and returns the status line and JSON body of the answer."""
    u = urllib.parse.urlparse(args.url)
    s = socket.create_connection((u.hostname, u.port), timeout=wait)
    s.sendall(head + body)
    data = b""
    try:
        while b"\r\n\r\n" not in data or len(data) < data.find(b"\r\n\r\n") + 4 + content_length(data):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    s.close()
    return data


def content_length(data):
    for line in data.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


def phase_info(args):
    h = requests.get(url_of(args, "/v1/health"))
    check(h.status_code == 200 and h.json()["status"] == "ok", f"health: {h.status_code} {h.text[:200]}")
    m = requests.get(url_of(args, "/v1/models")).json()["models"]
    names = [x["name"] for x in m]
    check(names == [args.model1, args.model2], f"models: {names}")
    check(m[1]["channels"] == ["ch0", "ch1"] and m[0]["labels"] == {"background": 0, "a": 1, "b": 2},
          f"models' channels and labels: {m}")
    doc = requests.get(url_of(args, "/v1/openapi.json")).json()
    check(doc.get("openapi", "").startswith("3.") and "/v1/models/{name}/jobs" in doc["paths"], "openapi document")
    page = requests.get(url_of(args, "/"))
    check(page.status_code == 200 and "<html" in page.text, "the page")


def phase_predictions(args):
    r = submit(args, args.model1, args.image1)
    if check(r.status_code == 202, f"submit: {r.status_code} {r.text[:200]}"):
        check(r.headers.get("Location") == "/v1/jobs/" + r.json()["id"], "Location header")
        expect_result(args, r.json()["id"], args.expect1, "one-channel job")
        again = requests.get(url_of(args, f"/v1/jobs/{r.json()['id']}/result"))
        check(again.status_code == 200, "a result can be fetched again within the TTL")
        time.sleep(args.ttl + 1.5)
        gone = requests.get(url_of(args, f"/v1/jobs/{r.json()['id']}"))
        one_line_error(gone, 404, "a fetched result after its TTL")
    r = submit(args, args.model2, args.image2)
    if check(r.status_code == 202, f"multipart submit: {r.status_code} {r.text[:200]}"):
        expect_result(args, r.json()["id"], args.expect2, "two-channel multipart job")
    if args.dicom_zip:
        phase_dicom(args)
    # Concurrent clients, both models: every result is still medseg_predict's.
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        subs = [(pool.submit(submit_retrying, args, args.model1, args.image1), args.expect1) for _ in range(3)]
        subs += [(pool.submit(submit_retrying, args, args.model2, args.image2), args.expect2) for _ in range(3)]
        ids = [(f.result(), e) for f, e in subs]
    for k, (r, e) in enumerate(ids):
        if check(r.status_code == 202, f"concurrent submit {k}: {r.status_code} {r.text[:200]}"):
            expect_result(args, r.json()["id"], e, f"concurrent job {k}")


def phase_dicom(args):
    """A zip of a DICOM series: a DICOM SEG by default, the NIfTI and an RTSTRUCT on asking."""
    with open(args.dicom_zip, "rb") as f:
        r = requests.post(url_of(args, jobs_path(args.model1)), data=f.read())
    if not check(r.status_code == 202, f"DICOM zip submit: {r.status_code} {r.text[:200]}"):
        return
    job = r.json()["id"]
    j = wait_state(args, job, {"done", "failed", "cancelled"})
    if not check(j["state"] == "done", f"DICOM zip job ended {j}"):
        return
    seg = requests.get(url_of(args, f"/v1/jobs/{job}/result"))
    check(seg.status_code == 200 and seg.headers.get("Content-Type") == "application/dicom"
          and seg.content[128:132] == b"DICM", f"the DICOM job's default result is no DICOM object: {seg.status_code}")
    check(seg.headers.get("Content-Disposition", "").endswith(f'filename="{job}.dcm"'),
          f"the SEG's download name: {seg.headers.get('Content-Disposition')}")
    nifti = requests.get(url_of(args, f"/v1/jobs/{job}/result"), params={"format": "nifti"})
    with open(args.expect_dicom_nifti, "rb") as f:
        check(nifti.status_code == 200 and nifti.content == f.read(),
              "the DICOM job's NIfTI differs from medseg_predict --output_format nifti's")
    rt = requests.get(url_of(args, f"/v1/jobs/{job}/result"), params={"format": "rtstruct"})
    check(rt.status_code == 200 and rt.content[128:132] == b"DICM", f"no RTSTRUCT: {rt.status_code}")
    one_line_error(requests.get(url_of(args, f"/v1/jobs/{job}/result"), params={"format": "png"}), 400,
                   "an unknown result format")
    image = submit(args, args.model1, args.image1)
    if check(image.status_code == 202, "image submit"):
        wait_state(args, image.json()["id"], {"done", "failed"})
        one_line_error(requests.get(url_of(args, f"/v1/jobs/{image.json()['id']}/result"),
                                    params={"format": "dicom_seg"}), 409, "a DICOM SEG of an image's job")


def phase_queue_and_cancel(args):
    """One worker busy with a slow job, the queue (--max_queue 2) full, one more refused; then cancels."""
    slow = submit(args, args.model1, args.slow)
    check(slow.status_code == 202, f"slow submit: {slow.status_code}")
    s_id = slow.json()["id"]
    check(wait_state(args, s_id, {"running"}, 60)["state"] == "running", "the slow job runs")
    queued = [submit(args, args.model1, args.image1) for _ in range(2)]
    check(all(q.status_code == 202 for q in queued), f"queued: {[q.status_code for q in queued]}")
    full = submit(args, args.model1, args.image1)
    one_line_error(full, 429, "a full queue")
    check(full.headers.get("Retry-After", "").isdigit(), f"429 without Retry-After: {dict(full.headers)}")
    m = requests.get(url_of(args, "/v1/metrics")).text
    check("medseg_serve_queue_length 2" in m and 'medseg_serve_jobs{state="running"} 1' in m,
          f"metrics while full: {m[:600]}")
    for q in queued:
        c = requests.delete(url_of(args, "/v1/jobs/" + q.json()["id"]))
        check(c.status_code == 200 and c.json()["state"] == "cancelled", f"cancel queued: {c.status_code} {c.text}")
        one_line_error(requests.delete(url_of(args, "/v1/jobs/" + q.json()["id"])), 409, "a double cancel")
        one_line_error(requests.get(url_of(args, f"/v1/jobs/{q.json()['id']}/result")), 409,
                       "the result of a cancelled job")
    c = requests.delete(url_of(args, "/v1/jobs/" + s_id))
    check(c.status_code == 202 and c.json()["state"] == "cancelling", f"cancel running: {c.status_code} {c.text}")
    check(wait_state(args, s_id, {"cancelled", "done", "failed"}, 60)["state"] == "cancelled", "the running job stops")
    one_line_error(requests.delete(url_of(args, "/v1/jobs/" + s_id)), 409, "cancelling a cancelled job")
    m = requests.get(url_of(args, "/v1/metrics")).text
    check('medseg_serve_jobs_ended_total{state="cancelled"} 3' in m and "process_resident_memory_bytes" in m,
          f"metrics after cancels: {m[:900]}")


def phase_bad_input(args):
    p1 = jobs_path(args.model1)
    one_line_error(requests.post(url_of(args, p1), data=b"not an image at all" * 100), 400, "a garbage body")
    with open(args.image1, "rb") as f:
        whole = f.read()
    one_line_error(requests.post(url_of(args, p1), data=whole[: len(whole) // 2]), 400, "a truncated gzip")
    one_line_error(requests.post(url_of(args, p1), data=nifti_claiming_huge()), 400, "a NIfTI claiming 2^31 voxels")
    one_line_error(submit(args, args.model1, [args.image1, args.image1]), 400, "two channels for a one-channel model")
    one_line_error(submit(args, args.model2, [args.image1]), 400, "one channel for a two-channel model")
    one_line_error(requests.post(url_of(args, jobs_path("Dataset999_No/model")), data=whole), 404, "an unknown model")
    one_line_error(requests.post(url_of(args, p1), params={"format": "jpeg"}, data=whole), 400, "an unknown format")
    one_line_error(requests.post(url_of(args, p1), data=b""), 400, "an empty body")
    one_line_error(requests.get(url_of(args, "/v1/jobs/" + "0" * 32)), 404, "an unknown job")
    one_line_error(requests.get(url_of(args, "/v1/jobs/../../etc/passwd")), 404, "a path as a job")
    one_line_error(requests.delete(url_of(args, "/v1/jobs/" + "f" * 32)), 404, "cancelling an unknown job")
    one_line_error(requests.get(url_of(args, "/v1/nothing")), 404, "an unknown route")
    # A 10 GB Content-Length: refused at once, before any byte of the body is read.
    t0 = time.time()
    head = (f"POST {p1} HTTP/1.1\r\nHost: x\r\nContent-Type: application/gzip\r\n"
            "Content-Length: 10737418240\r\n\r\n").encode()
    answer = raw_request(args, head, whole[:1000])
    check(answer.startswith(b"HTTP/1.1 413") and b'{"error":' in answer and time.time() - t0 < 5,
          f"a 10 GB Content-Length: {answer[:300]!r} after {time.time() - t0:.1f} s")
    # A client that goes away mid-upload leaves nothing behind.
    before = sorted(os.listdir(args.scratch))
    u = urllib.parse.urlparse(args.url)
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(f"POST {p1} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(whole) * 4}\r\n\r\n".encode() + whole[:3000])
    time.sleep(0.3)
    s.close()
    deadline = time.time() + 10
    while time.time() < deadline and not set(os.listdir(args.scratch)) <= set(before):
        time.sleep(0.1)
    check(set(os.listdir(args.scratch)) <= set(before), "a dropped upload left files in the scratch folder")
    # A client that trickles its headers a byte at a time is cut off at the request time limit (--upload_timeout_s).
    t0 = time.time()
    s = socket.create_connection((u.hostname, u.port), timeout=30)
    cut = False
    try:
        for ch in b"GET /v1/health HTTP/1.1\r\nHost: " + b"x" * 200:
            s.sendall(bytes([ch]))
            time.sleep(0.25)
            s.setblocking(False)
            try:
                if s.recv(4096) is not None:
                    cut = True
                    break
            except BlockingIOError:
                pass
            finally:
                s.setblocking(True)
    except OSError:
        cut = True
    s.close()
    check(cut and time.time() - t0 < args.request_timeout + 5,
          f"a trickling client was not cut off ({time.time() - t0:.1f} s)")
    # 1000 idle connections: the server still answers, and at once.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4096)), hard))
    idle = []
    try:
        for _ in range(1000):
            idle.append(socket.create_connection((u.hostname, u.port), timeout=10))
        t0 = time.time()
        h = requests.get(url_of(args, "/v1/health"), timeout=20)
        check(h.status_code == 200 and time.time() - t0 < 2,
              f"health with 1000 idle connections: {h.status_code} after {time.time() - t0:.1f} s")
    except OSError as e:
        check(False, f"1000 idle connections: {e}")
    for c in idle:
        c.close()
    h = requests.get(url_of(args, "/v1/health"))
    check(h.status_code == 200, "the server is up after the bad input")


def phase_token(args):
    h = requests.get(url_of(args, "/v1/health"))
    one_line_error(h, 401, "no token")
    check(h.headers.get("WWW-Authenticate") == "Bearer", "401 without WWW-Authenticate: Bearer")
    one_line_error(requests.get(url_of(args, "/v1/models"), headers={"Authorization": "Bearer " + args.token + "x"}),
                   401, "a wrong token")
    one_line_error(requests.post(url_of(args, jobs_path(args.model1)), data=b"x"), 401, "a submit without token")
    ok = requests.get(url_of(args, "/v1/models"), headers={"Authorization": "Bearer " + args.token})
    check(ok.status_code == 200, f"the right token: {ok.status_code}")
    check(requests.get(url_of(args, "/")).status_code == 200, "the page needs no token")


def phase_running(args):
    r = submit(args, args.model1, args.slow)
    check(r.status_code == 202, f"slow submit: {r.status_code}")
    j = wait_state(args, r.json()["id"], {"running"}, 60)
    check(j["state"] == "running", f"the slow job runs: {j}")
    print("running job " + r.json()["id"], flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--phase", required=True, choices=["main", "token", "running"])
    ap.add_argument("--model1")
    ap.add_argument("--model2")
    ap.add_argument("--image1")
    ap.add_argument("--image2", nargs="+")
    ap.add_argument("--expect1")
    ap.add_argument("--expect2")
    ap.add_argument("--slow")
    ap.add_argument("--dicom_zip")
    ap.add_argument("--expect_dicom_nifti")
    ap.add_argument("--scratch")
    ap.add_argument("--token")
    ap.add_argument("--ttl", type=float, default=1.0)
    ap.add_argument("--request_timeout", type=float, default=4.0)
    args = ap.parse_args()
    if args.phase == "main":
        for phase in (phase_info, phase_predictions, phase_queue_and_cancel, phase_bad_input):
            t0 = time.time()
            phase(args)
            print(f"{phase.__name__}: {time.time() - t0:.1f} s", flush=True)
    elif args.phase == "token":
        phase_token(args)
    else:
        phase_running(args)
    print(f"check_serve {args.phase}: {len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
