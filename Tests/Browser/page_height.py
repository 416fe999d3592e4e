"""Prints the height in CSS pixels of an HTML file as headless Chromium lays it out (1280 px wide), and how many
<details> elements it has closed. Usage: page_height.py CHROMIUM FILE.html"""
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

chromium, page_file = sys.argv[1], Path(sys.argv[2]).resolve()
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(page_file.as_uri())
    height = page.evaluate("document.documentElement.scrollHeight")
    closed = page.evaluate("document.querySelectorAll('details:not([open])').length")
    # Opening every folded part shows everything the report holds.
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    opened = page.evaluate("document.documentElement.scrollHeight")
    print(f"height {height} closed {closed} opened {opened}")
    browser.close()
