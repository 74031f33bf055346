"""The Tree speculation page's view of one cycle: the tree, its attention mask, the KV cache, the counts."""
from __future__ import annotations

from specviz.tokens import token_text
from specviz.figures import tree as T
from specviz.views import Event


def tree_event(cycles: list, n: int, tokenizer, prompt_ids: list[int], max_new: int, typical, last: bool,
               predict: bool = False) -> Event:
    """Cycle n (cycles: the run's cycles so far). predict: two phases, the drafted tree without its verdicts first
    (the page's slot "prediction": how many drafted tokens the walk accepts), then the rest."""
    c = cycles[n]
    hide = predict and bool(c.nodes)  # nothing drafted: nothing to predict
    rest = 1 if hide else 0
    titles = [T.heading(c, last and not predict)] + ([T.heading(c, last)] if predict else [])
    if hide:  # the heading would give the answer away
        titles[0] = f"**Cycle {c.cycle + 1}** · {len(c.nodes)} nodes drafted · your prediction first"
    e = Event(titles)
    context = list(prompt_ids) + [t for d in cycles[:n] for t in d.emitted]
    if c.nodes:
        root = token_text(tokenizer, context[-1])
        if hide:
            e.chart(T.tree_figure, c, root, True, until=1, key="tree_fig")
        e.chart(T.tree_figure, c, root, False, at=rest, key="tree_fig")
        if predict:
            e.add("slot", "prediction")
        e.chart(T.mask_figure, c, at=rest, key="mask_fig")
    else:  # the engine drafts no path past Max new tokens: with one token left there is nothing to draft
        e.add("caption", T.no_tree_caption(max_new), rest)
    e.add("caption", T.cache_caption(c), rest)
    e.add("metrics", T.metrics(cycles[: n + 1]), rest)
    e.add("caption", T.legend_caption(c, typical), rest)
    return e
