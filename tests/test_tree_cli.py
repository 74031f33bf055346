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
    assert not any(c.tree for c in configs(SimpleNamespace(draft=None, feature_draft=None),
                                           [4], False, False, False, False))


MEDUSA = ["decode", "--method", "speculative", "--tree", "medusa", "--prompt", "hi"]


@pytest.mark.parametrize("extra, needle", [
    # "=": argparse reads a separate argument starting with "-" as an option
    (["--medusa-choices=" + "-" * 5000 + "1"], "at most"),  # RecursionError in ast.literal_eval before
    (["--medusa-choices=" + "-" * 100_000 + "1"], "at most"),  # MemoryError before
    (["--medusa-choices=" + "-" * 3000 + "1"], "no sign"),
    (["--medusa-choices", "[(0,), (1, 0)]"], "add the parent"),
    (["--medusa-choices", "[(0,), ()]"], "empty path"),
    (["--medusa-choices", "__import__('os')"], "unexpected"),
    (["--medusa-choices", ""], "non-empty"),
    (["--typical", "0.09"], "EPS,DELTA"),
    (["--typical", "0.09,0.3,1"], "EPS,DELTA"),
    (["--typical", "a,b"], "EPS,DELTA"),
    (["--typical", "0,0.3"], "(0, 1]"),
    (["--typical", "0.09,nan"], "(0, 1]"),
    (["--typical", "0.09,inf"], "(0, 1]"),
    (["--typical=-0.1,0.3"], "(0, 1]"),
    (["--typical", "9" * 100_000 + ",1"], "EPS,DELTA"),
])
def test_bad_medusa_choices_and_typical_exit_2_with_one_line(capsys, extra, needle):
    assert main(MEDUSA + extra) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err
    assert needle in lines[0] and len(lines[0]) < 300


@pytest.mark.parametrize("tree", ["none", "eagle2", "chain"])
def test_medusa_options_need_the_medusa_tree(capsys, tree):
    for extra in (["--typical", "0.09,0.3"], ["--medusa-choices", "[(0,)]"]):
        args = ["decode", "--method", "speculative", "--tree", tree, "--prompt", "hi", *extra]
        assert main(args) == 2 and "--tree medusa" in capsys.readouterr().err
