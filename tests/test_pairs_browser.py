"""Any local pair in a real browser (issue 39): on a server whose local Hugging Face cache holds a tiny pair, the
sidebar's Models section switches the target to it (the page then steps on it), and a folder that does not exist
gets one line while the page goes on with the pair it had. Screenshots in test-artifacts/."""
import os
import pathlib

import pytest

from conftest import settle, streamlit_server
from pairs import hub_entry, tiny_llama

pytestmark = pytest.mark.browser
ROOT = pathlib.Path(__file__).resolve().parent.parent
SHOTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def pair_server(tmp_path_factory):
    from specviz.loading import embedded_path, load_tokenizer

    d = tmp_path_factory.mktemp("browser-pair")
    tok = load_tokenizer(embedded_path())
    hub = d / "hub"
    hub_entry(hub, "org/tiny-target", tiny_llama(d / "tiny-target", tok, hidden=64, layers=3, seed=0))
    hub_entry(hub, "org/tiny-draft", tiny_llama(d / "tiny-draft", tok, hidden=32, layers=1, seed=1))
    old = os.environ.get("HF_HUB_CACHE")
    os.environ["HF_HUB_CACHE"] = str(hub)  # the server inherits it (ui/serve.py)
    try:
        with streamlit_server("pairs-server.log") as url:
            yield url
    finally:
        if old is None:
            os.environ.pop("HF_HUB_CACHE", None)
        else:
            os.environ["HF_HUB_CACHE"] = old


def choose(page, label: str, option_text: str) -> None:
    """Pick the option containing `option_text` in the sidebar selectbox `label` (in the sidebar the first click
    after the page scrolled may only focus the box: click until the list is open)."""
    box, option = page.get_by_role("combobox", name=label), page.get_by_role("option").filter(has_text=option_text)
    for _ in range(5):
        box.click()
        try:
            option.first.wait_for(state="visible", timeout=2_000)
            break
        except Exception:  # Playwright's TimeoutError: not open yet
            continue
    option.first.click()
    settle(page)


def test_switching_the_pair_in_the_sidebar_and_a_bad_folder(pair_server, browser):
    from playwright.sync_api import expect

    SHOTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{pair_server}/Beam_search", timeout=180_000)
    settle(page)
    sidebar = page.locator("[data-testid=stSidebar]")
    sidebar.get_by_text("Models", exact=True).click()
    expect(sidebar.get_by_text("In use: target SmolLM2-135M-Instruct (embedded)")).to_be_visible()
    page.screenshot(path=str(SHOTS / "pairs-1-default.png"))

    choose(page, "Target", "org/tiny-target")
    expect(sidebar.get_by_text("In use: target org/tiny-target")).to_be_visible(timeout=120_000)
    choose(page, "Draft model", "org/tiny-draft")
    expect(sidebar.get_by_text("draft: org/tiny-draft")).to_be_visible(timeout=120_000)
    page.get_by_role("button", name="Step ▶").click()
    settle(page)
    expect(page.locator("[data-testid=stPlotlyChart]").first).to_be_visible()
    assert "target=org%2Ftiny-target" in page.url or "target=org/tiny-target" in page.url  # kept in the address
    page.screenshot(path=str(SHOTS / "pairs-2-tiny-pair.png"))

    choose(page, "Target", "Other: a local folder")
    box = page.get_by_role("textbox", name="Target: a local folder or a Hub id in the local cache")
    box.fill("/no/such/folder")
    box.press("Enter")
    settle(page)
    error = sidebar.locator("[data-testid=stAlert]").filter(has_text="No model folder")
    expect(error).to_be_visible()
    expect(error).to_contain_text("Still using org/tiny-target")
    assert "Traceback" not in page.content()
    expect(sidebar.get_by_text("In use: target org/tiny-target")).to_be_visible()
    page.get_by_role("button", name="Step ▶").click()  # the page goes on, on the pair it had
    settle(page)
    expect(page.locator("[data-testid=stPlotlyChart]").first).to_be_visible()
    page.screenshot(path=str(SHOTS / "pairs-3-bad-folder.png"), full_page=False)
    page.close()
