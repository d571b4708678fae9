"""The console in a real browser: Debian's headless Chromium, driven by selenium, against a
running gateway with the development authorization server on.

alice signs in by picking her demo user, adds, finds, edits and deletes a memory; bob sees none
of her memories, not even at her memory's address (a 404 page, where alice sees it: the
positive control); the export downloads alice's JSON lines; erasing empties her console; every
page carries the Content-Security-Policy and the browser asks no other origin for anything
(its performance log). Screenshots of each page at desktop (1280x900) and phone (390x844)
width are saved under the directory the run prints.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from console_live import ConsoleGateway, chromium, console_gateway, performance_log
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

DESKTOP = (1280, 900)
PHONE = (390, 844)


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("console-downloads")


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.getbasetemp() / "console-screenshots"
    directory.mkdir(exist_ok=True)
    print(f"\nconsole screenshots: {directory}")
    return directory


@pytest.fixture(scope="module")
def browser(downloads: Path) -> Iterator[Chrome]:
    driver = chromium(downloads)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def gateway(dds: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleGateway]:
    with console_gateway(dds, tmp_path_factory.mktemp("console-browser")) as served:
        yield served


def _wait(browser: Chrome) -> WebDriverWait[Chrome]:
    return WebDriverWait(browser, 20)


def sign_in(browser: Chrome, gateway: ConsoleGateway, user: str) -> None:
    """Sign ``user`` in as a person does: the console's link, then their demo user's button."""
    browser.delete_all_cookies()
    browser.get(gateway.url + "/console")
    browser.find_element(By.LINK_TEXT, "Sign in").click()
    _wait(browser).until(expected_conditions.presence_of_element_located(
        (By.CSS_SELECTOR, f'button[name="user"][value="{user}"]'))).click()
    _wait(browser).until(expected_conditions.url_to_be(gateway.url + "/console/memories"))


def sign_out(browser: Chrome) -> None:
    browser.find_element(By.XPATH, '//button[text()="Sign out"]').click()
    _wait(browser).until(expected_conditions.presence_of_element_located(
        (By.LINK_TEXT, "Sign in")))


def add_memory(browser: Chrome, gateway: ConsoleGateway, text: str) -> str:
    """Add ``text`` on the memories page; returns the new memory's address."""
    browser.get(gateway.url + "/console/memories")
    field = browser.find_element(By.ID, "content")
    field.send_keys(text)
    browser.find_element(By.XPATH, '//form[@class="add"]//button').click()
    _wait(browser).until(expected_conditions.url_contains("/console/memories/"))
    return str(browser.current_url)


def listed(browser: Chrome) -> str:
    return str(browser.find_element(By.ID, "results").text)


def shoot(browser: Chrome, directory: Path, name: str) -> None:
    """Screenshots of the current page at desktop and at phone width, where nothing may
    stick out sideways (the page fits the viewport's width)."""
    for label, (width, height) in (("desktop", DESKTOP), ("phone", PHONE)):
        browser.set_window_size(width, height)
        browser.refresh()
        assert browser.save_screenshot(str(directory / f"{name}-{label}.png"))
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow == 0, f"{name} is {overflow}px wider than the {label} viewport"
    browser.set_window_size(*DESKTOP)


def test_alice_adds_finds_edits_and_deletes_a_memory(
        browser: Chrome, gateway: ConsoleGateway, screenshots: Path) -> None:
    sign_in(browser, gateway, "alice")
    assert "No memories yet" in listed(browser)
    shoot(browser, screenshots, "memories-empty")
    address = add_memory(browser, gateway, "Alice takes her tea with lemon")
    assert "Alice takes her tea with lemon" in browser.find_element(By.ID, "content").text
    add_memory(browser, gateway, "Alice walks to work on Mondays")

    browser.get(gateway.url + "/console/memories")
    assert "Alice takes her tea with lemon" in listed(browser)
    shoot(browser, screenshots, "memories")
    search = browser.find_element(By.ID, "q")
    search.send_keys("tea lemon")
    search.submit()
    _wait(browser).until(expected_conditions.url_contains("q=tea"))
    assert "Alice takes her tea with lemon" in listed(browser)
    shoot(browser, screenshots, "search")

    browser.get(address)
    field = browser.find_element(By.ID, "content")
    field.clear()
    field.send_keys("Alice takes her tea with honey")
    browser.find_element(By.XPATH, '//form[@class="edit"]//button').click()
    _wait(browser).until(expected_conditions.text_to_be_present_in_element(
        (By.ID, "content"), "honey"))
    shoot(browser, screenshots, "memory")
    browser.get(gateway.url + "/console/memories?q=honey")
    assert "Alice takes her tea with honey" in listed(browser)

    browser.get(address)
    browser.find_element(By.XPATH, '//button[text()="Delete this memory"]').click()
    _wait(browser).until(expected_conditions.url_to_be(gateway.url + "/console/memories"))
    assert "honey" not in listed(browser)
    assert "Alice walks to work on Mondays" in listed(browser)
    browser.get(address)
    assert "Not found" in browser.find_element(By.TAG_NAME, "h1").text
    shoot(browser, screenshots, "not-found")


def test_the_other_pages_show_relations_timeline_threads_and_profile(
        browser: Chrome, gateway: ConsoleGateway, screenshots: Path) -> None:
    with gateway.client("alice") as alice:
        first = alice.post("/v1/memories", json={"content": "Alice plays the cello"}).json()
        second = alice.post("/v1/memories", json={"content": "Alice joined an orchestra"}
                            ).json()
        related = alice.post("/v1/relations", json={
            "source_record_id": first["id"], "source_record_type": "memory",
            "target_record_id": second["id"], "target_record_type": "memory",
            "relation_type": "led_to", "opposite_relation_type": "follows"})
        assert related.status_code == 201, related.text
        thread = alice.post("/v1/threads", json={}).json()
        alice.post(f"/v1/threads/{thread['id']}/messages", json={"messages": [
            {"role": "user", "content": "Remind me about cello practice"}]})
    sign_in(browser, gateway, "alice")
    browser.get(f"{gateway.url}/console/memories/{first['id']}")
    graph = browser.find_element(By.CSS_SELECTOR, "svg.graph")
    assert graph.find_element(By.CSS_SELECTOR, "a").get_dom_attribute("href").endswith(
        f"/console/memories/{second['id']}")
    assert "led_to" in graph.text and "orchestra" in graph.text
    shoot(browser, screenshots, "relations")
    browser.get(f"{gateway.url}/console/memories/{second['id']}")
    assert "follows" in browser.find_element(By.CSS_SELECTOR, "ul.relations").text

    for page, expected in (("timeline", "Alice plays the cello"), ("threads", thread["id"]),
                           ("profile", "test_idp:alice"), ("data", "Download your data")):
        browser.get(f"{gateway.url}/console/{page}")
        assert expected in browser.find_element(By.ID, "main").text, page
        shoot(browser, screenshots, page)
    browser.find_element(By.LINK_TEXT, "Threads").click()
    browser.find_element(By.PARTIAL_LINK_TEXT, thread["id"]).click()
    assert "Remind me about cello practice" in browser.find_element(By.ID, "main").text
    shoot(browser, screenshots, "thread")


def test_bob_sees_none_of_alices_memories_even_at_her_address(
        browser: Chrome, gateway: ConsoleGateway, screenshots: Path) -> None:
    sign_in(browser, gateway, "alice")
    address = add_memory(browser, gateway, "Alice's locker code is 4711")
    assert "4711" in browser.page_source  # positive control: alice sees it there
    sign_out(browser)
    shoot(browser, screenshots, "signed-out")

    sign_in(browser, gateway, "bob")
    assert "4711" not in browser.page_source
    assert "No memories yet" in listed(browser)
    browser.get(gateway.url + "/console/memories?q=locker+code")
    assert "4711" not in browser.page_source
    browser.get(address)
    assert "Not found" in browser.find_element(By.TAG_NAME, "h1").text
    assert "4711" not in browser.page_source
    browser.get(gateway.url + "/console/timeline")
    assert "4711" not in browser.page_source


def test_export_downloads_alices_json_lines(
        browser: Chrome, gateway: ConsoleGateway, downloads: Path) -> None:
    sign_in(browser, gateway, "alice")
    add_memory(browser, gateway, "Alice's export probe")
    browser.get(gateway.url + "/console/data")
    browser.find_element(By.LINK_TEXT, "Download your data").click()
    exported = downloads / "memory-export.jsonl"
    _wait(browser).until(lambda _: exported.is_file() and exported.stat().st_size > 0)
    lines = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    contents = {line["record"].get("content") for line in lines if line["kind"] == "memory"}
    assert "Alice's export probe" in contents
    assert {line["record"].get("user_id") for line in lines
            if "user_id" in line["record"]} == {"test_idp:alice"}


def test_erase_empties_her_console_and_shows_the_receipt(
        browser: Chrome, gateway: ConsoleGateway, screenshots: Path) -> None:
    sign_in(browser, gateway, "bob")
    add_memory(browser, gateway, "Bob keeps this one")
    sign_in(browser, gateway, "alice")
    add_memory(browser, gateway, "Alice's memory to erase")
    browser.get(gateway.url + "/console/data")
    button = browser.find_element(By.XPATH, '//button[text()="Erase everything"]')
    button.click()  # the confirmation is required: the browser keeps the form
    assert browser.current_url == gateway.url + "/console/data"
    browser.find_element(By.ID, "confirm").click()
    browser.find_element(By.XPATH, '//button[text()="Erase everything"]').click()
    _wait(browser).until(expected_conditions.title_contains("Erased"))
    receipt = browser.find_element(By.CSS_SELECTOR, "table.receipt").text
    assert "memory" in receipt
    shoot(browser, screenshots, "erased")
    browser.get(gateway.url + "/console/memories")
    assert "No memories yet" in listed(browser)
    browser.get(gateway.url + "/console/threads")
    assert "No conversations yet" in browser.find_element(By.ID, "main").text
    sign_in(browser, gateway, "bob")
    assert "Bob keeps this one" in listed(browser)  # only alice's memory was erased


def test_pages_carry_the_policy_and_ask_no_other_origin(
        browser: Chrome, gateway: ConsoleGateway) -> None:
    performance_log(browser)  # drop what earlier tests left
    sign_in(browser, gateway, "alice")
    for page in ("memories", "timeline", "threads", "profile", "data"):
        browser.get(f"{gateway.url}/console/{page}")
    origin = urlsplit(gateway.url).netloc
    requested: list[str] = []
    policies: list[str] = []
    for message in performance_log(browser):
        if message["method"] == "Network.requestWillBeSent":
            requested.append(message["params"]["request"]["url"])
        elif message["method"] == "Network.responseReceived":
            response = message["params"]["response"]
            if "/console/" in response["url"] and response["mimeType"] == "text/html":
                headers = {k.lower(): v for k, v in response["headers"].items()}
                policies.append(headers.get("content-security-policy", ""))
    assert any(url.endswith("/console/static/console.css") for url in requested)
    others = [url for url in requested
              if url.startswith(("http:", "https:")) and urlsplit(url).netloc != origin]
    assert others == []
    assert len(policies) >= 5
    assert all("default-src 'self'" in p and "frame-ancestors 'none'" in p for p in policies)


def _tab_to(browser: Chrome, element_id: str) -> None:
    """Press Tab until the element ``element_id`` has the focus (at most 40 presses)."""
    for _ in range(40):
        if browser.switch_to.active_element.get_dom_attribute("id") == element_id:
            return
        browser.switch_to.active_element.send_keys(Keys.TAB)
    raise AssertionError(f"Tab never reached #{element_id}")


def test_a_person_adds_and_finds_a_memory_with_the_keyboard_alone(
        browser: Chrome, gateway: ConsoleGateway) -> None:
    sign_in(browser, gateway, "alice")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    assert browser.switch_to.active_element.text == "Skip to the content"
    _tab_to(browser, "content")
    browser.switch_to.active_element.send_keys("Alice typed this with the keyboard")
    browser.switch_to.active_element.send_keys(Keys.TAB)
    assert browser.switch_to.active_element.text == "Add"
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    _wait(browser).until(expected_conditions.url_contains("/console/memories/"))
    browser.get(gateway.url + "/console/memories")
    _tab_to(browser, "q")
    browser.switch_to.active_element.send_keys("keyboard", Keys.ENTER)
    _wait(browser).until(expected_conditions.url_contains("q=keyboard"))
    assert "Alice typed this with the keyboard" in listed(browser)
