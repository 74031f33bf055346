"""`python -m specviz where` (issue 38 at the command line): bad input is one clear line before any model loads;
on the embedded pair every part reads the same recorded run the page does, and the parts agree with each other."""
import json

import pytest

from specviz.__main__ import main


@pytest.mark.fast
@pytest.mark.parametrize("args, needle", [
    (["--show", "bogus"], "--show"),
    (["--show", ""], "--show"),
    (["--k", "0"], "--k"),
    (["--max-new-tokens", "0"], "--max-new-tokens"),
    (["--threshold", "1.5"], "--threshold"),
    (["--positions", "0"], "--positions"),
    (["--temperature", "0"], "--temperature"),
    (["--tree-budget", "500"], "--tree-budget"),
])
def test_where_bad_input_is_one_clear_line(capsys, args, needle):
    code = main(["where", "--prompt", "hi", *args])
    _, err = capsys.readouterr()
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and "Traceback" not in err and len(errors) == 1 and needle in errors[0]


@pytest.mark.fast
def test_where_empty_prompt_is_one_clear_line(capsys):
    code = main(["where", "--prompt", "  "])
    _, err = capsys.readouterr()
    assert code == 2 and "empty" in err.lower() and "Traceback" not in err


def test_where_parts_agree_on_one_run(capsys):
    code = main(["where", "--prompt", "Explain beam search", "--chat", "--max-new-tokens", "16", "--json",
                 "--show", "metrics,timeline,policies,rules"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    run = out["run"]
    assert run["tokens"] == 16 and run["drafter"] == "feature"
    metrics = {(m["system"], m["metric"].split(";")[0]): m["value"] for m in out["metrics"]}
    assert metrics[("SGLang", "accept len")] == pytest.approx(run["tokens"] / run["verify_passes"])
    lanes = out["timeline"]["lanes"]
    assert len(lanes) == 3 and all(ln["identical"] and ln["tokens"] == 16 for ln in lanes)
    chain = lanes[1]
    assert chain["cycles"] == run["verify_passes"]  # the timeline's chain is the recorded run, cycle for cycle
    # the policies replay the token draft on the run's text: fixed K reads the same K, four policies, all on 16 tokens
    rows = out["policies"]["rows"]
    assert len(rows) == 4 and rows[0]["policy"] == "fixed K = 4"
    assert all(r["tokens_per_pass"] * r["passes"] == pytest.approx(16) for r in rows)
    mean = out["rules"]["mean"]
    assert mean["exact match, sampled draft"] <= mean["rejection sampling"] + 1e-9
    assert mean["rejection sampling"] == pytest.approx(1 - mean["tv"], abs=1e-9)
    capsys.readouterr()
    assert main(["where", "--prompt", "Explain beam search", "--chat", "--max-new-tokens", "8", "--show",
                 "metrics"]) == 0
    text = capsys.readouterr().out
    assert "8 tokens in" in text and "SGLang" in text and "timeline" not in text
