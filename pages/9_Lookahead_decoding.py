"""Lookahead decoding, one target pass at a time: the 2-D Jacobi window, the n-gram pool it fills, the
candidates verified in the same pass, and plain Jacobi iteration beside it."""
import streamlit as st

from ui.common import (chart, controls, encode, figure, get_models, get_replay, link, play_interval, play_speed,
                       play_tick, sidebar, slider)

from specviz.figures import label_plain, md_escape
from specviz.figures.lookahead import candidates_figure, jacobi_figure, mask_figure, progress_figure, window_figure
from specviz.engine.lookahead import jacobi_steps, lookahead_steps

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
    done = replay.shown()
    jacobi.seek(step.step)  # plain Jacobi after the same number of target passes
    jac = jacobi.current()
    texts = step.texts
    def n_(count, word):  # "1 token", "2 tokens"
        return f"{count} {word}{'s' if count != 1 else ''}"

    how = (f"candidate {step.best} matched {n_(step.matched[step.best], 'token')}" if step.best >= 0
           else "no candidate matched" if step.candidates else
           "nothing to verify yet: the pool is still empty" if step.pool_size == step.added else
           f"nothing to verify: no n-gram in the pool starts with the last token "
           f"“{md_escape(label_plain(texts.get(step.root, '?')))}”")
    st.markdown(f"**Target pass {step.step + 1}** · {how} → {n_(len(step.emitted), 'token')}: "
                + " ".join(f"“{md_escape(label_plain(texts[x]))}”" for x in step.emitted)
                + f" · pool {n_(step.pool_size, 'n-gram')}" + (" · done" if replay.at_end else ""))
    # full width: at W = 10 a half-width column leaves no room for the cells' text
    chart(figure(window_figure, step), key="la_window_fig")
    chart(figure(candidates_figure, step), key="la_cand_fig")
    st.caption(f"Target KV cache: {step.target_cache.before} entries after the pass (context + window + "
               f"candidates) → {step.target_cache.after} kept (context + the accepted candidate's tokens). "
               "The window's and the rejected candidates' entries are dropped: they were computed under the mask, "
               "not as part of the output.")
    tokens = sum(len(s.emitted) for s in done)
    jac_done = jacobi.shown()
    jac_tokens = sum(len(s.emitted) for s in jac_done)
    m = st.columns(4)
    m[0].metric("Target passes", len(done))
    m[1].metric("Tokens (lookahead)", tokens, help="emitted after this many target passes")
    m[2].metric("Tokens per pass (lookahead)", f"{tokens / len(done):.2f}")
    m[3].metric("Tokens per pass (plain Jacobi)", f"{jac_tokens / len(jac_done):.2f}" if jac_done else "—")
    if jac is not None:
        chart(figure(jacobi_figure, jac), key="la_jacobi_fig")
        st.caption("Plain Jacobi iteration (no pool) on the same prompt: every guess is replaced by the target's "
                   "output after the guesses before it. A guess is exact only when every guess before it was, so "
                   "it converges to greedy's output but seldom gains more than one token per pass: the reason "
                   "lookahead keeps the n-grams the iteration produces.")
    chart(progress_figure(done, jacobi.shown()), key="la_progress")
    with st.expander("The attention mask of this pass"):
        chart(figure(mask_figure, step), key="la_mask_fig")
        st.caption("Window cell (level l, column i) continues level 0's columns 0..i and its own column's lower "
                   "levels, at position id t + 1 + i + l; candidate token j sits at t + 1 + j and sees its own "
                   "earlier tokens. Nothing sees across branches, so one pass does both jobs.")
    st.caption("On this 2-core CPU a forward over ~30 positions costs several times one over 1 position, so "
               "lookahead usually LOSES wall-clock time here even when it gains tokens per pass (see the "
               "benchmark in the README); on a GPU a decode forward is memory-bound and extra positions are "
               "nearly free, which is where lookahead pays.")


view()
play_speed("lookahead")
