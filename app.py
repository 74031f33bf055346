"""SpecViz entrypoint: the page list and the home page (what greedy, beam search and speculative decoding are,
and where to see each). The pages are declared (ui/registry.py) with st.navigation, not found from pages/, so that the
sidebar names every page, this one "Home" rather than the file name "app"."""
import streamlit as st

from ui.common import sidebar
from ui.registry import PAGES, navigation, page_link


def home():
    st.set_page_config(page_title="SpecViz — see LLM decoding decide")
    sidebar()


    st.title("SpecViz — watch a real language model decode")
    st.markdown(
        "Every page drives **SmolLM2-135M-Instruct** (embedded, offline) one step at a time and draws each "
        "decision it makes. Pick a prompt in the sidebar, open a page, press **Step**.")

    st.subheader("The mental model: search vs accelerator")
    a, b, c = st.columns(3)
    with a:
        st.markdown("#### Greedy")
        st.markdown("Take the single most likely next token, every step. Fast and deterministic, but short-sighted: "
                    "a token that looks best now can lead into a less likely sentence overall.")
    with b:
        st.markdown("#### Beam search — a *search*")
        st.markdown("Keep the **B** best partial sequences by total log-probability, expand them all, prune back to B. "
                    "It usually finds likelier sequences than greedy (not always: the greedy path itself can be pruned), "
                    "changing *what* is generated (often blander text in chat). It costs about B× the compute per "
                    "token, and the generated tokens' KV cache grows B-fold (the prompt's can be shared by all beams).")
    with c:
        st.markdown("#### Speculative decoding — an *accelerator*")
        st.markdown("A cheap draft guesses K tokens; the target verifies all of them in **one** forward pass and keeps "
                    "what it agrees with. It changes only *how fast* the target's own output appears: with the right "
                    "accept rule the output is exactly the target's — its greedy tokens, or its sampling distribution "
                    "(in exact arithmetic: floating-point kernels can flip a near-tie).")

    st.subheader("Pages")
    for page in PAGES:
        page_link(page.path)
    st.caption("Each page keeps its own run per browser tab: two tabs never share a cursor.")


navigation(home)
