import os
import pathlib
import shutil
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may download at test time
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(scope="session")
def embedded():
    """The embedded SmolLM2-135M-Instruct target and tokenizer, loaded once per test session."""
    from specviz.models import load_target

    return load_target()


@pytest.fixture(scope="session")
def models():
    from specviz.models import load_models

    return load_models()


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
import socket  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import urllib.request  # noqa: E402

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



def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(log_name="server.log"):
    """A real Streamlit server on a free loopback port, started from the repository root like `make app`
    (so .streamlit/config.toml applies); yields its URL."""
    port = free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    log_path = ROOT / "test-artifacts" / log_name
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "w")  # a file, not a pipe: an unread pipe would block the server when full
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--server.fileWatcherType", "none"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("streamlit did not start: " + log_path.read_text()[-2000:])
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def server():
    """One real server shared by the browser tests."""
    with streamlit_server() as url:
        yield url
