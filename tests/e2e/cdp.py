#!/usr/bin/env python3
"""Open a page in headless Chromium and report what a person would see.

Usage: cdp.py [--shots DIR] [--size WxH] [--eval JS] [--timeout S]
              NAME=URL [NAME=URL...]

Starts Chromium (its own profile in a temporary directory) with the
DevTools protocol on a port it picks, and for each page in turn opens URL,
waits until document.body.dataset.ready is set (the report's "rendered"
mark) or the timeout passes, and takes what it says; then prints one JSON
object, each NAME's:

  ready      the data-ready value ("1", "error", or null)
  ms         milliseconds from navigation to ready
  console    console messages, exceptions and browser log entries, as
             "LEVEL: text" (any of them is a problem on our pages)
  requests   every URL the page asked for other than itself
  eval       the value of JS (an expression, evaluated in the page), or null

and with --shots saves a screenshot of the whole page as DIR/NAME.png.
One Chromium serves every page (it costs a second of CPU to start).  Only
the standard
library: the WebSocket client below speaks just what the protocol needs
(text frames, masked from the client, lengths of any size).
"""
import argparse
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


class WebSocket:
    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, _, path = url[5:].partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise OSError("the DevTools socket closed during the handshake")
            head += chunk
        head, _, self.buf = head.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise OSError("no WebSocket upgrade: %r" % head[:200])

    def send(self, text):
        data = text.encode()
        hdr = bytearray([0x81])
        n = len(data)
        if n < 126:
            hdr.append(0x80 | n)
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            hdr += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        hdr += mask
        self.sock.sendall(bytes(hdr) + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise OSError("the DevTools socket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            op = b0 & 0x0F
            if op == 0x8:
                raise OSError("the DevTools socket was closed")
            if op in (0x9, 0xA):
                continue            # ping/pong: not for us
            message += payload
            if b0 & 0x80:
                return message.decode()


class Page:
    def __init__(self, ws):
        self.ws, self.id, self.events = ws, 0, []

    def call(self, method, **params):
        self.id += 1
        self.ws.send(json.dumps({"id": self.id, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError("evaluating %s: %s" % (expr[:80], r["exceptionDetails"]))
        return r["result"].get("value")


def visit(page, url, a, shot):
    """One page: its ready mark, console, requests, eval and screenshot."""
    width, height = (int(v) for v in a.size.split("x"))
    page.events = []
    page.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
              deviceScaleFactor=1, mobile=False)
    page.call("Page.navigate", url="about:blank")
    t0 = time.time()
    page.call("Page.navigate", url=url)
    ready, ms = None, None
    while time.time() - t0 < a.timeout:
        ready = page.eval("document.URL === %s && document.body ? "
                          "document.body.dataset.ready || null : null" % json.dumps(url))
        if ready:
            ms = round((time.time() - t0) * 1000)
            break
        time.sleep(0.05)
    time.sleep(0.3)             # late errors, a resize
    value = page.eval(a.eval) if a.eval else None
    if shot:
        w, h = json.loads(page.eval("JSON.stringify([document.documentElement.scrollWidth,"
                                    " document.documentElement.scrollHeight])"))
        png = page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                        clip={"x": 0, "y": 0, "width": max(w, width), "height": h, "scale": 1})
        with open(shot, "wb") as f:
            f.write(base64.b64decode(png["data"]))
    page.call("Runtime.evaluate", expression="0")   # flush the events
    said, asked = [], []
    for m in page.events:
        p = m.get("params", {})
        if m.get("method") == "Runtime.consoleAPICalled":
            said.append("%s: %s" % (p["type"], " ".join(str(x.get("value", x.get("description")))
                                                          for x in p["args"])))
        elif m.get("method") == "Runtime.exceptionThrown":
            said.append("exception: %s" % json.dumps(p["exceptionDetails"])[:400])
        elif m.get("method") == "Log.entryAdded":
            said.append("%s: %s" % (p["entry"]["level"], p["entry"]["text"]))
        elif m.get("method") == "Network.requestWillBeSent":
            asked_url = p["request"]["url"]
            if asked_url.split("#")[0] not in (url.split("#")[0], "about:blank"):
                asked.append(asked_url)
    return {"ready": ready, "ms": ms, "console": said, "requests": asked, "eval": value}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pages", nargs="+", metavar="NAME=URL")
    ap.add_argument("--shots")
    ap.add_argument("--size", default="1400x1000")
    ap.add_argument("--eval")
    ap.add_argument("--timeout", type=float, default=30)
    a = ap.parse_args()
    profile = tempfile.mkdtemp(prefix="cdp.")
    chrome = subprocess.Popen(
        ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
         "--no-first-run", "--remote-debugging-port=0",
         "--user-data-dir=" + profile, "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.time() + 30
        while not (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1):
            if time.time() > deadline or chrome.poll() is not None:
                sys.exit("cdp.py: Chromium did not start")
            time.sleep(0.05)
        port = int(open(port_file).read().split()[0])
        targets = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port))
        page = Page(WebSocket(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"]))
        for domain in ("Runtime", "Log", "Page", "Network"):
            page.call(domain + ".enable")
        out = {}
        for spec in a.pages:
            name, _, url = spec.partition("=")
            out[name] = visit(page, url, a,
                              os.path.join(a.shots, name + ".png") if a.shots else None)
        print(json.dumps(out))
    finally:
        chrome.terminate()
        try:
            chrome.wait(10)
        except subprocess.TimeoutExpired:
            chrome.kill()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
