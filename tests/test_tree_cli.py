"""The tree options of the CLI and the benchmark, without a model: bad tree sizes exit with code 2, and the
benchmark's EAGLE-2 row is a greedy speculative row (so its output is checked token-identical to greedy)."""
from types import SimpleNamespace

import pytest

from specviz.__main__ import main
from specviz.bench import configs, mismatches

pytestmark = pytest.mark.fast


@pytest.mark.parametrize("flag,value", [("--tree-budget", "0"), ("--tree-depth", "0"), ("--tree-width", "17")])
def test_bad_tree_sizes_exit_with_code_2(capsys, flag, value):
    assert main(["decode", "--method", "speculative", "--tree", "eagle2", flag, value, "--prompt", "hi"]) == 2
    assert "--tree-budget" in capsys.readouterr().err


def test_the_eagle2_row_is_checked_for_token_identity():
    models = SimpleNamespace(draft=None, feature_draft=object())
    cfgs = configs(models, [4], dynamic_k=False, hf_peers=False, sampling=False, unpacked=False)
    tree = [c for c in cfgs if c.tree == "eagle2"]
    assert len(tree) == 1 and tree[0].greedy_speculative and tree[0].drafter == "feature"
    prompts = [{"name": "a"}]
    outputs = {(c.name, "a"): ([1, 2, 3], None) for c in cfgs}
    assert mismatches(cfgs, outputs, prompts) == []
    outputs[(tree[0].name, "a")] = ([1, 2, 4], None)
    assert mismatches(cfgs, outputs, prompts) == [(tree[0].name, "a")]
    assert not any(c.tree for c in configs(SimpleNamespace(draft=None, feature_draft=None), [4], False, False, False, False))
