"""Beam search step by step, beside greedy on the same prompt."""
import streamlit as st

from ui.views import render
from ui.stepping import controls, get_replay, link, play_interval, play_speed, play_tick
from ui.sidebar import encode, get_models, sidebar
from ui.state import keep, slider
from ui.learner import count_prediction
from ui.export import export_lesson

from specviz.engine.beam import beam_steps
from specviz.views import whole_run
from specviz.views.beam_search import beam_event
from specviz.figures.beam_tree import by_beam, shown_candidates
from specviz.figures import label_plain, md_escape
from specviz.practice.predict import mark_beam
from specviz.engine.plain import plain_steps
from specviz.engine.loop import run_steps

settings = sidebar()
st.title("Beam search")
st.caption("Keep the B best partial sequences by total log-probability; expand each over the vocabulary, "
           "prune back to B, set aside those that end. A search for a likelier sequence — not a speedup.")
models = get_models(settings)

c1, c2, c3, c4 = st.columns(4)
B = slider(c1, "Beam width B", "bm_b", 1, 8, 3, "beams")
penalty = slider(c2, "Length penalty", "bm_lp", -1.0, 3.0, 1.0, "length_penalty", step=0.1,
                 help="score = sum log p / length^penalty: above 0 favours longer hypotheses.")
max_new = slider(c3, "Max new tokens", "bm_max", 2, 40, 12, "max_new_tokens")
top_n = slider(c4, "Top candidates shown per beam", "bm_top", 1, 6, 3, "top")
keep("bm_predict")
predict = st.toggle("Predict first", key="bm_predict",
                    help="Each step first shows its candidates without their fate: pick the ones that stay in the "
                         "beam, then Step (→) reveals which were kept, pruned or finished.")
link("beam", "Beam_search", dict(beams=B, length_penalty=penalty, max_new_tokens=max_new, top=top_n))
ids = encode(models, settings, max_new)
params = (tuple(ids), B, penalty, max_new, top_n, settings.target, predict)
# predicting: two phases per step (the candidates, then their fate); a changed switch starts a clean run
replay = get_replay("beam", params, lambda: beam_steps(models.target, models.tokenizer, ids, B,
                                                       max_new, penalty, top_n),
                    phases=2 if predict else 1)


def prediction(step):
    """Predict first: the candidates drawn without their fate; the learner picks the survivors before Step."""
    cands = by_beam(shown_candidates(step))
    names = [f"{i + 1}. beam {c.parent + 1} ({step.beams_before[c.parent].logprob:.2f}) + "
             f"“{md_escape(label_plain(c.text))}” (log p {c.logprob:.2f})" for i, c in enumerate(cands)]
    key = f"bm_pred_{id(replay)}_{step.step}"
    if replay.phase == 0:
        st.multiselect(f"Which {B} candidates stay in the beam? Each is a beam's total log-prob + its token's log p "
                       "(grey circles above, grouped by beam)", names, key=key, max_selections=B)
        st.session_state.setdefault("bm_guesses", {})[key] = [names.index(n) for n in st.session_state.get(key, [])]
        return
    chosen = set(st.session_state.get("bm_guesses", {}).get(key, []))
    if not chosen:  # Step pressed without picking: nothing to mark, nothing counted (as on the other pages)
        st.caption("No prediction made for this step.")
        return
    right, lines = mark_beam(cands, chosen, B)
    total = count_prediction("beam", key, right, len(cands))
    with st.container(border=True):
        st.markdown(f"**Your prediction: {right} of {len(cands)} candidates right** (this session: {total[0]} of "
                    f"{total[1]})  \n" + "  \n".join(md_escape(line) for line in lines))


@st.cache_data(show_spinner=False, max_entries=64)
def greedy_reference(ids: tuple, max_new: int, model_key):
    _, r = run_steps(plain_steps(models.target, models.tokenizer, list(ids), max_new))
    return r.token_ids, r.logprob


@st.fragment(run_every=play_interval("beam"))
def view():
    play_tick("beam", replay)
    controls("beam", replay)
    step = replay.current()
    if step is None:
        st.info("Press **Step** to expand the beams one token at a time.")
        return
    g_ids, g_lp = greedy_reference(tuple(ids), max_new, settings.target)
    last = replay.finished and replay.event == len(replay.events) - 1
    render(beam_event(replay.events, replay.event, models.tokenizer, g_ids, g_lp, B, penalty, last, predict),
           replay.phase, {"prediction": lambda: prediction(step)})


view()
play_speed("beam")
export_lesson("bm", "beam", params, [replay], lambda: whole_run(
    beam_event, list(replay.events), models.tokenizer, *greedy_reference(tuple(ids), max_new, settings.target), B,
    penalty),
    settings.prompt, dict(beams=B, length_penalty=penalty, max_new_tokens=max_new, top_per_beam=top_n))
