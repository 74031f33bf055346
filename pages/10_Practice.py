"""Drills: exercises with exact answers, from the formulas and from the embedded model's own cycles, graded
with a stated tolerance; a wrong answer gets the worked solution with its own numbers and a link to the page
that shows it. The drills themselves live in specviz.practice.drills (no Streamlit)."""
import random

import streamlit as st

from ui.sidebar import get_models, sidebar
from ui.state import keep
from ui.learner import current, name_hint, progress
from ui.prefetch import ahead
from ui.registry import BY_PATH

from specviz.errors import SpecVizError
from specviz.figures import md_escape
from specviz.practice.drills import DRILLS, MAX_RESPONSE, grade, make

settings = sidebar()
st.title("Practice drills")
st.caption("Numbers an interviewer throws at you, with exact answers: accept or reject, the residual, tokens per "
           "pass, the walltime factor, the best K, KV-cache GiB, the roofline, beam ranking — and the same questions "
           "on the embedded model's own cycles (*live*). Answer, check, read the worked solution; the same seed always "
           "gives the same drill (`python -m specviz drill --kind KIND --seed N`).")
st.page_link("pages/6_Interview_QA.py", label="Explanations instead of numbers: the quiz and mock interviews grade "
             "your typed answers point by point", icon=BY_PATH["pages/6_Interview_QA.py"].icon)

MIXED, MIXED_LIVE = "Mixed: formulas", "Mixed: live model"
titles = {MIXED: None, MIXED_LIVE: None} | {k.title: k.name for k in DRILLS.values()}
keep("dr_choice")
choice = st.selectbox("Drill", list(titles), key="dr_choice")
st.session_state.setdefault("dr_seed", random.SystemRandom().randrange(2 ** 31))  # a session's own sequence
st.session_state.setdefault("dr_history", [])


def kind_for(choice: str, seed: int) -> str:
    if titles[choice]:
        return titles[choice]
    pool = [k.name for k in DRILLS.values() if k.live == (choice == MIXED_LIVE)]
    return pool[seed % len(pool)]


def ask(kind: str, seed: int, models):
    """The future of a drill, made once per process under the engine lock (a live drill runs the model)."""
    return ahead((kind, seed, id(models)), make, kind, seed, models)


seed = st.session_state["dr_seed"]
kind = kind_for(choice, seed)
models = get_models(settings) if DRILLS[kind].live else None
try:
    with st.spinner("Running the model for a real cycle…") if DRILLS[kind].live else st.empty():
        drill = ask(kind, seed, models).result()
except SpecVizError as e:
    st.warning(md_escape(str(e)) + " Press **New drill**.")
    drill = None

if drill is not None:
    if DRILLS[kind_for(choice, seed + 1)].live:  # the next one, made while this one is answered
        ask(kind_for(choice, seed + 1), seed + 1, models or get_models(settings))
    st.markdown(f"**{DRILLS[kind].title}** · seed {seed}")
    st.markdown(drill.question)
    st.caption("Graded " + ("exactly" if not drill.tolerance else f"within ±{drill.tolerance:g}"
                            + (" per number" if drill.form == "list" else "")) + ".")
    peeked = st.session_state.get(f"dr_show_{kind}_{seed}", False)  # the solution read before answering
    answered = st.session_state.get("dr_result")
    with st.form("dr_form", clear_on_submit=False, enter_to_submit=True, border=False):
        if drill.form == "choice":
            response = st.radio("Your answer", drill.choices, index=None, horizontal=True, key=f"dr_pick_{kind}_{seed}")
        else:
            hint = ("a whole number" if drill.form == "int" else "a number" if drill.form == "number" else
                    "letters separated by commas" if isinstance(drill.answer[0], str) else
                    "numbers separated by commas")
            response = st.text_input(f"Your answer ({hint}; Enter checks it)", max_chars=MAX_RESPONSE,
                                     key=f"dr_text_{kind}_{seed}")
        # Enter submits a text answer; a choice is checked with the button
        checked = st.form_submit_button("Check" if drill.form == "choice" else "Check ⏎", type="primary")
    if checked:
        g = grade(drill, response or "")
        if g.readable:
            # an answer after reading the worked solution is shown right or wrong but counted as not right
            counted = g.right and not peeked
            message = g.message if not (g.right and peeked) else "after reading the solution: not counted."
            st.session_state["dr_result"] = (kind, seed, g.right, message)
            st.session_state["dr_history"].append((kind, seed, counted))
            me = current()
            if me is not None:
                progress().record_drill(me, kind, seed, counted, str(response))
        else:
            st.session_state.pop("dr_result", None)  # no stale verdict under a message about this answer
            st.warning(g.message)
        answered = st.session_state.get("dr_result")
    shown = answered if answered and answered[:2] == (kind, seed) else None
    if shown:
        if shown[2]:
            st.success("✓ Right." + (f" ({shown[3]})" if shown[3] else ""))
        else:
            st.error(f"✗ Not right. {md_escape(shown[3])} Try again, or read the solution.")
    if shown and shown[2] or st.toggle("Show the worked solution", key=f"dr_show_{kind}_{seed}",
                                       help="An answer checked after this is shown but not counted as right."):
        with st.container(border=True):
            st.markdown(f"**Solution** · {drill.solution}")
            if drill.page in BY_PATH:
                p = BY_PATH[drill.page]
                st.page_link(p.path, label=f"See it: {p.title}", icon=p.icon)


def new_drill():
    st.session_state["dr_seed"] = (st.session_state["dr_seed"] + 1) % 2 ** 31
    st.session_state.pop("dr_result", None)


st.button("New drill ▶", on_click=new_drill, key="dr_new", shortcut="n", help="The next drill (key N)")

history = st.session_state["dr_history"]
me = current()
st.subheader("Your drills")
if history:
    right = sum(r for _, _, r in history)
    st.metric("This session", f"{right} / {len(history)} right")
if me is None:
    st.caption(name_hint("Type a name in the sidebar to keep your drill history across sessions."))
else:
    stats = progress().drill_stats(me)
    if stats:
        st.table({"drill": [DRILLS[k].title if k in DRILLS else k for k in stats],
                  "tried": [n for n, _ in stats.values()], "right": [r for _, r in stats.values()],
                  "rate": [f"{r / n:.0%}" for n, r in stats.values()]})
    else:
        st.caption("No drill recorded under this name yet.")
