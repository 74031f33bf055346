"""A cohort across two servers (issue 49, section 3), in a real Chromium: two app servers on two ports keep progress
in one PostgreSQL (a throw-away cluster, tests/postgres.py). A learner answers a drill on the first server and sees it
counted on the second; one more answered on the second is counted on the first; the first server restarted mid-round
has lost nothing. And a server whose SPECVIZ_DB nobody answers says so in one sentence in the sidebar, practice still
working (screenshots: test-artifacts/cohort-*.png)."""
import os
from pathlib import Path

import pytest

from conftest import browser, settle, streamlit_server  # noqa: F401  (the shared Chromium fixture)

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "test-artifacts"
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(os.environ.get("SPECVIZ_SKIP_BROWSER") == "1", reason="SPECVIZ_SKIP_BROWSER=1")]
DRILL = "Expected tokens per verify pass"  # a formula drill: no model, a number typed and Enter


def practice_as(browser, server, name):
    page = browser.new_page(viewport={"width": 1280, "height": 1600})
    page.goto(f"{server}/Practice", timeout=180_000)
    page.wait_for_selector("[data-testid=stSidebar] textarea", timeout=180_000, state="attached")
    settle(page)
    box = page.get_by_role("textbox", name="Your name", exact=False)
    box.fill(name)
    box.press("Enter")
    settle(page)
    page.locator("[data-testid=stSelectbox]").filter(has_text="Drill").first.click()
    page.get_by_role("option", name=DRILL).click()
    settle(page)
    return page


def answer_right(page):
    from specviz.practice.drills import make

    seed = int(page.get_by_text("· seed").first.inner_text().split("seed")[1])
    box = page.get_by_label("Your answer", exact=False)
    box.fill(str(make("tokens-per-pass", seed).answer))
    box.press("Enter")
    settle(page)


def drills_row(page):
    """The "Your drills" table's row for this drill: the counts kept under the learner's name."""
    table = page.locator("[data-testid=stTable]").filter(has_text=DRILL)
    return table.locator("tr").filter(has_text=DRILL).first


def test_two_servers_share_one_postgresql(browser, postgres_cluster):
    from playwright.sync_api import expect
    from postgres import fresh_database

    SHOTS.mkdir(parents=True, exist_ok=True)
    env = {"SPECVIZ_DB": fresh_database(postgres_cluster, "cohort")}
    with streamlit_server("cohort-b.log", env=env) as b:
        with streamlit_server("cohort-a.log", env=env) as a:
            on_a = practice_as(browser, a, "Ada")
            answer_right(on_a)
            expect(on_a.get_by_text("✓ Right.").first).to_be_visible()
            expect(drills_row(on_a)).to_contain_text("1")
            on_b = practice_as(browser, b, "Ada")  # the same learner on the other server
            expect(drills_row(on_b)).to_contain_text("1")
            on_b.locator("h1").first.click()
            on_b.keyboard.press("n")  # a new drill, answered on the second server
            settle(on_b)
            answer_right(on_b)
            expect(drills_row(on_b)).to_contain_text("2")
            on_b.screenshot(path=str(SHOTS / "cohort-second-server.png"), full_page=True)
            on_a.close()
        # the first server is gone (restarted mid-round): a new one on the same database has everything
        with streamlit_server("cohort-a2.log", env=env) as a2:
            again = practice_as(browser, a2, "Ada")
            expect(drills_row(again)).to_contain_text("2")
            expect(again.locator("[data-testid=stException]")).to_have_count(0)
            again.close()
        expect(on_b.locator("[data-testid=stException]")).to_have_count(0)
        on_b.close()


def test_a_database_nobody_answers_is_one_sentence_in_the_sidebar(browser):
    from playwright.sync_api import expect
    from postgres import free_port

    env = {"SPECVIZ_DB": f"postgresql://teacher:s3cret@127.0.0.1:{free_port()}/cohort"}
    with streamlit_server("cohort-down.log", env=env) as url:
        page = practice_as(browser, url, "Ada")
        warning = page.locator("[data-testid=stSidebar] [data-testid=stAlert]")
        expect(warning).to_contain_text("Cannot open the progress database")
        expect(warning).to_contain_text("nothing is kept")
        expect(warning).not_to_contain_text("s3cret")
        expect(warning).to_have_count(1)
        # the page does not contradict it by inviting the learner to type the name they typed
        expect(page.get_by_text("This server cannot keep progress right now")).to_have_count(1)
        expect(page.get_by_text("Type a name in the sidebar to keep")).to_have_count(0)
        answer_right(page)  # practice still works
        expect(page.get_by_text("✓ Right.").first).to_be_visible()
        expect(page.locator("[data-testid=stException]")).to_have_count(0)
        page.screenshot(path=str(SHOTS / "cohort-database-down.png"), full_page=True)
        page.close()
