"""Interview questions in our own words and a misconceptions list (Browse); a quiz that trains: rounds shuffled per
session, filters, rubric points, true/false and code cards, Leitner boxes (Quiz); chains of follow-ups with a
verdict (Mock interview). The rules live in specviz.practice.quiz; this page draws them."""
import time

import streamlit as st

from ui.sidebar import sidebar
from ui.state import keep
from ui.learner import current, name_hint, progress
from ui.registry import BY_PATH
from ui import grading as GR

from specviz.figures import md_escape
from specviz.practice import quiz as Q
from specviz.qa.bank import LEVELS, bank, quiz_items

sidebar()
st.title("Interview Q&A")
BANK = bank()
ITEMS = quiz_items()
BY_ID = {i.id: i for i in ITEMS}
KIND = {"question": "question", "truefalse": "true or false", "code": "code: find the bug"}


def links(page: str, source: str, label: str = "See it") -> None:
    if page in BY_PATH:
        st.page_link(page, label=f"{label}: {BY_PATH[page].title}", icon=BY_PATH[page].icon)
    st.caption(f"Source: {source}")


def setting(key: str, default) -> None:
    """A filter kept across page switches (keep), with its default on a first visit. (A kept value the bank no longer
    offers is no failure: Streamlit falls back to the widget's default.)"""
    keep(key)
    st.session_state.setdefault(key, default)


def level_name(level: str) -> str:
    return f"{level} · {Q.LEVEL_NAMES.get(level, '')}"


def saved_line(learner) -> None:
    if learner is None:
        st.caption(name_hint("Type a name in the sidebar to keep your progress: without one this session counts your "
                             "answers but stores nothing."))
    else:
        st.caption(f"Your answers are saved under **{md_escape(st.session_state.get('s_learner', ''))}**: "
                   f"{len(progress().cards(learner))} cards seen so far.")


# keep(): the topics, the mode and a half-written answer survive a visit to another page (Streamlit drops a
# widget's value at the end of any run that does not draw it)
if st.query_params.get("card") in BY_ID:  # a link to one card (?card=ID): it opens in the quiz
    st.session_state["qa_retry_card"] = st.query_params["card"]
    st.session_state["qa_mode"] = "Quiz"
    del st.query_params["card"]
setting("qa_mode", "Browse")
mode = st.radio("Mode", ["Browse", "Quiz", "Mock interview"], horizontal=True, key="qa_mode")
if mode != "Mock interview":
    f1, f2 = st.columns(2)
    setting("qa_topics", [])
    chosen = f1.multiselect("Topics", sorted({i.topic for i in ITEMS}), key="qa_topics", placeholder="All topics")
    setting("qa_levels", [])
    levels = f2.multiselect("Levels", list(LEVELS), key="qa_levels", format_func=level_name, placeholder="All levels")


def answer_box(item, label: str) -> None:
    key = f"qa_mine_{item.id}"
    keep(key)
    st.text_area(label, key=key, height=110, max_chars=Q.MAX_ANSWER,
                 help="Kept while you visit other pages; cleared when the card is scored. Not saved.")


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
    note = f"Last card: {Q.fmt(score)} of 1."
    if learner is not None:
        note += " " + Q.box_message(progress().record_card(learner, item.id, score))
    st.session_state["qa_note"] = note


def go_on(r, item) -> None:
    for key in (f"qa_mine_{item.id}", f"_keep_qa_mine_{item.id}"):
        st.session_state.pop(key, None)
    r.next()
    st.rerun()


def graded_card(r, item) -> None:
    """Issue 47: the answer graded point by point; the learner may overrule a point; the score feeds the boxes."""
    key = f"qa_mine_{item.id}"
    gkey = f"qa_grade_{r.number}_{r.i}"
    answer_box(item, "Your answer (type it as you would say it)")
    graded = st.session_state.get(gkey)
    if graded is None:
        if st.button("Grade my answer", key="qa_grade", type="primary") or st.session_state.pop("qa_regrade_now",
                                                                                                  False):
            g = GR.grade_answer(GR.G.gradable_cards()[item.id], st.session_state.get(key, ""))
            if isinstance(g, str):
                st.warning(g)  # one line; nothing stored
                return
            st.session_state[gkey] = (st.session_state.get(key, ""), g)
            r.revealed = True
            st.rerun()
        return
    text, g = graded
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
    score = sum(made) / max(1, len(made))
    if st.button("Score it and go on ▶", key="qa_score", type="primary"):
        learner = current()
        if learner is not None:
            progress().record_points(learner, item.id, [(n, p.point, p.made, m)
                                                        for n, (p, m) in enumerate(zip(g.points, made))])
        record(r, item, score)
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


def summary(r) -> None:
    s = Q.summarize(r.order, r.scores, BY_ID)
    st.subheader("Round done: summary")
    row = st.container(horizontal=True, gap="large")
    row.metric("Score", f"{Q.fmt(s.score)} / {s.cards}", width="content")
    row.metric("Points", f"{round(100 * s.score / s.cards) if s.cards else 0} %", width="content",
               help="Share of the round's points (partial credit counts); cards fully right: "
                    f"{s.cards - len(s.missed)} of {s.cards}")
    row.metric("Missed", len(s.missed), help="Cards scoring under 0.8 (they go back to Leitner box 1)", width="content")
    t1, t2 = st.columns(2)
    for col, title, rows in ((t1, "Level", s.by_level), (t2, "Topic", s.by_topic)):
        col.dataframe([{title: x.name, "Cards": x.cards, "Score": Q.fmt(x.score), "Right %": round(x.percent)}
                       for x in rows], hide_index=True, width="stretch")
    b1, b2 = st.columns(2)
    if b1.button("New round ↻", key="qa_new", type="primary", width="stretch"):
        new_round(r.key)
        st.rerun()
    if b2.button(f"Retry the {len(s.missed)} missed", key="qa_retry", disabled=not s.missed,
                 width="stretch"):
        new_round(r.key, Q.shuffled(list(s.missed), st.session_state["qa_seed"], r.number + 1))
        st.rerun()
    if s.missed:
        st.markdown("**The cards you missed**")
    for c in s.missed:
        item = BY_ID[c]
        with st.expander(f"{item.level} · {item.prompt} · score {Q.fmt(r.scores[c])}"):
            answer(item)


def new_round(key, order=None) -> Q.Round:
    """A new round (the next number of this session's shuffle): from the filters, or the order given (retry)."""
    number = st.session_state.get("qa_rounds", 0) + 1
    st.session_state["qa_rounds"] = number
    if order is None:
        topics_, levels_, missed_only, due_first, size = key
        learner, history = current(), st.session_state.setdefault("qa_history", {})
        only = None
        if missed_only:
            only = progress().missed(learner) if learner is not None else Q.session_missed(history)
        due = None
        if due_first:
            due = (lambda ids: progress().due_order(learner, ids)) if learner is not None else \
                (lambda ids: Q.session_due_order(ids, history))
        order = Q.round_order(ITEMS, st.session_state["qa_seed"], number, topics_, levels_, only, due, size)
    r = st.session_state["qa_round"] = Q.Round(order, key, number)
    st.session_state.pop("qa_note", None)
    return r


def quiz() -> None:
    st.session_state.setdefault("qa_seed", Q.new_seed())
    saved_line(current())
    opts = st.container(horizontal=True, gap="medium", vertical_alignment="center")  # wraps, never stacks on a phone
    setting("qa_missed", False)
    missed_only = opts.toggle("Missed only", key="qa_missed",
                              help="Cards whose last answer scored under 0.8 (saved ones with a name, "
                                   "else this session's)")
    setting("qa_due", False)
    due_first = opts.toggle("Due cards first", key="qa_due",
                            help="Leitner boxes: cards due again (missed ones first), then new cards, then the rest")
    setting("qa_self_tick", False)
    opts.toggle("Tick points myself", key="qa_self_tick", disabled=not GR.G.available(),
                help="Off: your typed answer is graded point by point, offline, and you may overrule a point. On: "
                     "reveal the rubric and tick the points you made yourself.")
    setting("qa_size", 10)
    size = opts.selectbox("Cards per round", Q.ROUND_SIZES, key="qa_size", format_func=lambda n: str(n) if n else "all",
                          width=150)
    if not GR.G.available():
        st.caption(GR.G.MISSING)
    learner = current()
    weak = progress().weak_points(learner) if learner is not None else []
    if weak:
        with st.expander("Points you miss most often"):
            GR.weak_points(learner, progress(), "qa", weak)
    key = (tuple(chosen), tuple(levels), missed_only, due_first, size)
    r = st.session_state.get("qa_round")
    retry = st.session_state.pop("qa_retry_card", None)
    if retry in BY_ID:  # "Retry" on a weak point (Home or below): that card alone
        r = new_round(key, [retry])
    elif r is None or r.key != key or any(c not in BY_ID for c in r.order):
        r = new_round(key)
    if not r.order:
        st.info("No missed card in these filters yet: answer some cards first, or turn **Missed only** off."
                if missed_only else "No card matches these filters.")
        return
    if r.done:
        summary(r)
        return
    item = BY_ID[r.current]
    row = st.container(horizontal=True, gap="large")
    row.metric("Question", f"{r.i + 1} of {len(r.order)}", width="content")
    row.metric("Score", f"{Q.fmt(r.total)} / {len(r.scores)}", width="content")
    row.metric("Right", sum(Q.is_right(x) for x in r.scores.values()), help="Cards scoring at least 0.8",
               width="content")
    st.progress(r.i / len(r.order))
    if st.session_state.get("qa_note"):
        st.caption(st.session_state["qa_note"])
    st.markdown(f"**{level_name(item.level)} · {item.topic}** · _{KIND[item.kind]}_")
    st.markdown(f"### {item.prompt}")
    {"question": question_card, "truefalse": truefalse_card, "code": code_card}[item.kind](r, item)


PER_PAGE = 20  # questions drawn at once: 130 expanders with their maths took the browser 3-4 s to open


def browse() -> None:
    pool = [q for q in BANK.questions if (not chosen or q.topic in chosen) and (not levels or q.level in levels)]
    total, pages = len(pool), max(1, -(-len(pool) // PER_PAGE))
    if pages > 1:
        setting("qa_browse_page", 1)
        if st.session_state["qa_browse_page"] > pages:
            st.session_state["qa_browse_page"] = 1
        at = st.selectbox("Questions", list(range(1, pages + 1)), key="qa_browse_page", width=220,
                          format_func=lambda n: f"{(n - 1) * PER_PAGE + 1}–{min(n * PER_PAGE, total)} of {total}")
        pool = pool[(at - 1) * PER_PAGE:at * PER_PAGE]
    st.caption(f"{total} questions{f', {PER_PAGE} at a time' if pages > 1 else ''}. L4: fundamentals · L5: mechanics "
               "and trade-offs · L6: systems and design. "
               "Each opens on what to say in 30 seconds. Figures measured by SpecViz are quoted from the model card "
               "(models/README.md) or the benchmark (docs/bench-*.json), with their date.")
    for q in pool:
        with st.expander(f"**{q.level}** · {q.question}  ·  _{q.topic}_"):
            if q.headline:
                st.markdown(f"**In 30 s:** {q.headline}")
            st.markdown(q.answer)
            if q.rubric:
                st.markdown("**A complete answer makes these points:**\n" + "\n".join(f"- {p}" for p in q.rubric))
            links(q.page, q.source)


def countdown(m, limit: int) -> None:
    """The step's timer: a fragment redrawn every second while time is left (the page never blocks)."""
    if m.started is None:
        m.started = time.time()

    @st.fragment(run_every=1 if Q.remaining(m.started, limit, time.time()) > 0 else None)
    def show():
        left = Q.remaining(m.started, limit, time.time())
        if left > 0:
            st.markdown(f"⏱ **{left // 60}:{left % 60:02d}** left for this step")
        else:
            st.warning("⏱ Time's up: close your answer in one sentence, then reveal.")
            if st.session_state.get("qa_mock_ticking"):  # one full rerun stops the ticking
                st.session_state["qa_mock_ticking"] = False
                st.rerun()

    st.session_state["qa_mock_ticking"] = Q.remaining(m.started, limit, time.time()) > 0
    show()


def verdict_block(mock, scores, rows, learner, recorded: bool, rule_extra: str = "") -> bool:
    """A chain's verdict: level, rule, the steps' table, the weakest step, the level guide and the learner's past
    results on it (recorded once). Returns whether it is recorded."""
    v = Q.mock_verdict(scores)
    st.subheader(f"Verdict: {v.level} ({Q.LEVEL_NAMES.get(v.level, 'start with the fundamentals')})")
    st.markdown(f"Mean step score {round(100 * v.mean)} % over {len(scores)} steps. Rule: {Q.VERDICT_RULE}"
                + (f" {rule_extra}" if rule_extra else ""))
    st.dataframe(rows, hide_index=True, width="stretch")
    if v.weakest is not None and scores[v.weakest] < 1:
        st.markdown(f"Work on step {v.weakest + 1} first: _{rows[v.weakest]['Question']}_")
    if mock.level_guide:
        with st.container(border=True):
            st.markdown(f"**What separates the levels in this chain**\n\n{mock.level_guide}")
    if learner is not None:
        if not recorded:
            progress().record_mock(learner, mock.id, v.level, v.mean)
            recorded = True
        past = [f"{lvl} ({round(100 * s)} %)" for mid, lvl, s in progress().mocks(learner) if mid == mock.id]
        st.caption("Your results on this chain so far: " + ", ".join(past))
    return recorded


def mock_verdict(mock, m, learner) -> None:
    m.recorded = verdict_block(mock, m.scores, [{"Step": n + 1, "Question": s.question, "Score": Q.fmt(x)}
                                                for n, (s, x) in enumerate(zip(mock.steps, m.scores))],
                               learner, m.recorded)
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
    st.text_area("Your answer (as you would say it)", key=key, height=130, max_chars=Q.MAX_ANSWER)
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
    last = m.step + 1 == len(mock.steps)
    if st.button("See the verdict ▶" if last else "Score it, next question ▶", key="qa_mock_score", type="primary"):
        st.session_state.pop(key, None)
        st.session_state.pop("_keep_" + key, None)
        m.score(score)
        st.rerun()


def graded_interview(mock, learner) -> None:
    """Issue 47: the interviewer grades each answer and follows up on the weakest missed point."""
    state = st.session_state.get("qa_gmock")
    if state is None or state["id"] != mock.id:
        state = st.session_state["qa_gmock"] = {"id": mock.id, "asked": [], "recorded": False}
    asked = state["asked"]
    nxt = Q.next_question(mock, asked, lambda point, exclude: GR.G.follow_up(point, exclude, GR.encoder()))
    if nxt is None:
        scores = [a.score for a in asked]
        state["recorded"] = verdict_block(mock, scores, [{"Step": n + 1, "Question": a.question, "Why asked": a.why,
                                                          "Score": Q.fmt(a.score)} for n, a in enumerate(asked)],
                                          learner, state["recorded"], Q.FOLLOW_UP_RULE)
        st.download_button("Download the transcript (Markdown)",
                           Q.transcript(mock.title, asked, Q.mock_verdict(scores)),
                           file_name=f"{mock.id}-transcript.md", mime="text/markdown", key="qa_gmock_dl")
        if st.button("Take this interview again ↻", key="qa_gmock_again", type="primary"):
            st.session_state.pop("qa_gmock", None)
            st.rerun()
        return
    card_id, question, why = nxt
    st.metric("Question", f"{len(asked) + 1} of {len(mock.steps)}")
    st.caption(f"Asked as {why}" if len(asked) else "The chain's first question.")
    st.markdown(f"### {question}")
    key = f"qa_gmock_mine_{mock.id}_{len(asked)}"
    keep(key)
    st.text_area("Your answer (as you would say it)", key=key, height=130, max_chars=Q.MAX_ANSWER)
    if st.button("Answer ▶", key="qa_gmock_answer", type="primary"):
        text = st.session_state.get(key, "")
        card = GR.G.card(card_id)
        g = GR.grade_answer(card, text)
        if isinstance(g, str):
            st.warning(g)
            return
        asked.append(Q.Asked(card_id, question, why, text,
                             tuple((p.point, p.made, p.evidence, p.confidence) for p in g.points), g.score))
        if learner is not None:
            progress().record_points(learner, card_id, [(n, p.point, p.made, p.made) for n, p in enumerate(g.points)])
        st.session_state.pop(key, None)
        st.session_state.pop("_keep_" + key, None)
        st.rerun()
    if asked:
        last = asked[-1]
        with st.expander(f"Your last answer: {round(100 * last.score)} % of its points", expanded=False):
            for p, made, evidence, _ in last.points:
                st.markdown(f"{'✓' if made else '✗'} {p}" + (f" — “{md_escape(evidence)}”" if evidence else ""))


def interview() -> None:
    learner = current()
    saved_line(learner)
    if not BANK.mocks:
        st.info("No mock interview in the bank yet.")
        return
    mocks = {x.id: x for x in BANK.mocks}
    setting("qa_mock_pick", BANK.mocks[0].id)
    c1, c2, c3 = st.columns([3, 1, 1])
    pick = c1.selectbox("Interview", list(mocks), key="qa_mock_pick",
                        format_func=lambda k: f"{mocks[k].title} ({len(mocks[k].steps)} questions)")
    setting("qa_mock_graded", GR.G.available())
    graded = st.toggle("The interviewer grades my answers", key="qa_mock_graded", disabled=not GR.G.available(),
                       help="On: each answer is graded offline and the next question follows up on what it missed. "
                            "Off: reveal the rubric and the L4/L5/L6 answers, and tick the points yourself.")
    if not GR.G.available():
        st.caption(GR.G.MISSING)
    if graded and GR.G.available():
        st.caption("One question at a time. Each answer is graded point by point on this machine; the next question "
                   "follows up on what it missed, as an interviewer does. The verdict comes at the end.")
        return graded_interview(mocks[pick], learner)
    setting("qa_mock_timer", False)
    timer = c2.toggle("Timer", key="qa_mock_timer", help="A countdown per question; nothing stops when it ends")
    setting("qa_mock_secs", 120)
    secs = c3.selectbox("Seconds per question", Q.TIMER_SECONDS, key="qa_mock_secs", disabled=not timer)
    st.caption("One question at a time, each following up on the last, as an interviewer does. Answer, reveal the "
               "rubric and what L4, L5 and L6 candidates say, tick the points you made; the verdict comes at the end.")
    m = st.session_state.get("qa_mock")
    if m is None or m.id != pick:
        m = st.session_state["qa_mock"] = Q.Mock(pick, len(mocks[pick].steps))
    if m.done:
        mock_verdict(mocks[pick], m, learner)
    else:
        mock_step(mocks[pick], m, timer, secs)


{"Browse": browse, "Quiz": quiz, "Mock interview": interview}[mode]()

misconceptions = BANK.misconceptions
st.subheader("Misconceptions")
if mode != "Browse":  # the list holds the quiz's own answers: shown only while browsing
    st.caption(f"{len(misconceptions)} claims heard in interviews and read in guides, each with the correct version: "
               "hidden during the quiz, which asks them too. Switch to **Browse** to read them.")
    misconceptions = []
else:
    st.caption(f"{len(misconceptions)} claims heard in interviews and read in guides, each with the correct version.")
for mc in misconceptions:
    with st.container(border=True):
        st.markdown(f"**Misconception** · _{mc.topic}_  \n{mc.claim}")
        st.markdown(f"**Correct** · {mc.correct}")
        links(mc.page, mc.source, "Demonstrated on")
