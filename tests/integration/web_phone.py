"""The device page on a phone-sized screen (390x844 in Chromium): the app view fills
the screen with no frame and no sideways scroll, every control is a touch target of
at least 44 px, and the controls sheet opens, drives the session and closes. Saves
the screenshots the README shows."""
import os
import sys
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from checks import check, finish, headless_chromium

HTTP, OUT = sys.argv[1], sys.argv[2]
d = headless_chromium("390,844")
# Headless windows are at least 500 px wide: the phone's screen is emulated instead,
# with touch, as Chromium's device mode does.
d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})
d.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})


def wait(fn, timeout=8):
    try:
        WebDriverWait(d, timeout, poll_frequency=0.05).until(lambda _: fn())
        return True
    except Exception:
        return False


def small_targets():
    return d.execute_script("""return [...document.querySelectorAll('button, input, select, summary')]
        .filter(e => e.offsetParent !== null && getComputedStyle(e).visibility !== 'hidden')
        .map(e => [e.textContent.trim() || e.id || e.name, e.getBoundingClientRect()])
        .filter(([n, r]) => r.width > 0 && (r.height < 44 || r.width < 44)).map(([n, r]) => n + ' ' + Math.round(r.width) + 'x' + Math.round(r.height));""")


try:
    d.get(f"{HTTP}?session=demo")
    check("the page connects on a phone-sized screen", wait(lambda: d.find_element(By.ID, "conn").text == "connected"))
    width = d.execute_script("return innerWidth")
    check("the screen is 390 px wide", width == 390, width)
    check("no horizontal scroll", d.execute_script("return document.documentElement.scrollWidth <= innerWidth && document.body.scrollWidth <= innerWidth"),
          d.execute_script("return [document.documentElement.scrollWidth, innerWidth]"))
    phone = d.execute_script("const r = document.getElementById('phone').getBoundingClientRect(); const s = getComputedStyle(document.getElementById('phone')); return [r.left, r.width, r.bottom, s.borderTopWidth]")
    check("the app view fills the screen without a frame", phone[0] == 0 and abs(phone[1] - width) < 1 and phone[3] == "0px"
          and phone[2] <= d.execute_script("return innerHeight") + 1, phone)
    controls = d.find_element(By.ID, "controls")
    check("the controls are not on the screen until asked for", not controls.is_displayed())
    check("every visible control is at least 44 px", not small_targets(), small_targets())
    d.save_screenshot(os.path.join(OUT, "web-phone.png"))

    d.find_element(By.ID, "controls-toggle").click()
    check("the Controls button opens the sheet", wait(lambda: controls.is_displayed() and d.find_element(By.CSS_SELECTOR, "[data-route-button]").is_displayed()))
    time.sleep(0.3)   # after the sheet has risen
    check("in the sheet, every control is at least 44 px too", not small_targets(), small_targets())
    check("the deep link field sits in the sheet", d.find_element(By.ID, "url").is_displayed())
    d.save_screenshot(os.path.join(OUT, "web-phone-controls.png"))
    rev = d.find_element(By.TAG_NAME, "body").get_attribute("data-rev")
    d.find_element(By.CSS_SELECTOR, "[data-route-button=main]").click()
    check("a route button in the sheet drives the session, and the sheet closes to show it",
          wait(lambda: d.find_element(By.TAG_NAME, "body").get_attribute("data-rev") != rev and not controls.is_displayed()))
    d.find_element(By.ID, "controls-toggle").click()
    wait(lambda: controls.is_displayed())
    time.sleep(0.3)   # after the sheet has risen: a click while it moves can miss (seen under load)
    d.find_element(By.ID, "url").send_keys("/product/42")
    d.find_element(By.CSS_SELECTOR, "#open button").click()
    check("a deep link from the sheet opens on the device", wait(lambda: "Product 42" in d.find_element(By.ID, "phone").text))
    time.sleep(0.4)   # after the screen has slid in
    check("no horizontal scroll after navigating", d.execute_script("return document.documentElement.scrollWidth <= innerWidth"))
    d.save_screenshot(os.path.join(OUT, "web-phone-product.png"))
finally:
    d.quit()
finish("web_phone")
