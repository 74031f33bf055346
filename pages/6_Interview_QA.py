"""Interview questions in our own words and a misconceptions list (Browse); a quiz that trains: rounds shuffled per
session, filters, rubric points, true/false and code cards, Leitner boxes (Quiz); chains of follow-ups with a
verdict (Mock interview). The rules live in specviz.practice.quiz, the cards and steps are drawn by ui.quiz; this
page reads its settings and composes them."""
import streamlit as st

from ui.sidebar import sidebar
from ui.state import kept
from ui.learner import current
from ui import grading as GR, quiz as QU

from specviz.practice import quiz as Q
from specviz.qa.bank import LEVELS, bank, quiz_items

sidebar()
st.title("Interview Q&A")
BANK = bank()
BY_ID = {i.id: i for i in quiz_items()}
PER_PAGE = 20  # questions drawn at once: 130 expanders with their maths took the browser 3-4 s to open

# kept(): the topics, the mode and a half-written answer survive a visit to another page (Streamlit drops a
# widget's value at the end of any run that does not draw it); a kept value the bank no longer offers is no failure:
# Streamlit falls back to the widget's default
QU.open_linked_card(BY_ID)
mode = st.radio("Mode", ["Browse", "Quiz", "Mock interview"], horizontal=True, key=kept("qa_mode", "Browse"))
if mode != "Mock interview":
    f1, f2 = st.columns(2)
    chosen = f1.multiselect("Topics", sorted({i.topic for i in BY_ID.values()}), key=kept("qa_topics", []),
                            placeholder="All topics")
    levels = f2.multiselect("Levels", list(LEVELS), key=kept("qa_levels", []), format_func=Q.level_label,
                            placeholder="All levels")


def quiz() -> None:
    st.session_state.setdefault("qa_seed", Q.new_seed())
    QU.saved_line(current())
    opts = st.container(horizontal=True, gap="medium", vertical_alignment="center")  # wraps, never stacks on a phone
    missed_only = opts.toggle("Missed only", key=kept("qa_missed", False),
                              help="Cards whose last answer scored under 0.8 (saved ones with a name, "
                                   "else this session's)")
    due_first = opts.toggle("Due cards first", key=kept("qa_due", False),
                            help="Leitner boxes: cards due again (missed ones first), then new cards, then the rest")
    opts.toggle("Tick points myself", key=kept("qa_self_tick", False), disabled=not GR.G.available(),
                help="Off: your typed answer is graded point by point, offline, and you may overrule a point. On: "
                     "reveal the rubric and tick the points you made yourself.")
    size = opts.selectbox("Cards per round", Q.ROUND_SIZES, key=kept("qa_size", 10),
                          format_func=lambda n: str(n) if n else "all", width=150)
    if not GR.G.available():
        st.caption(GR.G.MISSING)
    QU.weak_points(current())
    r = QU.current_round((tuple(chosen), tuple(levels), missed_only, due_first, size), BY_ID)
    if not r.order:
        st.info("No missed card in these filters yet: answer some cards first, or turn **Missed only** off."
                if missed_only else "No card matches these filters.")
    elif r.done:
        QU.summary(r, BY_ID)
    else:
        QU.card(r, BY_ID[r.current])


def browse() -> None:
    pool = Q.select(BANK.questions, chosen, levels)
    total, pages = len(pool), Q.page_count(len(pool), PER_PAGE)
    if pages > 1:
        kept("qa_browse_page", 1)
        if st.session_state["qa_browse_page"] > pages:
            st.session_state["qa_browse_page"] = 1
        at = st.selectbox("Questions", list(range(1, pages + 1)), key="qa_browse_page", width=220,
                          format_func=lambda n: f"{(n - 1) * PER_PAGE + 1}–{min(n * PER_PAGE, total)} of {total}")
        pool = Q.page_of(pool, at, PER_PAGE)
    st.caption(f"{total} questions{f', {PER_PAGE} at a time' if pages > 1 else ''}. L4: fundamentals · L5: mechanics "
               "and trade-offs · L6: systems and design. "
               "Each opens on what to say in 30 seconds. Figures measured by SpecViz are quoted from the model card "
               "(models/README.md) or the benchmark (docs/bench-*.json), with their date. To have your own answers "
               "graded point by point, switch to **Quiz** or **Mock interview** above.")
    QU.questions(pool)


def interview() -> None:
    learner = current()
    QU.saved_line(learner)
    if not BANK.mocks:
        st.info("No mock interview in the bank yet.")
        return
    mocks = {x.id: x for x in BANK.mocks}
    c1, c2, c3 = st.columns([3, 1, 1])
    pick = c1.selectbox("Interview", list(mocks), key=kept("qa_mock_pick", BANK.mocks[0].id),
                        format_func=lambda k: f"{mocks[k].title} ({len(mocks[k].steps)} questions)")
    c1.caption(f"Graded, the interviewer also asks up to {Q.MAX_FOLLOW_UPS} follow-ups on what you missed.")
    graded = st.toggle("The interviewer grades my answers", key=kept("qa_mock_graded", GR.G.available()),
                       disabled=not GR.G.available(),
                       help="On: each answer is graded offline and the next question follows up on what it missed. "
                            "Off: reveal the rubric and the L4/L5/L6 answers, and tick the points yourself.")
    if not GR.G.available():
        st.caption(GR.G.MISSING)
    timer = c2.toggle("Timer", key=kept("qa_mock_timer", False),
                      help="A countdown per question; nothing stops when it ends")
    secs = c3.selectbox("Seconds per question", Q.TIMER_SECONDS, key=kept("qa_mock_secs", 120), disabled=not timer)
    if graded and GR.G.available():
        st.caption("One question at a time. Each answer is graded point by point on this machine; the next question "
                   "follows up on what it missed, as an interviewer does. The verdict comes at the end. "
                   + ("Each chain's interview is kept under your name: a reload or another day resumes it."
                      if learner is not None else "Without a name the interview lives in this tab: a reload "
                      "starts it again."))
        return QU.graded_interview(mocks[pick], learner, timer, secs)
    st.caption("One question at a time, each following up on the last, as an interviewer does. Answer, reveal the "
               "rubric and what L4, L5 and L6 candidates say, tick the points you made; the verdict comes at the end.")
    QU.ticked_interview(mocks[pick], learner, timer, secs)


{"Browse": browse, "Quiz": quiz, "Mock interview": interview}[mode]()
QU.misconceptions(BANK.misconceptions, browsing=mode == "Browse")
