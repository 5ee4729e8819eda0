"""What every Python test script here shares: named checks, counted, and the closing
line `NAME: N passed, N failed` that the suite's output ends each script with."""
import sys

_counts = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    """Records one named check; prints `ok` or `FAIL` with the detail."""
    key = "passed" if ok else "failed"
    _counts[key] += 1
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f" {detail}"), flush=True)


def finish(script):
    """Prints the closing line and exits non-zero when anything failed."""
    print(f"{script}: {_counts['passed']} passed, {_counts['failed']} failed")
    sys.exit(1 if _counts["failed"] else 0)


def headless_chromium(window="1100,760", extra=()):
    """Debian's chromium through its chromedriver, headless, console messages kept;
    `extra` flags besides (--ignore-certificate-errors for a test certificate)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", f"--window-size={window}", *extra]:
        options.add_argument(arg)
    options.binary_location = "/usr/bin/chromium"
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def click(driver, selector, timeout=8):
    """Clicks the element matching the CSS selector, found again if the page replaced it
    between finding and clicking (a list re-rendered as revisions arrive). True once clicked."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By

    def attempt(d):
        try:
            d.find_element(By.CSS_SELECTOR, selector).click()
            return True
        except (NoSuchElementException, StaleElementReferenceException):
            return False
    return wait(driver, attempt, timeout)


def wait(driver, fn, timeout=8):
    """Polls fn(driver) every 50 ms until it is true (True) or the timeout passes (False)."""
    from selenium.webdriver.support.ui import WebDriverWait
    try:
        WebDriverWait(driver, timeout, poll_frequency=0.05).until(lambda _: fn(driver))
        return True
    except Exception:
        return False


async def next_of(ws, *kinds, timeout=5):
    """The next message on a `websockets` connection whose type is one of `kinds`, as
    JSON (those before it are skipped); times out after `timeout` s per message."""
    import asyncio
    import json
    while True:
        m = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if m["type"] in kinds:
            return m
