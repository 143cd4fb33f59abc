"""The operator's console in a real browser (issue 21, part 3): headless Chromium, driven
through Debian's chromedriver by selenium, against a wallet and the operator API running as
processes on a log written as the services write it (tests/floor_builder.py: one table,
twelve rounds, and a dead letter). What is drawn is held against the services' own answers:
the floor's roads cell by cell against the wallet's `GET /tables/{id}/roads`, a complaint's
report showing MATCH, a page or fragment refused without the session cookie, a form
without its CSRF token refused, the floor updating over SSE without a reload, and a
re-drive that lands in the significant-event log. `CROUPIER_SCREENSHOT_DIR=docs/img` keeps
the screenshots the operator's guide shows."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from kafka import KafkaProducer

from services.demo.stack import ensure_kafka
from services.infra.dead_letters import dead_letter, record_of
from services.infra.kafka_security import ADMIN, kafka_python_options
from services.infra.processes import ServiceProcess, operator_api_process, service_env
from services.operator.console_session import COOKIE
from shared.topics import DEALER_INPUTS_TOPIC
from tests.browser_screenshot import chromium_binary
from tests.e2e.platform_support import platform_settings
from tests.floor_builder import Floor

CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = [pytest.mark.kafka, pytest.mark.skipif(
    chromium_binary() is None or CHROMEDRIVER is None,
    reason="chromium and chromedriver not installed: run deploy/prometheus/install-tools.sh "
           "(make test does)")]

ROADS = ("bead_plate", "big_road", "big_eye_boy", "small_road", "cockroach_pig")


def wait_for(check, timeout_s: float = 20.0, what: str = "the page"):
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            found = check()
            if found:
                return found
        except Exception:  # noqa: BLE001 - the DOM is being swapped: look again
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def console(platform_kafka, tmp_path_factory):
    """The log, the wallet, the operator API and a browser, started once for the module."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    home = tmp_path_factory.mktemp("console")
    settings = platform_settings(platform_kafka, home)
    ensure_kafka(settings)  # the topics, and the ACLs of this platform's own topics
    run = uuid.uuid4().hex[:6]
    table, players = f"C{run}", [f"cp{run}-{i}" for i in range(4)]
    floor = Floor(seed=17, rejected_every=0)
    start = datetime.now(UTC) - timedelta(minutes=20)
    played = [floor.play_round(table, 8, players, start + timedelta(seconds=40 * i))
              for i in range(12)]
    letter = dead_letter("dealer-event", DEALER_INPUTS_TOPIC, 0, 7, b"T", b'{"not": "an input"}',
                         ValueError("no such command"), datetime.now(UTC))
    floor.produce(platform_kafka)
    producer = KafkaProducer(bootstrap_servers=platform_kafka, **kafka_python_options(ADMIN))
    topic, key, value = record_of(letter)
    producer.send(topic, key=key, value=value).get(timeout=30)
    producer.close()

    env = service_env(settings)
    wallet = ServiceProcess("wallet", settings.wallet_port, home / "wallet.log", env).start()
    api = operator_api_process(settings, home / "operator-api.log",
                               {**env, "CROUPIER_CONSOLE_REFRESH_SECONDS": "0.5"}).start()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium_binary()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1100", f"--user-data-dir={home / 'chromium'}",
                "--no-first-run", "--disable-background-networking"):
        options.add_argument(arg)
    browser = None
    try:
        wallet.wait_ready(90)
        api.wait_ready(30)
        url = api.base_url
        browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        browser.implicitly_wait(0)
        yield {"url": url, "wallet": wallet.base_url, "browser": browser, "table": table,
               "played": played, "players": players, "floor": floor, "letter": letter,
               "bootstrap": platform_kafka, "token": settings.operator_token}
    finally:
        if browser is not None:
            browser.quit()
        api.stop()
        wallet.stop()


def shot(browser, name: str, tmp_path: Path) -> None:
    target = Path(os.environ.get("CROUPIER_SCREENSHOT_DIR", tmp_path)) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(target)) and target.stat().st_size > 10_000


def test_without_the_session_a_page_goes_to_the_login_and_a_fragment_is_refused(console):
    from selenium.webdriver.common.by import By

    browser, url = console["browser"], console["url"]
    browser.delete_all_cookies()
    browser.get(f"{url}/console/")
    assert browser.current_url == f"{url}/console/login"
    assert browser.find_element(By.ID, "token").get_attribute("type") == "password"
    for path in ("/console/floor/fragment", "/console/floor/stream", "/console/player"):
        answer = httpx.get(f"{url}{path}", follow_redirects=False, timeout=10)
        assert answer.status_code in (401, 303), path
    # a cookie the server never issued opens nothing either
    forged = httpx.get(f"{url}/console/floor/fragment", cookies={COOKIE: "made-up"}, timeout=10)
    assert forged.status_code == 401
    browser.find_element(By.ID, "token").send_keys("not the operator's token")
    browser.find_element(By.CSS_SELECTOR, "form button").click()
    assert "not logged in" in browser.find_element(By.ID, "login-error").text


def login(console) -> None:
    from selenium.webdriver.common.by import By

    browser, url = console["browser"], console["url"]
    browser.get(f"{url}/console/login")
    if browser.current_url.endswith("/console/"):
        return
    browser.find_element(By.ID, "token").send_keys(console["token"])
    browser.find_element(By.CSS_SELECTOR, "form button").click()
    wait_for(lambda: browser.current_url == f"{url}/console/", what="the floor after login")
    cookie = browser.get_cookie(COOKIE)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"


def drawn_cells(browser, table: str) -> dict[str, set[tuple[int, int, int]]]:
    """The table's drawn road cells, read in one script (the stream may swap the floor in
    between two reads of a selenium element)."""
    found = browser.execute_script("""
        const card = document.querySelector(`section[data-table="${arguments[0]}"]`);
        return [...card.querySelectorAll("td[data-road]")].map(td => [td.dataset.road,
            +td.dataset.col, +td.dataset.row, +td.dataset.hand]);""", table)
    cells: dict[str, set[tuple[int, int, int]]] = {name: set() for name in ROADS}
    for road, col, row, hand in found:
        cells[road].add((col, row, hand))
    return cells


def field_text(browser, table: str, name: str) -> str:
    return browser.execute_script(
        "return document.querySelector(`section[data-table=\"${arguments[0]}\"] "
        "[data-field=\"${arguments[1]}\"]`).textContent;", table, name)


def served_cells(console) -> dict[str, set[tuple[int, int, int]]]:
    body = httpx.get(f"{console['wallet']}/tables/{console['table']}/roads", timeout=10).json()
    return {name: {(c["col"], c["row"], c["hand"]) for c in body["roads"][name]["cells"]}
            for name in ROADS}


def test_the_floor_draws_the_wallets_roads_and_updates_without_a_reload(console, tmp_path):
    from selenium.webdriver.common.by import By

    login(console)
    browser, table = console["browser"], console["table"]
    served = served_cells(console)
    assert len(served["bead_plate"]) == 12 and served["big_eye_boy"]
    assert drawn_cells(browser, table) == served
    assert field_text(browser, table, "round").startswith(console["played"][-1].round_id)
    assert field_text(browser, table, "round-bets").startswith("8 bets, stake IDR ")
    assert "% realised on 96 bets" in field_text(browser, table, "shoe-rtp")
    wait_for(lambda: browser.find_element(By.ID, "live-state").text != "connecting",
             what="the event stream")
    # a thirteenth round: the page shows it over the stream, the same page (no reload)
    browser.execute_script("window.notReloaded = true;")
    floor = console["floor"]
    thirteenth = floor.play_round(table, 8, console["players"], datetime.now(UTC) - timedelta(minutes=5))
    floor.produce(console["bootstrap"])
    wait_for(lambda: len(drawn_cells(browser, table)["bead_plate"]) == 13, 30,
             "the thirteenth round on the floor")
    assert browser.execute_script("return window.notReloaded === true;")
    assert drawn_cells(browser, table) == served_cells(console)
    console["played"].append(thirteenth)
    shot(browser, "console-floor.png", tmp_path)


def fill_complaint(browser, url: str, fields: dict[str, str]) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{url}/console/complaint")
    for name, value in fields.items():
        box = browser.find_element(By.ID, name)
        box.clear()
        box.send_keys(value)


def test_a_complaint_shows_the_rounds_report_matching_the_recall_and_its_downloads(console,
                                                                                 tmp_path):
    from selenium.webdriver.common.by import By

    login(console)
    browser, url = console["browser"], console["url"]
    target = console["played"][2]
    fields = {"player_id": target.players[0], "played_at": target.t0.isoformat(),
              "dealer": "Ana", "table_id": target.table_id, "round_id": target.round_id}
    # without the CSRF token the form is refused, and nothing is replayed
    fill_complaint(browser, url, fields)
    browser.execute_script("document.querySelector('form.fields input[name=csrf_token]').remove();")
    browser.find_element(By.CSS_SELECTOR, "form.fields button").click()
    assert "CSRF token is missing" in wait_for(
        lambda: browser.find_element(By.ID, "refused").text, what="the refusal")
    fill_complaint(browser, url, fields)
    browser.find_element(By.CSS_SELECTOR, "form.fields button").click()
    verdict = wait_for(lambda: browser.find_element(By.ID, "verdict"), 30, "the report")
    assert verdict.text == "MATCH" and verdict.is_displayed()
    assert "within the 24-hour window" in browser.find_element(By.ID, "window").text
    # filed as POST /complaints files it: its id, its downloads opened by that id
    complaint_id = browser.find_element(By.ID, "complaint-id").text
    assert len(complaint_id) == 32 and complaint_id in browser.find_element(
        By.ID, "download-json").get_attribute("href")
    recalled = browser.find_elements(By.CSS_SELECTOR, "#recall tr[data-round]")
    assert target.round_id in {r.get_attribute("data-round") for r in recalled}
    assert "highlight" in browser.find_element(
        By.CSS_SELECTOR, f'#recall tr[data-round="{target.round_id}"]').get_attribute("class")
    shot(browser, "console-complaint.png", tmp_path)
    cookie = {COOKIE: browser.get_cookie(COOKIE)["value"]}
    for fmt, check in (("html", lambda r: "MATCH" in r.text),
                       ("json", lambda r: r.json()["verdict"] == "MATCH")):
        href = browser.find_element(By.ID, f"download-{fmt}").get_attribute("href")
        answer = httpx.get(href, cookies=cookie, timeout=60)
        assert answer.status_code == 200 and "attachment" in answer.headers[
            "Content-Disposition"] and check(answer)
        assert httpx.get(href, timeout=10).status_code == 401  # no cookie, no report


def test_a_player_and_a_dead_letter_re_driven_after_confirmation(console):
    from selenium.webdriver.common.by import By

    login(console)
    browser, url = console["browser"], console["url"]
    player = console["players"][1]
    browser.get(f"{url}/console/player?player_id={player}")
    balance = browser.find_element(By.ID, "balance")
    assert int(balance.get_attribute("data-minor-units")) == console["floor"].balances[player]
    assert balance.text.startswith("IDR ")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#transactions tr")) > 5
    assert browser.find_elements(By.CSS_SELECTOR, "#recall tr[data-round]")
    letter = console["letter"].dead_letter_id
    browser.get(f"{url}/console/events")
    row = browser.find_element(By.CSS_SELECTOR, f'#dead-letters tr[data-letter="{letter}"]')
    row.find_element(By.LINK_TEXT, "Re-drive…").click()
    browser.find_element(By.ID, "reason").send_keys("parser fixed")
    browser.find_element(By.ID, "confirm").click()
    browser.find_element(By.ID, "redrive").click()
    assert letter in wait_for(lambda: browser.find_element(By.ID, "redriven").text, 30,
                              "the re-drive")
    kinds = wait_for(lambda: [e.get_attribute("data-kind") for e in browser.find_elements(
        By.CSS_SELECTOR, "#events tr[data-kind]")], what="the event log")
    assert "dead_letter_redriven" in kinds and "dead_letter" in kinds
