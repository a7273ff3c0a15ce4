"""``privamp serve`` in a real headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium): fill the form, get the interval, see the plot,
trigger and read a field error, follow the shareable URL; screenshots at desktop (1280 px)
and phone (390 px) widths into docs/img/serve-*.png (shown by docs/serve.md).

Skips, saying so, only where no browser can be installed (no ``chromium`` /
``chromedriver`` on the PATH, or no ``selenium``); ``.ci/run`` installs them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_serve_server import started_server

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed "
                                "(pip install selenium): browser tests skipped")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                       reason="no browser: chromium and chromium-driver are not installed "
                              "(apt-get install -y chromium chromium-driver); browser tests "
                              "skipped"),
]


@pytest.fixture(scope="module")
def url():
    with started_server(budget=30) as u:
        yield u


@pytest.fixture(scope="module")
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", "--window-size=1280,1000", "--hide-scrollbars"):
        opts.add_argument(arg)
    from selenium.webdriver.chrome.service import Service

    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    drv.set_page_load_timeout(90)
    yield drv
    drv.quit()


def fill(drv, name: str, value: str) -> None:
    el = drv.find_element(By.ID, f"f-{name}")
    if el.tag_name == "select":
        Select(el).select_by_value(value)
    else:
        el.clear()
        el.send_keys(value)


def submit_and_wait(drv, what: str) -> None:
    drv.find_element(By.ID, "go").click()
    WebDriverWait(drv, 90).until(ec.presence_of_element_located((By.ID, what)))


def settled(drv, read, timeout: float = 30):
    """``read(drv)``'s first truthy value, read again while the page re-renders the element
    (a stale reference is a re-render under way, not a failure)."""
    return WebDriverWait(drv, timeout, ignored_exceptions=(StaleElementReferenceException,)
                         ).until(read)


def shot(drv, width: int, path: Path) -> None:
    """A full-page screenshot at ``width`` CSS pixels."""
    drv.set_window_size(width, 1000)
    height = drv.execute_script("return document.documentElement.scrollHeight")
    drv.set_window_size(width, min(int(height) + 40, 6000))
    path.parent.mkdir(parents=True, exist_ok=True)
    drv.save_screenshot(str(path))


def test_fill_the_form_get_the_interval_and_the_plot(browser, url):
    drv = browser
    drv.get(url + "/")
    fill(drv, "sigma", "1.1")
    fill(drv, "batch_size", "256")
    fill(drv, "dataset_size", "60000")
    fill(drv, "epochs", "3")
    fill(drv, "relation", "zero-out")
    fill(drv, "source", "pytorch")  # "what does my loader do?": DataLoader(shuffle=True)
    assert drv.find_element(By.ID, "f-shuffle").is_displayed()
    assert not drv.find_element(By.ID, "f-sampler").is_displayed()
    fill(drv, "shuffle", "true")
    fill(drv, "target_epsilon", "8")
    fill(drv, "points", "3")
    submit_and_wait(drv, "interval-value")
    text = drv.find_element(By.ID, "interval-value").text
    lo, hi = (float(x.replace(",", "")) for x in text.split("≤ ε ≤"))
    assert 0 < lo <= hi
    assert "Shuffle(batch_size=256, dataset_size=60000" in drv.find_element(
        By.ID, "interval").text
    links = drv.find_elements(By.CSS_SELECTOR, "#interval a")
    assert links and all("/docs/" in a.get_attribute("href") for a in links)
    band = drv.find_elements(By.CSS_SELECTOR, "#curve svg polygon.band")
    assert band and band[0].size["height"] > 0
    assert float(drv.find_element(By.ID, "calibrated").text.split("=")[1]) > 0
    rows = drv.find_elements(By.CSS_SELECTOR, "#compare tbody tr")
    assert len(rows) >= 9
    assert "privamp epsilon" in drv.find_element(By.ID, "cli").text
    shot(drv, 1280, IMG / "serve-desktop.png")
    shot(drv, 390, IMG / "serve-phone.png")
    drv.set_window_size(1280, 1000)
    # the phone layout: one column, nothing wider than the screen
    assert (IMG / "serve-phone.png").read_bytes()[:4] == b"\x89PNG"


def test_phone_width_has_no_horizontal_overflow(browser, url):
    drv = browser
    drv.set_window_size(390, 900)
    drv.get(url + "/?sigma=1&batch_size=100&dataset_size=10000&epochs=1&points=2")
    WebDriverWait(drv, 90).until(ec.presence_of_element_located((By.ID, "interval-value")))
    wide = drv.execute_script("return document.documentElement.scrollWidth")
    inner = drv.execute_script("return window.innerWidth")
    drv.set_window_size(1280, 1000)
    assert wide <= inner, (wide, inner)


def test_field_error_is_shown_next_to_the_field(browser, url):
    drv = browser
    drv.get(url + "/")
    fill(drv, "sigma", "-1")
    submit_and_wait(drv, "err-sigma")
    msg = settled(drv, lambda d: d.find_element(By.ID, "err-sigma").text)
    assert msg.startswith("sigma must be a number in [0.1, 1000]")
    box_class = settled(drv, lambda d: d.find_element(By.ID, "box-sigma").get_attribute("class"))
    assert "invalid" in box_class
    assert settled(drv, lambda d: d.find_element(By.ID, "f-sigma").get_attribute("value")) == "-1"
    assert not drv.find_elements(By.ID, "interval-value")


def test_follow_the_shareable_url(browser, url):
    drv = browser
    drv.get(url + "/?sigma=0.9&batch_size=100&dataset_size=1000&steps=30&sampler=shuffle"
                  "&relation=zero-out&points=2")
    WebDriverWait(drv, 90).until(ec.presence_of_element_located((By.ID, "share-link")))
    first = drv.find_element(By.ID, "interval-value").text
    share = drv.find_element(By.ID, "share-link").get_attribute("href")
    drv.get("about:blank")
    drv.get(share)
    WebDriverWait(drv, 90).until(ec.presence_of_element_located((By.ID, "interval-value")))
    assert drv.find_element(By.ID, "interval-value").text == first
    assert drv.find_element(By.ID, "f-sampler").get_attribute("value") == "shuffle"
    assert drv.find_element(By.ID, "f-steps").get_attribute("value") == "30"
