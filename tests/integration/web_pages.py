"""The web device page in a real browser: two headless Chromium pages on one session,
driven by navclient and by clicks; the page survives a server restart; no errors in
the console; a screenshot of each page is saved."""
import json
import os
import urllib.request
import subprocess
import sys
import time

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from checks import check, click, finish, headless_chromium, wait

HTTP, WS, NAVCLIENT, OUT, RESTART = sys.argv[1:6]
SESSION = "web-" + str(os.getpid())



def browser(window="1100,760"):
    d = headless_chromium(window)
    d.get(f"{HTTP}?session={SESSION}")
    return d


def top_route(d):
    """The route of the screen a device shows: the last (topmost) screen drawn."""
    screens = d.find_elements(By.CSS_SELECTOR, ".screen")
    return screens[-1].get_attribute("data-route") if screens else None


def top_of(state):
    """The route of the topmost screen of a state, as the page draws it last."""
    last = None

    def walk(c):
        nonlocal last
        if c["kind"] == "root":
            entry(c["current"])
        elif c["kind"] == "tabs":
            entry(next(t for t in c["tabs"] if t["id"] == c["selected"]))
        else:
            for e in c["stack"]:
                entry(e)

    def entry(e):
        nonlocal last
        if "coordinator" in e:
            walk(e["coordinator"])
        else:
            last = e["route"]
    walk(state["root"])
    return last


def navclient(*commands):
    subprocess.run([NAVCLIENT, "exec", WS, "--session", SESSION, *commands], check=True, capture_output=True)


def console_errors(d, allow_websocket=False):
    errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    if allow_websocket:
        errors = [e for e in errors if "WebSocket" not in e["message"] and "ERR_CONNECTION_REFUSED" not in e["message"]]
    return errors


connected = lambda d: d.find_element(By.ID, "conn").text == "connected"
notice = lambda d: d.find_element(By.ID, "notice").text

# Without ?session: the picker alone, no empty panels or dead deep-link box under it.
p = headless_chromium()
try:
    p.get(HTTP)
    WebDriverWait(p, 8).until(lambda d: d.find_element(By.ID, "picker").is_displayed())
    check("without ?session only the session picker shows", not p.find_element(By.ID, "main").is_displayed()
          and not p.find_element(By.ID, "open").is_displayed())
finally:
    p.quit()

a = browser()
# A session name nobody made (a typo) is not created behind the user's back.
check("an unknown session is said to be missing, with an offer to create it",
      wait(a, lambda d: "There is no session" in notice(d) and d.find_element(By.CSS_SELECTOR, "#create button").is_displayed()), notice(a))
a.find_element(By.CSS_SELECTOR, "#create button").click()
b = browser()
try:
    check("created from the page, both pages connect and join", wait(a, connected) and wait(b, connected))

    navclient("setRoot main", "push detail id=42")
    check("a command from navclient changes both pages", wait(a, lambda d: top_route(d) == "detail") and wait(b, lambda d: top_route(d) == "detail"))
    check("the navigation bar shows the route's title", wait(b, lambda d: "Product 42" in d.find_element(By.ID, "phone").text))

    a.find_element(By.CSS_SELECTOR, "[data-route-button=reviews]").click()
    form = a.find_element(By.CSS_SELECTOR, "#paramform form")
    # Values that do not fit the param's type are refused with a reason, nothing sent.
    rev_before = a.find_element(By.TAG_NAME, "body").get_attribute("data-rev")
    form.find_element(By.NAME, "id").send_keys("abc")
    form.find_element(By.NAME, "rating").send_keys("4.5 stars")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    problem = form.find_element(By.CSS_SELECTOR, ".problem").text
    check("a form says what is wrong with each value and sends nothing",
          "id must be a whole number" in problem and "rating must be a number" in problem
          and a.find_element(By.TAG_NAME, "body").get_attribute("data-rev") == rev_before, problem)
    form.find_element(By.NAME, "id").clear()
    form.find_element(By.NAME, "id").send_keys("5")
    form.find_element(By.NAME, "rating").clear()
    form.find_element(By.NAME, "rating").send_keys("4.5")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    check("a route button (with typed params) in one page changes the other", wait(b, lambda d: top_route(d) == "reviews"))
    check("the params are shown", wait(b, lambda d: "4.5" in d.find_element(By.ID, "phone").text))

    backs = [x for x in b.find_elements(By.CSS_SELECTOR, "[data-back]") if x.is_displayed()]
    backs[-1].click()
    check("Back in one page pops for both", wait(a, lambda d: top_route(d) == "detail") and wait(b, lambda d: top_route(d) == "detail"))

    a.find_element(By.CSS_SELECTOR, "[data-route-button=settings]").click()
    check("a sheet rises on both pages", wait(b, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".layer.sheet")) == 1))
    time.sleep(0.5)   # as a person would: after the sheet has risen
    # The screen under the sheet is covered: its Back does not react.
    covered = b.execute_script("return [...document.querySelectorAll('[data-back]')].filter(x => x.closest('[inert]')).length")
    under = b.execute_script("""const x = [...document.querySelectorAll('[data-back]')].find(x => x.closest('[inert]'));
        if (!x) return null; const r = x.getBoundingClientRect();
        const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2); return hit === x || x.contains(hit);""")
    check("the layer under the sheet is inert: its Back cannot be pressed", covered >= 1, covered)
    rev_sheet = b.find_element(By.TAG_NAME, "body").get_attribute("data-rev")
    # A real pointer click where that Back is drawn (the part of the bar above the sheet).
    x = [e for e in b.find_elements(By.CSS_SELECTOR, "[data-back]") if b.execute_script("return !!arguments[0].closest('[inert]')", e)][0]
    ActionChains(b).move_to_element_with_offset(x, 0, -12).click().perform()
    time.sleep(0.3)
    check("clicking it changes nothing", b.find_element(By.TAG_NAME, "body").get_attribute("data-rev") == rev_sheet and
          len(b.find_elements(By.CSS_SELECTOR, ".layer.sheet")) == 1, under)
    b.find_element(By.CSS_SELECTOR, "[data-close]").click()
    check("closing the sheet dismisses it for both", wait(a, lambda d: not d.find_elements(By.CSS_SELECTOR, ".layer.sheet")))

    a.find_element(By.CSS_SELECTOR, "[data-tab=cart]").click()
    check("a tab tap selects it for both", wait(b, lambda d: top_route(d) == "items"))

    a.find_element(By.ID, "url").send_keys("/product/7")
    a.find_element(By.CSS_SELECTOR, "#open button").click()
    check("the address field opens deep links", wait(b, lambda d: "Product 7" in d.find_element(By.ID, "phone").text))

    navclient('alert "Delete this?" message=Really')
    check("an alert shows on both pages", wait(a, lambda d: d.find_elements(By.CSS_SELECTOR, ".alert")) and wait(b, lambda d: d.find_elements(By.CSS_SELECTOR, ".alert")))
    a.find_element(By.CSS_SELECTOR, ".alert [data-button=ok]").click()
    check("an alert answered in one page disappears from the other", wait(b, lambda d: not d.find_elements(By.CSS_SELECTOR, ".alert")))

    a.find_element(By.ID, "url").clear()
    a.find_element(By.ID, "url").send_keys("/nowhere")
    a.find_element(By.CSS_SELECTOR, "#open button").click()
    check("server errors show briefly, not as browser alerts", wait(a, lambda d: "not_found" in d.find_element(By.ID, "toast").text))

    # The demo's guards: a refusal names the guard and route; a redirect says where it went.
    for url, wanted in (("/checkout", "guarded: checkout needs cartFull"), ("/orders/7", "redirected: guard signedIn → /login?next=%2Forders%2F7")):
        a.find_element(By.ID, "url").clear()
        a.find_element(By.ID, "url").send_keys(url)
        a.find_element(By.CSS_SELECTOR, "#open button").click()
        check(f"a guard's answer shows on the page that sent {url}: '{wanted}'", wait(a, lambda d: wanted in d.find_element(By.ID, "toast").text),
              a.find_element(By.ID, "toast").text)
    check("...and the redirect shows on the other page too", wait(b, lambda d: "Sign in" in d.find_element(By.ID, "phone").text))
    a.find_element(By.ID, "url").clear()
    a.find_element(By.ID, "url").send_keys("/product/7")
    a.find_element(By.CSS_SELECTOR, "#open button").click()
    wait(b, lambda d: "Product 7" in d.find_element(By.ID, "phone").text)

    # The session's data on the page: the keys the guards read are offered; set from one
    # page (sign in, fill the cart), shown on both, and the guards let the visitor through.
    check("the side panel offers the keys the flow's guards read",
          a.find_element(By.ID, "data-paths").get_attribute("textContent") == "cart, user", a.find_element(By.ID, "data-paths").get_attribute("textContent"))

    def set_data(key, value):
        a.find_element(By.ID, "data-key").clear()
        a.find_element(By.ID, "data-key").send_keys(key)
        a.find_element(By.ID, "data-value").clear()
        a.find_element(By.ID, "data-value").send_keys(value)
        a.execute_script("document.querySelector('#dataform button').click()")
    set_data("cart", "[42]")
    set_data("user", "ann")
    data = lambda d: json.loads(d.find_element(By.ID, "data").get_attribute("textContent") or "{}")
    check("a controller sets the session's data from the page (a cart, a sign-in): both pages show it",
          wait(b, lambda d: data(d) == {"cart": [42], "user": "ann"}), data(b))
    a.find_element(By.ID, "url").clear()
    a.find_element(By.ID, "url").send_keys("/checkout")
    a.find_element(By.CSS_SELECTOR, "#open button").click()
    check("...and the guarded checkout opens now", wait(b, lambda d: top_route(d) in ("address", "payment")), top_route(b))
    set_data("user", "")
    check("an empty value removes the key", wait(b, lambda d: data(d) == {"cart": [42]}), data(b))
    a.find_element(By.ID, "url").clear()
    a.find_element(By.ID, "url").send_keys("/product/7")
    a.find_element(By.CSS_SELECTOR, "#open button").click()
    wait(b, lambda d: "Product 7" in d.find_element(By.ID, "phone").text)

    rev = lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-rev")
    check("presence: each device's revision is shown", wait(a, lambda d: d.find_element(By.ID, "members").text.count("shows rev " + rev(a)) >= 1))

    a.find_element(By.CSS_SELECTOR, "#raw summary").click()
    check("the side panel shows the raw state and patches", wait(a, lambda d: '"root"' in d.find_element(By.ID, "state").text and "rev" in d.find_element(By.ID, "patches").text))

    # The timeline: a past revision shown read-only while live patches arrive, restored.
    def api(path):
        with urllib.request.urlopen(HTTP.rstrip("/") + path) as r:
            return json.load(r)
    check("the timeline lists the revisions", wait(a, lambda d: len(d.find_elements(By.CSS_SELECTOR, "[data-history-rev]")) >= 5))
    live_rev = int(rev(a))
    target = live_rev - 3
    past = api(f"/api/sessions/{SESSION}?rev={target}")
    # (The timeline re-renders on every revision: a row found may be replaced before the click.)
    check("a revision of the timeline can be chosen", click(a, f"[data-history-rev='{target}']"))
    shows = lambda d: d.find_element(By.ID, "phone").get_attribute("data-shows")
    check("choosing a revision shows it read-only, with a banner", wait(a, lambda d: shows(d) == "historic"
          and f"Revision {target}" in d.find_element(By.ID, "historic").text and d.find_element(By.ID, "live").is_displayed()))
    check("the phone view is that revision's", wait(a, lambda d: top_route(d) == top_of(past["state"])), (top_route(a), top_of(past["state"])))
    check("the other page stays live", shows(b) == "live")
    navclient("update seen=1")
    check("live patches keep arriving while a past revision is shown",
          wait(a, lambda d: int(rev(d)) == live_rev + 1 and shows(d) == "historic" and f"live is at {live_rev + 1}" in d.find_element(By.ID, "historic").text))
    a.execute_script("window.scrollTo(0, 0)")   # the banner sits above the phone view
    a.save_screenshot(os.path.join(OUT, "web-page-historic.png"))
    a.find_element(By.ID, "restore").click()
    check("Restore brings it back for everyone, ids included", wait(b, lambda d: int(rev(d)) == live_rev + 2) and
          api(f"/api/sessions/{SESSION}")["state"] == past["state"] and wait(a, lambda d: shows(d) == "live"))
    check("and chosen again after the restore", click(a, f"[data-history-rev='{target}']"))
    wait(a, lambda d: shows(d) == "historic")
    a.find_element(By.ID, "live").click()
    check("Back to live returns to the live view", wait(a, lambda d: shows(d) == "live" and d.find_element(By.ID, "historic").get_attribute("hidden") is not None))

    check("no errors in the console of either page", not console_errors(a) and not console_errors(b), console_errors(a) + console_errors(b))
    a.save_screenshot(os.path.join(OUT, "web-page-a.png"))
    b.save_screenshot(os.path.join(OUT, "web-page-b.png"))

    # The server restarts without --data: the session is gone, and the pages say so.
    subprocess.run(["bash", RESTART], check=True)
    lost = lambda d: "was lost" in notice(d) and "without --data" in notice(d)
    check("after a restart without --data both pages say the session was lost", wait(a, lost, 20) and wait(b, lost, 20), notice(a))
    a.find_element(By.CSS_SELECTOR, "#create button").click()
    b.find_element(By.CSS_SELECTOR, "#create button").click()
    check("creating it again, both pages are back", wait(a, connected, 10) and wait(b, connected, 10))
    check("and show the new session's state", wait(a, lambda d: top_route(d) == "onboarding", 10) and wait(b, lambda d: top_route(d) == "onboarding", 10))
    navclient("setRoot login")
    check("and follow it again", wait(b, lambda d: top_route(d) == "login"))
    check("no console errors but the refused reconnects", not console_errors(a, True) and not console_errors(b, True),
          console_errors(a, True) + console_errors(b, True))
    a.save_screenshot(os.path.join(OUT, "web-page-a-after-restart.png"))
finally:
    a.quit()
    b.quit()

finish("web_pages")
