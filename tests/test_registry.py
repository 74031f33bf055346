"""One drafter registry (specviz.drafters.KINDS): every drafter the app, the CLI, the benchmark and the labs run
is built by make_drafter, and a drafter that cannot run on the loaded models says why in one sentence."""
import ast
import pathlib
from types import SimpleNamespace

import pytest

from specviz.drafters import KINDS, LABELS, TreeDrafter, make_drafter
from specviz.drafters.eagle2 import Eagle2Drafter
from specviz.drafters.medusa import MedusaDrafter
from specviz.errors import SpecVizError

pytestmark = pytest.mark.fast
ROOT = pathlib.Path(__file__).resolve().parent.parent
# training evaluates the draft it is training (not a loaded model): it wraps that module itself
ALLOWED = {"specviz/training/evaluate.py"}


def test_no_drafter_is_built_outside_the_registry():
    names = {n for n in dir(__import__("specviz.drafters", fromlist=["x"]))
             if n.endswith("Drafter")} - {"Drafter", "TreeDrafter"}
    built = []
    for path in [*ROOT.glob("specviz/**/*.py"), *ROOT.glob("pages/*.py"), *ROOT.glob("ui/*.py"), ROOT / "app.py"]:
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("specviz/drafters/") or rel in ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in names:
                built.append(f"{rel}:{node.lineno}")
    assert not built, built


def test_unknown_and_unavailable_drafters_are_one_sentence():
    with pytest.raises(SpecVizError, match="Unknown drafter 'nope'.*feature.*suffix.*medusa"):
        make_drafter("nope")
    bare = SimpleNamespace(feature_draft=None, draft=None, medusa=None, target=None)
    for kind, needs in [("feature", "embedded target"), ("eagle2", "embedded target"), ("medusa", "embedded target"),
                        ("token", "No draft model"), ("staged", "needs a draft model")]:
        with pytest.raises(SpecVizError, match=needs):
            make_drafter(kind, bare)


def test_model_free_drafters_and_their_options():
    assert make_drafter("ngram").name == LABELS["ngram"] == "n-gram lookup"
    suffix = make_drafter("suffix", history=[[5, 6, 7, 8, 9]])
    assert suffix.name == LABELS["suffix"]
    # the history is the suffix drafter's own: a prompt ending like an earlier request continues it
    tokens, q = suffix.propose([1, 5, 6, 7], 2, None, None)
    assert tokens == [8, 9] and q is None
    assert make_drafter("suffix").propose([1, 5, 6, 7], 2, None, None)[0] == []
    with pytest.raises(SpecVizError, match="No draft model"):
        make_drafter("model", SimpleNamespace(draft=None))


def test_tree_drafters_are_marked_and_follow_the_tree_protocol():
    assert {k for k, v in KINDS.items() if v.tree} == {"eagle2", "medusa"}
    for cls in (Eagle2Drafter, MedusaDrafter):
        assert cls.proposes_tree and callable(getattr(cls, "propose_tree"))
    assert "propose_tree" in TreeDrafter.__dict__
