"""The one list of pages: app.py declares them with st.navigation, the home page links to them and the
Q&A links to them, all from here, so a title or an icon is written once."""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st


@dataclass(frozen=True)
class PageInfo:
    path: str  # relative to the repository root; "" for the home page (a function in app.py)
    title: str
    icon: str
    blurb: str  # what the page teaches, for the home page's links


PAGES = [
    PageInfo("pages/1_Beam_search.py", "Beam search", "🌳",
             "the tree of candidates, prune to B, finished hypotheses, length penalty, and greedy side by side"),
    PageInfo("pages/2_Speculative_decoding.py", "Speculative decoding", "⚡",
             "draft, one verify pass, u vs min(1, p/q), residual or bonus, KV cache rollback"),
    PageInfo("pages/3_Speedup_lab.py", "Speedup lab",
             "📈", "the estimated speedup live (Leviathan et al.), best K or don't speculate, "
                  "and real runs measured beside it"),
    PageInfo("pages/11_Where_speedup_goes.py", "Where the speedup goes", "🔬",
             "one run in vLLM's, SGLang's and llama.cpp's units, five acceptance rules side by side, fp32 vs bf16"),
    PageInfo("pages/4_Lossless_lab.py", "Lossless lab", "⚖️",
             "why the output is exactly p: shape p and q, see the residual, and the classic mistakes"),
    PageInfo("pages/5_Drafter_comparison.py", "Drafter comparison", "🏁",
             "feature, token and n-gram drafts, an early exit, the target quantized: raced, speedups and slowdowns"),
    PageInfo("pages/7_Tree_speculation.py", "Tree speculation", "🌲",
             "a tree of drafts verified in one pass: tree mask, position ids, the accepted path"),
    PageInfo("pages/9_Lookahead_decoding.py", "Lookahead decoding", "🔭",
             "no draft model: a 2-D Jacobi window, an n-gram pool, and verification in the same pass"),
    PageInfo("pages/8_Serving_lab.py", "Serving lab", "🏭",
             "KV-cache memory, the roofline, and why speculation stops paying at large batch "
             "(measured and calculated)"),
    PageInfo("pages/10_Practice.py", "Practice drills", "🏋️",
             "exercises with exact answers from the formulas and the model's own cycles, graded, "
             "with worked solutions"),
    PageInfo("pages/6_Interview_QA.py", "Interview Q&A", "🎓",
             "questions at interview depth, rubric-graded quiz rounds with spaced repetition, "
             "code cards, mock interviews"),
]
BY_PATH = {p.path: p for p in PAGES}


def page_link(path: str, container=st) -> None:
    """A link to a registered page, labelled with its title and blurb."""
    p = BY_PATH[path]
    container.page_link(p.path, label=f"{p.title} — {p.blurb}", icon=p.icon)


def navigation(home) -> None:
    """Declare the pages and run the one the URL names. Each page's browser-tab title is its title here."""
    st.set_page_config(layout="wide", page_icon="🔍")
    st.navigation([st.Page(home, title="Home", icon="🔍", default=True)]
                  + [st.Page(p.path, title=p.title, icon=p.icon) for p in PAGES]).run()


_LEFT_PAGES_FOLDER_MODE = False


def leave_pages_folder_mode() -> None:
    """Workaround, checked on Streamlit 1.67.0 (pinned in requirements.txt): Streamlit has no public way to
    make a server's FIRST request a deep link into an st.navigation app whose page files sit in a folder
    named pages/. Until app.py's st.navigation has run once in the process, PagesManager serves requests
    in its legacy pages/-folder mode: the page file runs directly and the sidebar lists file names with no
    icons. Leave that mode (what st.navigation itself does) and rerun, so the same URL resolves through
    the declared pages. Once per process; AppTest puts the mode back before each of its runs, where a
    rerun would swallow the click that started the run. tests/test_browser.py fails without this."""
    global _LEFT_PAGES_FOLDER_MODE
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory and not _LEFT_PAGES_FOLDER_MODE:
        _LEFT_PAGES_FOLDER_MODE = True
        PagesManager.uses_pages_directory = False
        st.rerun()
