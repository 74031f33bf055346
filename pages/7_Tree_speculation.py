"""Tree speculation, one cycle at a time: a tree of drafted candidates, ONE target pass over every node with
a tree attention mask, the walk from the root, and the KV cache keeping only the accepted path."""
import streamlit as st

from ui.common import chart, controls, encode, get_models, get_replay, play_interval, play_speed, play_tick, sidebar, slider

from specviz.drafters import make_drafter
from specviz.figures.tree import mask_figure, tree_figure
from specviz.sampling import SamplingConfig
from specviz.step import token_text
from specviz.tree import tree_speculative_steps

settings = sidebar()
st.title("Tree speculation")
st.caption("Instead of one chain of guesses, the draft proposes a TREE: several candidates where it is unsure. "
           "The target scores every node in ONE forward pass: each node attends to the context and its own "
           "ancestors only, and siblings share a position id. The walk keeps one root-to-leaf path.")
models = get_models(settings)
if models.feature_draft is None:
    st.warning("The EAGLE-2 tree needs the feature draft, which exists only for the embedded target.")
    st.stop()
c1, c2, c3, c4 = st.columns(4)
choice = c1.radio("Drafter", ["EAGLE-2 tree", "chain (feature draft)"], key="tr_drafter", horizontal=True)
budget = slider(c2, "Verify budget N (nodes)", "tr_budget", 2, 32, 12, "budget")
depth = slider(c3, "Depth", "tr_depth", 1, 8, 4, "depth")
mode = c4.radio("Verification", ["greedy", "sampling (T = 1)"], key="tr_mode", horizontal=True)
max_new = 32
ids = encode(models, settings, max_new)
cfg = SamplingConfig(1.0 if mode.startswith("sampling") else 0.0)
kind = "eagle2" if choice == "EAGLE-2 tree" else "feature"
params = (tuple(ids), kind, budget, depth, cfg, settings.target, settings.draft)


def factory():
    return tree_speculative_steps(models.target, make_drafter(kind, models), models.tokenizer, ids, max_new,
                                  budget=budget, depth=depth, cfg=cfg)


replay = get_replay("tree", params, factory)


@st.fragment(run_every=play_interval("tree"))
def view():
    play_tick("tree", replay)
    controls("tree", replay)
    cycle = replay.current()
    if cycle is None:
        st.info("Press **Step** to draft the first tree and verify it.")
        return
    done = replay.shown()
    context = list(ids) + [t for c in done[:-1] for t in c.emitted]
    st.markdown(f"**Cycle {cycle.cycle + 1}** · {len(cycle.nodes)} nodes · accepted path of {cycle.accepted} "
                f"+ {cycle.new_origin} token “{cycle.new_text}”" + (" · done" if replay.at_end else ""))
    chart(tree_figure(cycle, token_text(models.tokenizer, context[-1])), key="tree_fig")
    chart(mask_figure(cycle), key="mask_fig")
    st.caption(f"Target KV cache: {cycle.target_cache.before} entries after the verify pass (context + every node) "
               f"→ {cycle.target_cache.after} after the gather (context + the accepted path).")
    tokens = sum(len(c.emitted) for c in done)
    passes = sum(1 + c.prefill for c in done)
    m = st.columns(3)
    m[0].metric("Tokens", tokens)
    m[1].metric("Target passes", passes)
    m[2].metric("Tokens per target pass", f"{tokens / passes:.2f}")
    st.caption("Greedy: the walk takes the child equal to the target's argmax, so the output is plain greedy's. "
               "Sampling: children are tried in turn, each against the residual the earlier rejections left "
               "(recursive rejection sampling): exactly the target's distribution. Taking “the longest accepted "
               "path” instead would be biased. On this 2-core CPU every extra verified node costs time, so a "
               "tree pays less here than on a GPU, where verifying 64 tokens costs about as much as 1.")


view()
play_speed("tree")
