"""Lookahead decoding, one target pass at a time: the 2-D Jacobi window, the n-gram pool it fills, the
candidates verified in the same pass, and plain Jacobi iteration beside it."""
import streamlit as st

from ui.views import render
from ui.stepping import controls, get_replay, link, play_interval, play_speed, play_tick
from ui.sidebar import encode, get_models, sidebar
from ui.state import slider
from ui.export import export_lesson

from specviz.engine.lookahead import jacobi_steps, lookahead_steps
from specviz.views import whole_run
from specviz.views.lookahead_decoding import lookahead_event

settings = sidebar()
st.title("Lookahead decoding")
st.caption("Speculation with no draft model (Fu et al. 2024). The target guesses the next tokens itself by "
           "Jacobi iteration over a 2-D window, collects the n-grams those guesses produce into a pool, and in "
           "the SAME forward pass verifies the pool's n-grams that start with the last token. Greedy: the "
           "output is exactly plain greedy's.")
models = get_models(settings)
c1, c2, c3, c4 = st.columns(4)
window = slider(c1, "Window W (columns)", "la_window", 1, 10, 5, "window")
ngram = slider(c2, "n-gram size N", "la_ngram", 2, 6, 4, "ngram")
guesses = slider(c3, "Candidates verified G", "la_guesses", 0, 10, 5, "guesses")
max_new = slider(c4, "Max new tokens", "la_max_new", 8, 128, 64, "max_new_tokens")
link("lookahead", "Lookahead_decoding", dict(window=window, ngram=ngram, guesses=guesses, max_new_tokens=max_new))
ids = encode(models, settings, max_new)
params = (tuple(ids), window, ngram, guesses, max_new, settings.target)
rows = 1 + (ngram - 1) * window + guesses * (ngram - 1)
st.caption(f"Each step is ONE target forward over up to {rows} positions: the last token, the window "
           f"({ngram - 1} levels × {window}) and {guesses} candidates × {ngram - 1} tokens.")

replay = get_replay("lookahead", params, lambda: lookahead_steps(models.target, models.tokenizer, ids, max_new,
                                                                 window, ngram, guesses))
jacobi = get_replay("jacobi", params[:2] + params[4:], lambda: jacobi_steps(models.target, models.tokenizer, ids,
                                                                            max_new, window))


@st.fragment(run_every=play_interval("lookahead"))
def view():
    play_tick("lookahead", replay)
    controls("lookahead", replay)
    step = replay.current()
    if step is None:
        st.info("Press **Step** to run the first target pass (the window starts as tokens picked from the prompt).")
        return
    jacobi.seek(step.step)  # plain Jacobi after the same number of target passes (recorded that far)
    last = replay.finished and replay.event == len(replay.events) - 1
    render(lookahead_event(replay.events, replay.event, jacobi.events, last), replay.phase)


view()
play_speed("lookahead")
export_lesson("la", "lookahead", params, [replay, jacobi], lambda: whole_run(
    lookahead_event, list(replay.events), list(jacobi.events)),
              settings.prompt, dict(window=window, ngram=ngram, guesses=guesses, max_new_tokens=max_new))
