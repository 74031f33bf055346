import os
import pathlib
import shutil
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may download at test time
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# learners' progress: a fresh database per test session, never the user's own (~/.cache/specviz/progress.sqlite)
import tempfile  # noqa: E402
os.environ.setdefault("SPECVIZ_DB", os.path.join(tempfile.mkdtemp(prefix="specviz-test-"), "progress.sqlite"))
ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(scope="session")
def embedded():
    """The embedded SmolLM2-135M-Instruct target and tokenizer, loaded once per test session."""
    from specviz.loading import load_target

    return load_target()


@pytest.fixture(scope="session")
def models():
    from specviz.loading import load_models

    return load_models()


@pytest.fixture(scope="session")
def greedy(embedded):
    """THE greedy reference, computed once per session per prompt: transformers' generate() on the embedded target
    (an implementation independent of ours). greedy(ids, n): the first n tokens; a shorter n is a prefix of a
    longer run, so every module asking for the same prompt shares one generate()."""
    model, _ = embedded
    done: dict[tuple, tuple[list[int], bool]] = {}

    def reference(ids, n: int) -> list[int]:
        have = done.get(tuple(ids))
        if have is None or (len(have[0]) < n and not have[1]):
            out = model.generate(torch.tensor([list(ids)]), max_new_tokens=n, do_sample=False)[0, len(ids):].tolist()
            have = done[tuple(ids)] = (out, len(out) < n)  # shorter than asked: it ended (EOS)
        return have[0][:n]
    return reference


def chat(tok, text):
    from specviz.prompting import prompt_ids

    return prompt_ids(tok, text)


@pytest.fixture(scope="session")
def tiny_llama(embedded):
    """A tiny randomly initialised Llama on the embedded tokenizer's vocabulary: fast cases."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=49152, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=2)
    return LlamaForCausalLM(cfg).eval(), embedded[1]


# ---------------------------------------------------------------- a real server for browser tests
import contextlib  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert pathlib.Path(CHROMIUM).exists(), "Debian's chromium is needed: apt-get install chromium (make browser)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def settle(page, timeout=180_000):
    """Wait until Streamlit has finished the rerun the last action started."""
    page.wait_for_timeout(150)
    page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]", timeout=timeout)



# Click to redraw, timed inside the page (Playwright's own click adds its actionability checks, tens of
# ms a person's click does not have): the button is clicked from script, and the clock stops when the
# browser's main thread is idle after the rerun ended (the charts drawn), or after 10 s.
_TIMED_CLICK = ("""label => new Promise((resolve, reject) => {
  const app = document.querySelector('[data-testid=stApp]');
  const main = document.querySelector('[data-testid=stMain]') || app;
  const button = [...document.querySelectorAll('button')].find(b => b.innerText.includes(label) && !b.disabled);
  if (!button) { reject(new Error('no enabled button ' + label)); return; }
  let ran = false;
  const t0 = performance.now();
  const give_up = setTimeout(() => { stop(); reject(new Error('no rerun ended within 120 s of ' + label)); }, 120000);
  const check = () => {
    if (ran && app.getAttribute('data-test-script-state') === 'notRunning') {
      stop();
      requestAnimationFrame(() => requestIdleCallback(() => resolve(performance.now() - t0), {timeout: 10000}));
    }
  };
  // a quick rerun's running -> notRunning can reach us in ONE batch of records: read each record's old value too
  const state = new MutationObserver(records => {
    if (app.getAttribute('data-test-script-state') === 'running' """
"""|| records.some(r => r.oldValue === 'running')) ran = true;
    check();
  });
  // ... or in one React render, when the attribute never changes at all: the page's content changing (outside
  // the clicked button) then says the rerun happened
  const content = new MutationObserver(records => {
    if (records.some(r => r.type !== 'attributes' && !button.contains(r.target))) ran = true;
    check();
  });
  const stop = () => { state.disconnect(); content.disconnect(); clearTimeout(give_up); };
  state.observe(app, {attributes: true, attributeFilter: ['data-test-script-state'], attributeOldValue: true});
  content.observe(main, {childList: true, characterData: true, subtree: true});
  button.click();
})""")


def timed_click(page, label: str) -> float:
    """Milliseconds from clicking the (first enabled) button whose text includes `label` to the redraw."""
    return page.evaluate(_TIMED_CLICK, label)


@contextlib.contextmanager
def streamlit_server(log_name="server.log", env=None):
    """A real Streamlit server on a free loopback port (ui/serve.py); yields its URL. env: for this server only."""
    from ui.serve import running_server
    try:
        with running_server(ROOT / "test-artifacts" / log_name, env=env) as url:
            yield url
    except RuntimeError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="session")
def server():
    """One real server shared by the browser tests."""
    with streamlit_server() as url:
        yield url


# ---------------------------------------------------------------- a real PostgreSQL for the progress store (issue 49)
@pytest.fixture(scope="session")
def postgres_cluster():
    """A throw-away PostgreSQL cluster for the whole test session (tests/postgres.py)."""
    from postgres import cluster

    with cluster() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request, tmp_path):
    """Where a test's progress store lives, once per backend: a SQLite file, and a fresh database on the session's
    PostgreSQL cluster."""
    if request.param == "sqlite":
        return tmp_path / "p.sqlite"
    from postgres import fresh_database

    return fresh_database(request.getfixturevalue("postgres_cluster"), f"t_{abs(hash(request.node.nodeid)):x}")


# ---------------------------------------------------------------- markers set by what a test uses, not by hand
MODEL_FIXTURES = {"models", "embedded", "greedy", "tiny_llama"}
BROWSER_FIXTURES = {"server", "browser"}
SLOW_FILES = {"test_bench.py", "test_block_bench.py", "test_memory.py", "test_load.py", "test_wheel.py",
              "test_block_chisq.py", "test_lossless.py"}


def pytest_collection_modifyitems(config, items):
    """model: a test that loads the embedded model; browser: one with a real server or Chromium; slow: the files
    that time, load or sample at length. `pytest -m "not slow and not browser"` is the everyday loop."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & MODEL_FIXTURES:
            item.add_marker(pytest.mark.model)
        if used & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
