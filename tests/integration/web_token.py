"""The web page against a server with an auth file: without a token it says forbidden;
a token typed into its field is kept for the browser session and lets it in."""
import sys
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from checks import check, finish, headless_chromium

HTTP = sys.argv[1]
d = headless_chromium()


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
finish("web_token")
