"""The Interview Q&A page's quiz and mock interview drawn (issue 46): the cards and their buttons, a round kept in
session state (its start, each score recorded, the next card), its summary, a mock interview's steps and verdict,
and the misconceptions list. The rules are specviz.practice.quiz (no Streamlit); the page reads its settings'
widgets and composes these. `by_id`: the quiz's cards by id (specviz.qa.bank.quiz_items), as the page read them."""
from __future__ import annotations

import html
import textwrap
import time
from datetime import date
from types import SimpleNamespace

import streamlit as st

from specviz.figures import md_escape
from specviz.practice import quiz as Q
from ui import grading as GR
from ui.learner import current, name_hint, progress
from ui.registry import BY_PATH
from ui.state import keep


def links(page: str, source: str, label: str = "See it") -> None:
    if page in BY_PATH:
        st.page_link(page, label=f"{label}: {BY_PATH[page].title}", icon=BY_PATH[page].icon)
    st.caption(f"Source: {source}")


def saved_line(learner) -> None:
    if learner is None:
        st.caption(name_hint("Type a name in the sidebar to keep your progress: without one this session counts your "
                             "answers but stores nothing."))
    else:
        n = len(progress().cards(learner))
        st.caption(f"Your answers are saved under **{md_escape(st.session_state.get('s_learner', ''))}**: "
                   f"{n} card{'s' if n != 1 else ''} seen so far in the quiz.")


def open_linked_card(by_id: dict) -> None:
    """A link to one card (?card=ID): it opens in the quiz (before the mode's widget is drawn)."""
    if st.query_params.get("card") in by_id:
        st.session_state["qa_retry_card"] = st.query_params["card"]
        st.session_state["qa_mode"] = "Quiz"
        del st.query_params["card"]


def forget(key: str) -> None:
    """An answer box's value and its shadow (ui.state.keep): the box starts empty."""
    st.session_state.pop(key, None)
    st.session_state.pop("_keep_" + key, None)


# ------------------------------------------------------------------------------------------------------ the quiz
def answer_box(item, label: str) -> None:
    key = f"qa_mine_{item.id}"
    keep(key)
    st.text_area(label, key=key, height=110, max_chars=Q.MAX_BOX,
                 help="Kept while you visit other pages; cleared when the card is scored. Not saved. Grading reads up "
                 f"to {Q.MAX_ANSWER:,} characters.")


def answer(item) -> None:
    with st.container(border=True):
        if item.headline:
            st.markdown(f"**Say this in 30 s:** {item.headline}")
        st.markdown(item.answer)
        links(item.page, item.source)


def record(r, item, score: float) -> None:
    """The current card's score: in the round, in this session's history and, with a name, in the database."""
    score = r.grade(score)
    st.session_state.setdefault("qa_history", {})[item.id] = score
    learner = current()
    box = progress().record_card(learner, item.id, score) if learner is not None else None
    st.session_state["qa_note"] = Q.score_note(score, box)


def go_on(r, item) -> None:
    forget(f"qa_mine_{item.id}")
    r.next()
    st.rerun()


def grade_now(r, item, gkey: str) -> None:
    """Before a grade: the button (or a regrade asked for on the last run) grades the typed answer."""
    key = f"qa_mine_{item.id}"
    if st.button("Grade my answer", key="qa_grade", type="primary") or st.session_state.pop("qa_regrade_now", False):
        g = GR.grade_answer(GR.G.gradable_cards()[item.id], st.session_state.get(key, ""))
        if isinstance(g, str):
            st.warning(g)  # one line; nothing stored
            return
        st.session_state[gkey] = (st.session_state.get(key, ""), g)
        # the grade is drawn below the answer box, under the fold of a laptop screen: say it where the eye is
        st.session_state["qa_toast"] = f"Graded: {sum(p.made for p in g.points)} of {len(g.points)} points, each below."
        r.revealed = True
        st.rerun()


def graded_card(r, item) -> None:
    """Issue 47: the answer graded point by point; the learner may overrule a point; the score feeds the boxes."""
    key = f"qa_mine_{item.id}"
    gkey = f"qa_grade_{r.number}_{r.i}"
    answer_box(item, f"Your answer (type it as you would say it; up to {Q.MAX_ANSWER:,} characters)")
    graded = st.session_state.get(gkey)
    if graded is None:
        return grade_now(r, item, gkey)
    text, g = graded
    if toast := st.session_state.pop("qa_toast", None):
        st.toast(toast, icon="📝")
    if st.session_state.get(key, "") != text:  # edited since it was graded: the grade below is of the old text
        st.info("You changed your answer after it was graded: the grade below is of the earlier text.")
        if st.button("Grade my answer again", key="qa_regrade"):
            st.session_state.pop(gkey, None)
            for n in range(len(g.points)):
                st.session_state.pop(f"{gkey}_over_{n}", None)
            st.session_state["qa_regrade_now"] = True
            st.rerun()
    made = GR.show(text, g, gkey, item.page, item.answer)
    answer(item)
    if st.button("Score it and go on ▶", key="qa_score", type="primary"):
        learner = current()
        if learner is not None:
            progress().record_points(learner, item.id, Q.point_rows(g.points, made))
        record(r, item, Q.made_score(made))
        st.session_state.pop(gkey, None)
        go_on(r, item)


def question_card(r, item) -> None:
    if item.rubric and item.id in GR.G.gradable_cards() and not st.session_state.get("qa_self_tick") \
            and GR.G.available():  # the model itself loads on the first "Grade my answer", not on open
        return graded_card(r, item)
    answer_box(item, "Your answer: write it before you reveal (as you would say it)")
    if not r.revealed:
        if st.button("Reveal the answer", key="qa_reveal", type="primary"):
            r.revealed = True
            st.rerun()
        return
    answer(item)
    if item.rubric:
        st.markdown("**Tick each point your answer made** (score = points ticked ÷ points):")
        ticks = [st.checkbox(p, key=f"qa_tick_{r.number}_{r.i}_{j}") for j, p in enumerate(item.rubric)]
        st.caption(f"{sum(ticks)} of {len(ticks)} points: {Q.fmt(Q.rubric_score(ticks))}")
        if st.button("Score it and go on ▶", key="qa_score", type="primary"):
            record(r, item, Q.rubric_score(ticks))
            go_on(r, item)
        return
    st.caption("This card has no rubric yet: grade yourself against the answer.")
    c1, c2 = st.columns(2)
    for col, label, key, had in ((c1, "I had it ✓", "qa_right", True), (c2, "Not yet ✗", "qa_wrong", False)):
        if col.button(label, key=key, width="stretch"):
            record(r, item, Q.self_grade(had))
            go_on(r, item)


def verdict_line(score: float, text: str) -> None:
    (st.success if Q.is_right(score) else st.error)(text)


def truefalse_card(r, item) -> None:
    answer_box(item, "Why? Write your reason first: an interviewer asks for it")
    if not r.graded:
        c1, c2 = st.columns(2)
        for col, label, key, said in ((c1, "True", "qa_true", True), (c2, "False", "qa_false", False)):
            if col.button(label, key=key, width="stretch"):
                record(r, item, Q.grade_truefalse(item, said))
                st.rerun()
        return
    score = r.scores[item.id]
    verdict_line(score, f"{'✓ Right' if score else '✗ Not right'}: the claim is "
                        f"**{'true' if item.truth else 'false'}**.")
    # the reason is not graded (a true/false card has no rubric): say so, and where to compare it
    said = st.session_state.get(f"qa_mine_{item.id}", "").strip()
    st.caption("Compare your reason above with the explanation below: only True or False was scored."
               if said else "No reason written: an interviewer's next word is “why?”. The explanation is below.")
    answer(item)
    if st.button("Next ▶", key="qa_next", type="primary"):
        go_on(r, item)


def code_card(r, item) -> None:
    card = item.code
    lines = card.code.splitlines()
    st.code(card.code, language="python", line_numbers=True)
    answer_box(item, "What goes wrong, in your words (optional)")
    c1, c2 = st.columns([1, 3])
    line = c1.selectbox("The faulty line", range(1, len(lines) + 1), index=None, placeholder="Line…",
                        key=f"qa_line_{r.number}_{r.i}", disabled=r.graded)
    fix = c2.radio("The fix", range(len(card.fixes)), format_func=lambda k: card.fixes[k], index=None,
                   key=f"qa_fix_{r.number}_{r.i}", disabled=r.graded)
    if not r.graded:
        if st.button("Check", key="qa_check", type="primary", disabled=line is None or fix is None,
                     help="Pick a line and a fix first"):
            record(r, item, Q.grade_code(card, line, fix).score)
            st.rerun()
        return
    g = Q.grade_code(card, line, fix)
    verdict_line(g.score, f"Line: {'✓' if g.line_ok else '✗'} · fix: {'✓' if g.fix_ok else '✗'} · "
                          f"score {Q.fmt(g.score)} (half for the line, half for the fix).")
    st.markdown(f"The bug is on line {card.bug_line}:")
    st.code(lines[card.bug_line - 1] if 0 < card.bug_line <= len(lines) else "", language="python")
    answer(item)
    if st.button("Next ▶", key="qa_next", type="primary"):
        go_on(r, item)


def card(r, item) -> None:
    """The card being asked: the round's progress, the last card's note, the card's header and the card itself."""
    row = st.container(horizontal=True, gap="large")
    row.metric("Question", f"{r.i + 1} of {len(r.order)}", width="content")
    row.metric("Score", f"{Q.fmt(r.total)} / {len(r.scores)}", width="content")
    row.metric("Right", r.right, help="Cards scoring at least 0.8", width="content")
    st.progress(r.i / len(r.order))
    if st.session_state.get("qa_note"):
        st.caption(st.session_state["qa_note"])
    st.markdown(f"**{Q.level_label(item.level)} · {item.topic}** · _{Q.KIND_NAMES[item.kind]}_")
    st.markdown(f"### {item.prompt}")
    {"question": question_card, "truefalse": truefalse_card, "code": code_card}[item.kind](r, item)


def summary(r, by_id: dict) -> None:
    s = Q.summarize(r.order, r.scores, by_id)
    st.subheader("Round done: summary")
    if st.session_state.get("qa_note"):  # the last card's score and Leitner box: a one-card round has no next card
        st.caption(st.session_state["qa_note"])
    row = st.container(horizontal=True, gap="large")
    row.metric("Score", f"{Q.fmt(s.score)} / {s.cards}", width="content")
    row.metric("Points", f"{round(s.percent)} %", width="content",
               help="Share of the round's points (partial credit counts); cards fully right: "
                    f"{s.cards - len(s.missed)} of {s.cards}")
    row.metric("Missed", len(s.missed), help="Cards scoring under 0.8 (they go back to Leitner box 1)", width="content")
    t1, t2 = st.columns(2)
    for col, title, rows in ((t1, "Level", s.by_level), (t2, "Topic", s.by_topic)):
        col.dataframe([{title: x.name, "Cards": x.cards, "Score": Q.fmt(x.score), "Points %": round(x.percent)}
                       for x in rows], hide_index=True, width="stretch")
    b1, b2 = st.columns(2)
    if b1.button("New round ↻", key="qa_new", type="primary", width="stretch"):
        new_round(r.key, by_id)
        st.rerun()
    if b2.button(f"Retry the {len(s.missed)} missed", key="qa_retry", disabled=not s.missed,
                 width="stretch"):
        new_round(r.key, by_id, Q.shuffled(list(s.missed), st.session_state["qa_seed"], r.number + 1))
        st.rerun()
    if s.missed:
        st.markdown("**The cards you missed**")
    for c in s.missed:
        item = by_id[c]
        with st.expander(f"{item.level} · {item.prompt} · score {Q.fmt(r.scores[c])}"):
            answer(item)


def new_round(key: tuple, by_id: dict, order=None) -> Q.Round:
    """A new round (the next number of this session's shuffle): from the filters `key`, or the order given (retry)."""
    number = st.session_state.get("qa_rounds", 0) + 1
    st.session_state["qa_rounds"] = number
    if order is None:
        learner, history = current(), st.session_state.setdefault("qa_history", {})
        order = Q.round_for(list(by_id.values()), key, st.session_state["qa_seed"], number, history,
                            progress() if learner is not None else None, learner)
    r = st.session_state["qa_round"] = Q.Round(order, key, number)
    st.session_state.pop("qa_note", None)
    return r


def current_round(key: tuple, by_id: dict) -> Q.Round:
    """The round under way; a new one for other filters, and the one card a "Retry" (Home, a weak point) asks for."""
    r = st.session_state.get("qa_round")
    retry = st.session_state.pop("qa_retry_card", None)
    if retry in by_id:
        if r is not None and not Q.needs_new_round(r, key, by_id) and r.scores:  # a round under way goes on after it
            busy = r.revealed or st.session_state.get(f"qa_grade_{r.number}_{r.i}") is not None
            when = Q.retry_in_round(r, retry, busy)
            if when is not None:
                what = textwrap.shorten(by_id[retry].prompt, 100, placeholder="…")
                st.session_state["qa_note"] = f"Retry: “{what}” " + {
                    "now": "is asked now; your round goes on after it.",
                    "next": "is asked after this card; your round goes on after it.",
                    "here": "is the card in front of you."}[when]
                return r
        return new_round(key, by_id, [retry])
    return new_round(key, by_id) if Q.needs_new_round(r, key, by_id) else r


def weak_points(learner) -> None:
    weak = progress().weak_points(learner) if learner is not None else []
    d = progress().disagreements(learner, limit=0) if learner is not None else {"overruled": 0}
    # counted apart, as the grader's errors as this learner sees them (shown with no weak point left, too)
    told = (f"You overruled {d['overruled']} of {d['graded']} graded points: {d['to_made']} the grader had missed "
            f"(you made it count), {d['to_missed']} it had credited (you declined it). Overrules count here as you "
            "set them, and are kept apart so the grader can be measured against them.") if d["overruled"] else ""
    if weak:
        with st.expander("Points you miss most often"):
            GR.weak_points(learner, progress(), "qa", weak, title=False)
            if told:
                st.caption(told)
    elif told:
        st.caption(told)


def questions(pool) -> None:
    """Browse: each question in an expander that opens on what to say in 30 seconds."""
    for q in pool:
        with st.expander(f"**{q.level}** · {q.question}  ·  _{q.topic}_"):
            if q.headline:
                st.markdown(f"**In 30 s:** {q.headline}")
            st.markdown(q.answer)
            if q.rubric:
                st.markdown("**A complete answer makes these points:**\n" + "\n".join(f"- {p}" for p in q.rubric))
            links(q.page, q.source)


def misconceptions(claims, browsing: bool) -> None:
    st.subheader("Misconceptions")
    if not browsing:  # the list holds the quiz's own answers: shown only while browsing
        st.caption(f"{len(claims)} claims heard in interviews and read in guides, each with the correct version: "
                   "hidden during the quiz, which asks them too. Switch to **Browse** to read them.")
        return
    st.caption(f"{len(claims)} claims heard in interviews and read in guides, each with the correct version.")
    for mc in claims:
        with st.container(border=True):
            st.markdown(f"**Misconception** · _{mc.topic}_  \n{mc.claim}")
            st.markdown(f"**Correct** · {mc.correct}")
            links(mc.page, mc.source, "Demonstrated on")


# ---------------------------------------------------------------------------------------------- mock interview
def countdown(m, limit: int, then: str = "reveal") -> None:
    """The step's timer: a fragment redrawn every second while time is left (the page never blocks)."""
    if m.started is None:
        m.started = time.time()

    @st.fragment(run_every=1 if Q.remaining(m.started, limit, time.time()) > 0 else None)
    def show():
        left = Q.remaining(m.started, limit, time.time())
        if left > 0:
            st.markdown(f"⏱ **{left // 60}:{left % 60:02d}** left for this step")
        else:
            st.warning(f"⏱ Time's up: close your answer in one sentence, then {then}.")
            if st.session_state.get("qa_mock_ticking"):  # one full rerun stops the ticking
                st.session_state["qa_mock_ticking"] = False
                st.rerun()

    st.session_state["qa_mock_ticking"] = Q.remaining(m.started, limit, time.time()) > 0
    show()


def verdict_block(mock, scores, rows, learner, recorded, rule_extra: str = "", steps=None):
    """A chain's verdict: level, rule, the steps' table, the weakest step, the level guide and the learner's past
    results on it (recorded once). `steps`: the rows the scores belong to (a graded interview's table also lists
    follow-ups, which do not count). Returns `recorded`, or when it was recorded now (Progress.restate_mock)."""
    v = Q.mock_verdict(scores)
    steps = list(range(len(scores))) if steps is None else steps
    st.subheader(f"Verdict: {v.level} ({Q.LEVEL_NAMES.get(v.level, 'start with the fundamentals')})")
    extra = len(rows) - len(scores)
    st.markdown(f"Mean step score {Q.pct(v.mean)} over the chain's {len(scores)} questions"
                + (f" ({extra} follow-up{'s' if extra > 1 else ''} in the table, not counted)" if extra else "") + ".")
    st.table(rows, hide_index=True)  # a table wraps "Why asked" (a follow-up quotes the point it follows up)
    weakest = Q.work_on(v, scores)
    if weakest is not None:
        st.markdown(f"Work on step {steps[weakest] + 1} first: _{rows[steps[weakest]]['Question']}_")
    # the rule after what it decided: a walk in Chromium found nine lines of rules above the table
    st.caption(f"Rule: {Q.VERDICT_RULE}" + (f" {rule_extra}" if rule_extra else ""))
    if mock.level_guide:
        with st.container(border=True):
            st.markdown(f"**What separates the levels in this chain**\n\n{mock.level_guide}")
    if learner is not None:
        if not recorded:
            recorded = progress().record_mock(learner, mock.id, v.level, v.mean)
        st.caption("Your results on this chain, oldest first: " + Q.past_results(progress().mocks(learner), mock.id))
    return recorded


def ticked_interview(mock, learner, timer: bool, secs: int) -> None:
    """The mock interview the learner grades: one step at a time (revealed, ticked), then the verdict."""
    m = st.session_state.get("qa_mock")
    if m is None or m.id != mock.id:
        m = st.session_state["qa_mock"] = Q.Mock(mock.id, len(mock.steps))
    if not m.done:
        return mock_step(mock, m, timer, secs)
    m.recorded = verdict_block(mock, m.scores, Q.step_rows(mock, m.scores), learner, m.recorded)
    if st.button("Take this interview again ↻", key="qa_mock_again", type="primary"):
        st.session_state["qa_mock"] = Q.Mock(mock.id, len(mock.steps))
        st.rerun()


def mock_step(mock, m, timer: bool, secs: int) -> None:
    step = mock.steps[m.step]
    st.metric("Step", f"{m.step + 1} of {len(mock.steps)}")
    st.markdown(f"### {step.question}")
    if timer and not m.revealed:
        countdown(m, secs)
    key = f"qa_mock_mine_{mock.id}_{m.step}"
    keep(key)
    st.text_area(f"Your answer (as you would say it; up to {Q.MAX_ANSWER:,} characters)", key=key, height=130,
                 max_chars=Q.MAX_BOX)
    if not m.revealed:
        if st.button("Reveal the rubric and the sample answers", key="qa_mock_reveal", type="primary"):
            m.revealed = True
            st.rerun()
        return
    tabs = st.tabs(["What an L4 says", "L5", "L6"])
    for tab, text in zip(tabs, (step.l4, step.l5, step.l6)):
        tab.markdown(text or "_(not written yet)_")
    if step.rubric:
        st.markdown("**Tick each point your answer made:**")
        ticks = [st.checkbox(p, key=f"qa_mock_tick_{mock.id}_{m.step}_{j}") for j, p in enumerate(step.rubric)]
        st.caption(f"{sum(ticks)} of {len(ticks)} points")
        score = Q.rubric_score(ticks)
    else:
        had = st.radio("This step has no rubric yet: did your answer match the L6 one?", ["Yes", "No"], index=None,
                       key=f"qa_mock_self_{mock.id}_{m.step}", horizontal=True)
        score = Q.self_grade(had == "Yes")
    if st.button("See the verdict ▶" if m.last else "Score it, next question ▶", key="qa_mock_score",
                 type="primary"):
        forget(key)
        m.score(score)
        st.rerun()


def graded_interview(mock, learner, timer: bool = False, secs: int = 120) -> None:
    """Issue 47: the interviewer grades each answer and follows up on the first missed point."""
    # one interview per learner and chain in this tab: another chain and back resumes it; with a name, a reload
    # (a new session) resumes it from the database, and another name is another interview
    states = st.session_state.setdefault("qa_gmocks", {})
    whose = (learner, mock.id)
    if whose not in states and learner is not None:
        states[whose] = Q.interview_from_json(progress().interview(learner, mock.id), mock.id)
    state = st.session_state["qa_gmock"] = states[whose] = Q.graded_state(states.get(whose), mock.id)
    # once the verdict is shown the interview is over: an overrule there re-scores it, it asks nothing more
    nxt = None if state.get("done") else Q.next_question(
        mock, state["asked"], lambda point, exclude, made: GR.G.follow_up(point, exclude, GR.encoder(), made=made))
    if nxt is None:
        state["done"] = True
        return graded_verdict(mock, state, learner)
    # each question's clock starts when it is first shown (countdown reads and sets .started); an overrule that
    # changes the follow-up shows another question, with its own clock
    clock = state.setdefault("clocks", {}).setdefault((len(state["asked"]), nxt[0]), SimpleNamespace(started=None))
    graded_step(mock, state, nxt, learner, clock if timer else None, secs)


def graded_verdict(mock, state: dict, learner) -> None:
    asked = state["asked"]
    chain = Q.chain_steps(mock, asked)  # the level comes from the chain's questions; follow-ups are shown
    scores = [asked[n].score for n in chain]
    was = state["recorded"]
    state["recorded"] = verdict_block(mock, scores, Q.asked_rows(mock, asked), learner, was, Q.FOLLOW_UP_RULE, chain)
    if state["recorded"] != was:
        save(mock, state, learner)
    missed = [(n, p) for n, a in enumerate(asked, 1) for p, made, _, _ in a.points if not made]
    if missed:  # what to work on, here and not only in the transcript (the points are the bank's own text)
        with st.expander(f"The points your answers missed ({len(missed)})", expanded=True):
            st.markdown("\n".join(f"- step {n}: {p}" for n, p in missed))
    with st.expander("Each answer, point by point: overrule a grade the quoted words do not bear out"):
        chain = set(Q.chain_steps(mock, asked))
        for n, a in enumerate(asked):
            st.markdown(f"**Step {n + 1}** · {Q.pct(a.score)}" + ("" if n in chain else
                        " · a follow-up, not in the level") + f"  \n{a.question}")
            step_grades(mock, state, n, learner)
        st.caption(GR.MOCK_CAVEAT)
    st.download_button("Download the transcript (Markdown)",
                       Q.transcript(mock.title, asked, Q.mock_verdict(scores), st.session_state.get("s_learner", ""),
                                    date.today().isoformat()),
                       file_name=f"{mock.id}-transcript.md", mime="text/markdown", key="qa_gmock_dl")
    if st.button("Take this interview again ↻", key="qa_gmock_again", type="primary"):
        st.session_state.pop("qa_gmock", None)
        st.session_state.get("qa_gmocks", {}).pop((learner, mock.id), None)
        if learner is not None:
            progress().drop_interview(learner, mock.id)
        st.rerun()


def graded_step(mock, state: dict, nxt: tuple[str, str, str], learner, clock=None, secs: int = 120) -> None:
    """One question of a graded interview: asked, answered, graded (and the last answer's grade below, to
    overrule); with a `clock`, the question's countdown."""
    card_id, question, why = nxt
    asked = state["asked"]
    chain = len(Q.chain_steps(mock, asked))
    if Q.is_chain(mock, card_id):
        st.metric("Chain question", f"{chain + 1} of {len(mock.steps)}")
    else:
        st.metric("Follow-up", f"{len(asked) - chain + 1} of at most {Q.MAX_FOLLOW_UPS}")
    st.caption(f"Asked as {why}" if len(asked) else "The chain's first question.")
    st.markdown(f"### {question}")
    if clock is not None:
        countdown(clock, secs, then="press Answer")
    key = f"qa_gmock_mine_{mock.id}_{len(asked)}"
    keep(key)
    st.text_area(f"Your answer (as you would say it; up to {Q.MAX_ANSWER:,} characters)", key=key, height=130,
                 max_chars=Q.MAX_BOX)
    if st.button("Answer ▶", key="qa_gmock_answer", type="primary"):
        text = st.session_state.get(key, "")
        g = GR.grade_answer(GR.G.card(card_id), text)
        if isinstance(g, str):
            st.warning(g)
            return
        step = Q.asked_from(card_id, question, why, text, g)
        if learner is not None:
            step.at = progress().record_points(learner, card_id, Q.asked_point_rows(step))
        asked.append(step)
        save(mock, state, learner)
        forget(key)
        st.rerun()
    if asked:
        last = asked[-1]
        # the label stays the same whatever the score: a new label is a new expander, drawn folded after each overrule
        with st.expander("Your last answer, graded point by point", expanded=False):
            st.markdown(f"**{Q.pct(last.score)} of its points**")
            step_grades(mock, state, len(asked) - 1, learner)
            st.caption(GR.MOCK_CAVEAT)


def step_grades(mock, state: dict, n: int, learner) -> None:
    """Step n's points, each ✓/✗ with its evidence and the learner's Overrule (stored as overruled; the step's
    score, the verdict and the weak points follow)."""
    a = state["asked"][n]
    # the answer itself, to judge each ✗ by (escaped: the learner's words are never markup)
    st.markdown(f'<div style="color:#555;margin-bottom:0.6rem">Your answer: '
                f'“{GR.quoted(a.answer).replace(chr(10), "<br>")}”</div>',
                unsafe_allow_html=True)
    for j, (point, made, evidence, _) in enumerate(a.points):
        c1, c2 = st.columns([6, 2], vertical_alignment="center")
        tag = " _(overruled by you)_" if Q.overruled(a, j) else ""
        # the learner's words verbatim: escaped, never typeset
        c1.markdown(f"{'✓' if made else '✗'} {html.escape(point, quote=False)}{tag}"
                    + (f" — “{GR.quoted(evidence)}”" if evidence and made else ""), unsafe_allow_html=True)
        c2.toggle("Overrule", value=Q.overruled(a, j), key=f"qa_gmock_over_{mock.id}_{n}_{j}",
                  on_change=_overrule, args=(mock, state, n, j, learner),
                  help="You disagree with the grader on this point: it counts the other way, and is stored as "
                       "overruled. On your last answer it can change the follow-up.")


def _overrule(mock, state: dict, n: int, j: int, learner) -> None:
    """Before the next run draws anything: the point flipped, its stored rows and a recorded verdict restated."""
    a = state["asked"][n]
    Q.overrule(a, j)
    if learner is None:
        return
    if a.at is not None:
        progress().restate_points(learner, a.card, a.at, Q.asked_point_rows(a))
    if state["recorded"] and not isinstance(state["recorded"], bool):  # the verdict is recorded: it follows
        v = Q.mock_verdict([state["asked"][k].score for k in Q.chain_steps(mock, state["asked"])])
        progress().restate_mock(learner, mock.id, state["recorded"], v.level, v.mean)
    save(mock, state, learner)


def save(mock, state: dict, learner) -> None:
    """With a name, the interview as it stands, so that a reload resumes it."""
    if learner is not None:
        progress().save_interview(learner, mock.id, Q.interview_json(state))
