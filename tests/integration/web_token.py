"""The web page against a server with an auth file: without a token it says forbidden;
a token typed into its field is kept for the browser session and lets it in."""
import sys
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

HTTP = sys.argv[1]
o = webdriver.ChromeOptions()
for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]:
    o.add_argument(a)
o.binary_location = "/usr/bin/chromium"
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
passed = failed = 0
def check(name, ok):
    global passed, failed
    passed += bool(ok); failed += not ok
    print(("ok   " if ok else "FAIL ") + name, flush=True)
def wait(fn):
    try:
        WebDriverWait(d, 8, poll_frequency=0.05).until(lambda _: fn()); return True
    except Exception:
        return False
try:
    d.get(f"{HTTP}?session=demo")
    conn = lambda: d.find_element(By.ID, "conn").text
    check("web page without a token shows forbidden", wait(lambda: conn().startswith("forbidden")))
    d.find_element(By.ID, "token").send_keys("viewer-token-3")
    d.find_element(By.CSS_SELECTOR, "#tokenform button").click()
    check("a token typed into the field lets it in", wait(lambda: conn() == "connected"))
    d.get(f"{HTTP}?session=demo")
    check("and is kept for the browser session", wait(lambda: conn() == "connected"))
finally:
    d.quit()
print(f"web_token: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
