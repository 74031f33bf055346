"""SpecViz entrypoint: the page list and the home page (what greedy, beam search and speculative decoding are,
and where to see each). The list is declared with st.navigation, not found from pages/, so that the sidebar
names every page, this one "Home" rather than the file name "app"."""
import streamlit as st

from ui.common import sidebar


def home():
    st.set_page_config(page_title="SpecViz — see LLM decoding decide", page_icon="🔍", layout="wide")
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
    st.page_link("pages/1_Beam_search.py", label="Beam search — the tree of candidates, prune to B, finished hypotheses, "
                 "length penalty, and greedy side by side", icon="🌳")
    st.page_link("pages/2_Speculative_decoding.py", label="Speculative decoding — draft, one verify pass, u vs min(1, p/q), "
                 "residual or bonus, KV cache rollback", icon="⚡")
    st.page_link("pages/3_Speedup_lab.py", label="Speedup lab — (1 − a^(K+1)) / ((1 − a)(Kc + 1)) live, and measured on "
                 "real runs beside the theory", icon="📈")
    st.page_link("pages/4_Lossless_lab.py", label="Lossless lab — why the output is exactly p: shape p and q, see the "
                 "residual, and the classic mistakes", icon="⚖️")
    st.page_link("pages/5_Drafter_comparison.py", label="Drafter comparison — hidden-state draft, token draft, n-gram and an "
                 "untrained early exit raced on real runs: speedups and slowdowns", icon="🏁")
    st.page_link("pages/6_Interview_QA.py", label="Interview Q&A — 30+ questions, misconceptions, a self-graded quiz",
                 icon="🎓")
    st.caption("Each page keeps its own run per browser tab: two tabs never share a cursor.")


PAGES = [
    st.Page(home, title="Home", icon="🔍", default=True),
    st.Page("pages/1_Beam_search.py", title="Beam search", icon="🌳"),
    st.Page("pages/2_Speculative_decoding.py", title="Speculative decoding", icon="⚡"),
    st.Page("pages/3_Speedup_lab.py", title="Speedup lab", icon="📈"),
    st.Page("pages/4_Lossless_lab.py", title="Lossless lab", icon="⚖️"),
    st.Page("pages/5_Drafter_comparison.py", title="Drafter comparison", icon="🏁"),
    st.Page("pages/6_Interview_QA.py", title="Interview Q&A", icon="🎓"),
]
st.navigation(PAGES).run()
