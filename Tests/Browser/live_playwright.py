#!/usr/bin/env python3
"""The live view in a real browser, driven by Playwright for Python on the system's Chromium (no browser download).

Usage: live_playwright.py PINLAB_BINARY PKI_DIR CHROMIUM

Starts `pinlab intercept --live 127.0.0.1:0` (declaring **.api.pinning.test pinned), opens the printed live address
in Chromium, makes a session of `curl -x` runs through the proxy while the page is open, and checks what the page
shows: each host's verdict as the page renders it, then a click on a host's row (only that host's connections are
listed) and a second click (all again). Prints one line per check and "ok" at the end; exits 1 at the first check
that fails, with what the page showed.
"""
import os
import re
import subprocess
import sys
import time

from playwright.sync_api import sync_playwright


def fail(message, page=None):
    print("FAIL:", message)
    if page is not None:
        print("page text:", page.inner_text("body")[:3000])
    sys.exit(1)


def main():
    pinlab, pki_dir, chromium = sys.argv[1], sys.argv[2], sys.argv[3]
    proxy = subprocess.Popen(
        [pinlab, "intercept", "--dir", pki_dir, "--listen", "127.0.0.1:0", "--live", "127.0.0.1:0",
         "--pinned", "**.api.pinning.test", "--until-idle", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        proxy_address = live_url = None
        deadline = time.monotonic() + 60
        lines = []
        while (proxy_address is None or live_url is None) and time.monotonic() < deadline:
            line = proxy.stdout.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"live view: (http://127\.0\.0\.1:\d+/live#token=[A-Za-z0-9_-]+)", line)
            if m:
                live_url = m.group(1)
            m = re.search(r"listening on (127\.0\.0\.1:\d+)", line)
            if m:
                proxy_address = m.group(1)
        if proxy_address is None or live_url is None:
            fail("pinlab intercept printed no proxy or live address: " + "".join(lines))
        print("proxy", proxy_address, "live", live_url.split("#")[0])

        root = os.path.join(pki_dir, "certs", "proxy-root", "cert.pem")

        def curl(host, trusting_proxy_root):
            args = ["curl", "-s", "-o", "/dev/null", "--max-time", "20", "-x", "http://" + proxy_address]
            if trusting_proxy_root:
                args += ["--cacert", root]
            subprocess.run(args + ["https://%s/" % host], timeout=30)

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(live_url)
            page.wait_for_selector("#status:has-text('live:')", timeout=15000)
            print("page is live before any connection")

            # A session: the unpinned CDN through (trusted root), the pinned API refused (curl does not trust the
            # proxy's root), a pinned subdomain that sends its request (trusted root): NOT PINNED.
            curl("cdn.pinning.test", True)
            curl("api.pinning.test", False)
            curl("v2.api.pinning.test", True)
            expected = {"cdn.pinning.test": "allowed", "api.pinning.test": "refused", "v2.api.pinning.test": "not-pinned"}
            for host, verdict in expected.items():
                selector = "#groups tr[data-name='%s'][data-verdict='%s']" % (host, verdict)
                try:
                    page.wait_for_selector(selector, timeout=15000)
                except Exception:
                    fail("no row %s with verdict %s" % (host, verdict), page)
                print("row", host, verdict)
            bad = page.locator("#groups tr.bad td.name").all_inner_texts()
            if bad != ["v2.api.pinning.test"]:
                fail("the rows marked bad are %r" % bad, page)
            if len(page.locator("#connections tr").all()) != 3:
                fail("expected 3 connection rows", page)

            # Click the refused host: only its connection is listed, and the page says so.
            page.click("#groups tr[data-name='api.pinning.test']")
            page.wait_for_selector("#filter:has-text('api.pinning.test')", timeout=5000)
            shown = page.locator("#connections tr").evaluate_all("rows => rows.map(r => r.dataset.group)")
            if shown != ["api.pinning.test"]:
                fail("after the click the connections are %r" % shown, page)
            refused = page.locator("#connections tr td:last-child").all_inner_texts()
            if not refused or not refused[0].startswith("refused"):
                fail("the API's connection does not say it was refused: %r" % refused, page)
            print("click: only api.pinning.test's connection:", refused[0])

            # A connection made while filtered appears only once its host is shown again.
            curl("cdn.pinning.test", True)
            page.wait_for_selector("#groups tr[data-name='cdn.pinning.test'] td:nth-child(3):has-text('2')", timeout=15000)
            if page.locator("#connections tr").evaluate_all("rows => rows.map(r => r.dataset.group)") != ["api.pinning.test"]:
                fail("a new connection of another host broke the filter", page)
            page.click("#groups tr[data-name='api.pinning.test']")
            page.wait_for_function("document.querySelectorAll('#connections tr').length === 4", timeout=5000)
            if page.inner_text("#filter").strip():
                fail("the filter note stayed after the second click", page)
            print("second click: all 4 connections")
            shot = page.screenshot()
            if len(shot) < 5000:
                fail("the screenshot is %d bytes: blank?" % len(shot))
            browser.close()
        print("ok")
    finally:
        proxy.terminate()
        try:
            proxy.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proxy.kill()


if __name__ == "__main__":
    main()
