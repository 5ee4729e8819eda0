"""The URL navsyncd --lan printed, opened in Chromium as a phone on the network would:
it connects. The same page without the token is refused, and says so."""
import sys
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from checks import check, finish, headless_chromium

URL = sys.argv[1]


def conn_after(url):
    d = headless_chromium("390,844")
    try:
        d.get(url)
        text = lambda: d.find_element(By.ID, "conn").text
        try:
            WebDriverWait(d, 8, poll_frequency=0.05).until(lambda _: text() not in ("connecting", ""))
        except Exception:
            pass
        return text()
    finally:
        d.quit()


check("the printed URL, from the LAN address, connects", conn_after(URL) == "connected")
without = URL.split("&token=")[0]
said = conn_after(without)
check("without the token the page is refused and says why", said.startswith("forbidden"), said)
finish("web_lan")
