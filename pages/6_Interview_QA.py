"""Interview questions in our own words, a misconceptions list, and a self-graded quiz over both."""
import random

import streamlit as st

from ui.common import keep, sidebar
from ui.registry import BY_PATH

from specviz.qa import load, quiz_items, topics

sidebar()
st.title("Interview Q&A")
questions, misconceptions = load()


def links(page: str, source: str, label: str = "See it") -> None:
    if page:
        st.page_link(page, label=f"{label}: {BY_PATH[page].title}", icon=BY_PATH[page].icon)
    st.caption(f"Source: {source}")


# keep(): the topics, the mode and a half-written answer survive a visit to another page (Streamlit drops a
# widget's value at the end of any run that does not draw it)
keep("qa_topics")
chosen = st.multiselect("Topics", topics(), key="qa_topics", placeholder="All topics")
pool = [q for q in questions if not chosen or q.topic in chosen]
keep("qa_mode")
mode = st.radio("Mode", ["Browse", "Quiz"], horizontal=True, key="qa_mode")

if mode == "Browse":
    st.caption(f"{len(pool)} questions. L4: fundamentals · L5: mechanics and trade-offs · L6: systems and design. "
               "Figures measured by SpecViz are quoted from the model card (models/README.md) or the benchmark "
               "(docs/bench-*.json), with their date.")
    for q in pool:
        with st.expander(f"**{q.level}** · {q.question}  ·  _{q.topic}_"):
            st.markdown(q.answer)
            links(q.page, q.source)
else:
    items = quiz_items(chosen)
    state = st.session_state.setdefault("qa_quiz", {"order": [], "i": 0, "shown": False, "right": 0, "done": 0})
    ids = [x.id for x in items]
    if sorted(state["order"]) != sorted(ids):
        state.update(order=random.Random(len(ids)).sample(ids, len(ids)), i=0, shown=False, right=0, done=0)
    if not ids:
        st.info("No question in the chosen topics.")
    else:
        n = state["i"] % len(ids)
        st.caption(f"The quiz draws from all {len(ids)} questions and misconceptions in the chosen topics.")
        c1, c2 = st.columns(2)
        c1.metric("Question", f"{n + 1} of {len(ids)}")
        c2.metric("Score", f"{state['right']} / {state['done']}")
        q = next(x for x in items if x.id == state["order"][n])
        st.markdown(f"**{q.level} · {q.topic}**")
        st.markdown(f"### {q.prompt}")
        keep(f"qa_mine_{q.id}")
        st.text_area("Your answer (write it before you reveal; kept while you visit other pages, not saved)",
                     key=f"qa_mine_{q.id}", height=120)
        if not state["shown"]:
            if st.button("Reveal the answer", key="qa_reveal", type="primary"):
                state["shown"] = True
                st.rerun()
        else:
            with st.container(border=True):
                st.markdown(q.answer)
                links(q.page, q.source)
            c1, c2 = st.columns(2)
            if c1.button("I had it ✓", key="qa_right"):
                state.update(right=state["right"] + 1, done=state["done"] + 1, i=state["i"] + 1, shown=False)
                st.rerun()
            if c2.button("Not yet ✗", key="qa_wrong"):
                state.update(done=state["done"] + 1, i=state["i"] + 1, shown=False)
                st.rerun()
        if st.button("Restart quiz", key="qa_restart"):
            state.update(i=0, shown=False, right=0, done=0)
            st.rerun()

st.subheader("Misconceptions")
if mode == "Quiz":  # the list holds the quiz's own answers: shown only while browsing
    st.caption(f"{len(misconceptions)} claims heard in interviews and read in guides, each with the correct version: "
               "hidden during the quiz, which asks them too. Switch to **Browse** to read them.")
    misconceptions = []
else:
    st.caption(f"{len(misconceptions)} claims heard in interviews and read in guides, each with the correct version.")
for m in misconceptions:
    with st.container(border=True):
        st.markdown(f"**Misconception** · _{m.topic}_  \n{m.claim}")
        st.markdown(f"**Correct** · {m.correct}")
        links(m.page, m.source, "Demonstrated on")
