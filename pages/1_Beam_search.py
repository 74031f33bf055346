"""Beam search step by step, beside greedy on the same prompt."""
import streamlit as st

from ui.charts import chart, figure
from ui.replay import controls, get_replay, link, play_interval, play_speed, play_tick
from ui.sidebar import encode, get_models, sidebar
from ui.state import keep, slider
from ui.learner import count_prediction
from ui.lesson import export_lesson

from specviz.engine.beam import beam_steps
from specviz.labs.compare import beam_vs_greedy, length_penalty_note
from specviz.lesson import beam_views
from specviz.figures.beam_tree import LEGEND, beam_tree, by_beam, final_ranking, heading, readable, shown_candidates
from specviz.figures import label_plain, md_escape
from specviz.practice.predict import mark_beam
from specviz.engine.plain import plain_steps
from specviz.engine.step import run_steps

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
    st.markdown(heading(step))
    hidden = predict and replay.phase == 0
    chart(figure(beam_tree, replay.events, replay.event, hide_last=hidden), key="beam_tree")
    if predict:
        prediction(step)
        if hidden:
            return
    st.caption(LEGEND)
    if step.beams_after and not replay.at_end:
        with st.expander(f"Running beams after step {step.step + 1} (cumulative log-prob)", expanded=False):
            for h in step.beams_after:
                st.text(f"{h.logprob:8.3f}  {readable(h.text)}")
    if step.finished:
        chart(figure(final_ranking, step.finished), key="beam_rank")
        note = length_penalty_note(step.finished, penalty)
        if note:
            st.caption(note)
    else:
        st.caption("No finished hypothesis yet.")

    g_ids, g_lp = greedy_reference(tuple(ids), max_new, settings.target)
    st.subheader("Beam vs greedy on the same prompt")
    g1, g2 = st.columns(2)
    g1.markdown("**Greedy**")
    g1.text(models.tokenizer.decode(g_ids, skip_special_tokens=True))
    g1.metric("Total log-prob", f"{g_lp:.3f}")
    g2.markdown("**Beam (best finished so far)**")
    if step.finished:
        best = step.finished[0]
        g2.text(models.tokenizer.decode(list(best.tokens), skip_special_tokens=True))
        same = list(best.tokens) == list(g_ids)  # no arrow for "+0.000": nothing was gained or lost
        g2.metric("Total log-prob", f"{best.logprob:.3f}", delta="same sequence as greedy" if same else
                  f"{best.logprob - g_lp:+.3f} vs greedy", delta_color="off" if same else "normal",
                  delta_arrow="off" if same else "auto")
        if replay.at_end:
            st.info(beam_vs_greedy(models.tokenizer, g_ids, g_lp, list(best.tokens), best.logprob, B,
                                   penalty))
    else:
        g2.caption("Step until a hypothesis finishes (EOS or max new tokens).")

view()
play_speed("beam")
export_lesson("bm", "beam", params, [replay], lambda: beam_views(
    list(replay.events), models.tokenizer, *greedy_reference(tuple(ids), max_new, settings.target), B, penalty),
    settings.prompt, dict(beams=B, length_penalty=penalty, max_new_tokens=max_new, top_per_beam=top_n))
