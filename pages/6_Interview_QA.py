"""Interview questions in our own words, a misconceptions list, and a self-graded quiz."""
import random

import streamlit as st

from ui.common import sidebar

from specviz.qa import load, topics

st.set_page_config(page_title="Interview Q&A · SpecViz", layout="wide")
sidebar()
st.title("Interview Q&A")
questions, misconceptions = load()
PAGE_NAMES = {"pages/1_Beam_search.py": "Beam search", "pages/2_Speculative_decoding.py": "Speculative decoding",
              "pages/3_Speedup_lab.py": "Speedup lab", "pages/4_Lossless_lab.py": "Lossless lab",
              "pages/5_Drafter_comparison.py": "Drafter comparison"}

chosen = st.multiselect("Topics", topics(), default=[], key="qa_topics", placeholder="All topics")
pool = [q for q in questions if not chosen or q.topic in chosen]
mode = st.radio("Mode", ["Browse", "Quiz"], horizontal=True, key="qa_mode")

if mode == "Browse":
    st.caption(f"{len(pool)} questions. L4: fundamentals · L5: mechanics and trade-offs · L6: systems and design.")
    for q in pool:
        with st.expander(f"**{q.level}** · {q.question}  ·  _{q.topic}_"):
            st.markdown(q.answer)
            st.page_link(q.page, label=f"See it: {PAGE_NAMES.get(q.page, q.page)}", icon="👉")
else:
    state = st.session_state.setdefault("qa_quiz", {"order": [], "i": 0, "shown": False, "right": 0, "done": 0})
    ids = [q.id for q in pool]
    if sorted(state["order"]) != sorted(ids):
        state.update(order=random.Random(len(ids)).sample(ids, len(ids)), i=0, shown=False, right=0, done=0)
    if not ids:
        st.info("No question in the chosen topics.")
    else:
        st.metric("Score", f"{state['right']} / {state['done']}")
        q = next(x for x in pool if x.id == state["order"][state["i"] % len(ids)])
        st.markdown(f"**{q.level} · {q.topic}**  \n### {q.question}")
        if not state["shown"]:
            if st.button("Reveal the answer", key="qa_reveal", type="primary"):
                state["shown"] = True
                st.rerun()
        else:
            st.markdown(q.answer)
            st.page_link(q.page, label=f"See it: {PAGE_NAMES.get(q.page, q.page)}", icon="👉")
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
for m in misconceptions:
    st.error(f"✗ {m.claim}")
    st.markdown(m.correct)
    st.page_link(m.page, label=f"Demonstrated on: {PAGE_NAMES.get(m.page, m.page)}", icon="👉")
