#!/usr/bin/env python3
"""medseg_serve's page in headless Chromium (Debian's chromium-headless-shell), driven over the DevTools protocol
on a pipe (--remote-debugging-pipe): open the page, choose the model, set the channel file, press Segment, wait
until the page shows the job done with its overlay, then take a screenshot. Prints one line per failed check;
exit status 0 when all held. The screenshot is written to --screenshot for the C++ test to check its pixels.

  check_serve_page.py --url http://127.0.0.1:PORT --model NAME --image F --screenshot OUT.png --overlay O.png
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request


class DevTools:
    """The DevTools protocol over the pipe Chromium opens on fds 3 (commands in) and 4 (answers out)."""

    def __init__(self, binary, profile):
        cmd_r, self.cmd_w = os.pipe()
        self.out_r, out_w = os.pipe()
        os.set_inheritable(cmd_r, True)
        os.set_inheritable(out_w, True)

        # subprocess keeps only pass_fds open in the child, after preexec_fn ran: 3 and 4 are among them.
        def wire():
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--remote-debugging-pipe",
             "--user-data-dir=" + profile, "--window-size=1000,1100", "about:blank"],
            pass_fds=tuple(sorted({3, 4, cmd_r, out_w})), preexec_fn=wire, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(out_w)
        self.next_id = 0
        self.buffer = b""
        self.session = None

    def call(self, method, params=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while time.time() < deadline:
            while b"\0" not in self.buffer:
                chunk = os.read(self.out_r, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed its DevTools pipe")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]
        raise RuntimeError(f"{method}: no answer within {timeout} s")

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        return r["result"].get("value")

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def wait_for(dt, expression, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = dt.evaluate(expression)
        if value:
            return value
        time.sleep(0.1)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--overlay", required=True, help="where to write the job's overlay picture, as the server gives it")
    ap.add_argument("--chromium", default=shutil.which("chromium-headless-shell") or shutil.which("chromium") or "")
    args = ap.parse_args()
    failures = []
    profile = tempfile.mkdtemp(prefix="medseg-page-")
    dt = DevTools(args.chromium, profile)
    try:
        target = dt.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        dt.session = dt.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        dt.call("Page.enable")
        dt.call("Page.navigate", {"url": args.url.rstrip("/") + "/"})
        if not wait_for(dt, "document.querySelectorAll('#model option').length > 0 && "
                            "document.querySelectorAll('.channel').length > 0", 20):
            failures.append("the page did not list the models")
        dt.evaluate(f"document.getElementById('model').value = {json.dumps(args.model)}; "
                    "document.getElementById('model').dispatchEvent(new Event('change')); true")
        doc = dt.call("DOM.getDocument")["root"]["nodeId"]
        node = dt.call("DOM.querySelector", {"nodeId": doc, "selector": ".channel"})["nodeId"]
        dt.call("DOM.setFileInputFiles", {"nodeId": node, "files": [os.path.abspath(args.image)]})
        dt.evaluate("document.getElementById('submit').click(); true")
        state = wait_for(dt, "['done','failed','refused','cancelled'].includes(document.body.dataset.state) && "
                             "(document.body.dataset.state !== 'done' || !!document.body.dataset.overlay) && "
                             "document.body.dataset.state", 120)
        if state != "done":
            failures.append(f"the page's job ended as {state!r}: {dt.evaluate('document.body.dataset.error')}")
        if not dt.evaluate("new URLSearchParams(location.search).get('job') !== null"):
            failures.append("the page did not put the job in its address")
        if not dt.evaluate("document.getElementById('download').href.startsWith('blob:')"):
            failures.append("the page offers no download")
        shot = dt.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(args.screenshot, "wb") as f:
            f.write(base64.b64decode(shot))
        print("overlay on the page: " + str(dt.evaluate("document.body.dataset.overlay")))
        job = dt.evaluate("new URLSearchParams(location.search).get('job')")
        with urllib.request.urlopen(f"{args.url.rstrip('/')}/v1/jobs/{job}/overlay") as r, open(args.overlay, "wb") as f:
            f.write(r.read())
    except RuntimeError as e:
        failures.append(str(e))
    finally:
        dt.close()
        shutil.rmtree(profile, ignore_errors=True)
    for f in failures:
        print("FAILED: " + f)
    print(f"check_serve_page: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
