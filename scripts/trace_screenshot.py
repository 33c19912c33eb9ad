#!/usr/bin/python3
"""A picture of a hal trace in a trace viewer, taken offline: Chromium's own DevTools
Performance panel (the trace viewer built into Chromium, served by a headless Chromium's
debugging port), with the trace loaded through the panel's file input and every track expanded.

    scripts/trace_screenshot.py TRACE.json OUT.png [--tracks N] [--size 1600x900]

Perfetto's UI would need the network; this needs Debian's `chromium` and `python3-websocket`.
The clicks are placed for Chromium 156's DevTools in a fresh profile: another version may need
them moved (each step is named below).
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

import websocket  # python3-websocket


class DevTools:
    def __init__(self, url):
        self.socket = websocket.create_connection(url, timeout=30)
        self.next_id = 0

    def send(self, method, **params):
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def click(self, x, y):
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
        time.sleep(0.5)


def open_target(port, url):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/json/new?{url}", method="PUT")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def wait_for_chromium(port):
    for _ in range(100):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"chromium did not open its debugging port {port}")


def screenshot(port, trace, out, tracks, width, height):
    # The DevTools frontend needs a page to attach to before its panels work.
    blank = open_target(port, "about:blank")
    frontend = (f"http://127.0.0.1:{port}/devtools/trace_app.html"
                f"?ws=127.0.0.1:{port}/devtools/page/{blank['id']}")
    tools = DevTools(open_target(port, frontend)["webSocketDebuggerUrl"])
    scale_x, scale_y = width / 1600, height / 900  # the positions below are for 1600 x 900
    at = lambda x, y: (round(x * scale_x), round(y * scale_y))
    tools.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
               deviceScaleFactor=1, mobile=False)
    time.sleep(4)
    tools.click(*at(932, 411))  # close the "connection closed" card (no page is debugged)
    tools.click(*at(115, 13))   # the Performance tab
    time.sleep(1.5)
    tools.send("DOM.getDocument", depth=-1, pierce=True)
    search = tools.send("DOM.performSearch", query="input[type=file]",
                        includeUserAgentShadowDOM=True)
    if search["resultCount"] == 0:
        raise RuntimeError("the Performance panel's file input was not found")
    nodes = tools.send("DOM.getSearchResults", searchId=search["searchId"], fromIndex=0,
                       toIndex=search["resultCount"])
    for node in nodes["nodeIds"]:
        tools.send("DOM.setFileInputFiles", files=[os.path.abspath(trace)], nodeId=node)
    time.sleep(8)
    tools.click(*at(1571, 77))  # the flame chart's keyboard-shortcuts card
    tools.click(*at(15, 40))    # hide the sidebar
    time.sleep(0.8)
    tools.click(*at(14, 129))   # expand the process
    time.sleep(1)
    for k in reversed(range(tracks)):  # each track, from the last up so the others stay put
        tools.click(*at(20, (132 + 19 * k) * 1600 / 1456))
    time.sleep(1.5)
    shot = tools.send("Page.captureScreenshot", format="png")
    with open(out, "wb") as f:
        f.write(base64.b64decode(shot["data"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("out")
    parser.add_argument("--tracks", type=int, default=0, help="tracks to expand (from the top)")
    parser.add_argument("--size", default="1600x900")
    parser.add_argument("--port", type=int, default=9334)
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    profile = tempfile.mkdtemp(prefix="hal-trace-shot-")
    chromium = subprocess.Popen(
        ["chromium", "--headless=new", "--no-sandbox", f"--remote-debugging-port={args.port}",
         f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_chromium(args.port)
        screenshot(args.port, args.trace, args.out, args.tracks, width, height)
    finally:
        chromium.terminate()
        chromium.wait(timeout=30)
        shutil.rmtree(profile, ignore_errors=True)
    print(f"{args.out}: {args.trace} in Chromium's DevTools Performance panel")


if __name__ == "__main__":
    main()
