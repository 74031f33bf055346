"""A throw-away PostgreSQL cluster for the tests (never a mock): Debian's postgresql 15 (`make test` installs it where
absent, like Chromium), initdb in a temporary folder, the server on a free port of 127.0.0.1 with its socket in that
folder, stopped and removed after. initdb refuses root: as root, the cluster's programs run as the `postgres` user."""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager


def bin_dir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(args, **kw):
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run(as_postgres + args, check=True, capture_output=True, text=True, **kw)


@contextmanager
def cluster():
    """Yields a URL (postgresql://postgres@127.0.0.1:PORT/postgres) of a fresh, running cluster."""
    bins = bin_dir()
    assert bins, "PostgreSQL's server programs are needed: apt-get install postgresql (make postgres)"
    folder = tempfile.mkdtemp(prefix="specviz-pg-")
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data, port = os.path.join(folder, "data"), free_port()
    try:
        _run([f"{bins}/initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"])
        _run([f"{bins}/pg_ctl", "-D", data, "-l", os.path.join(folder, "log"), "-w", "start", "-o",
              f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"])
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run((["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []) +
                       [f"{bins}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def fresh_database(url: str, name: str) -> str:
    """A new empty database on the cluster at `url`; its URL."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f'DROP DATABASE IF EXISTS "{name}"')
        db.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + "/" + name


def restart(url: str) -> None:
    """Restart the cluster serving `url` (one made by cluster()): its connections break, its data stays."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        data = db.execute("SHOW data_directory").fetchone()[0]
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    # -l: a server started without a log file writes to pg_ctl's output, a pipe here that would never close
    subprocess.run(as_postgres + [f"{bin_dir()}/pg_ctl", "-D", data, "-l", os.path.join(os.path.dirname(data), "log"),
                                  "-m", "fast", "-w", "restart"], check=True, capture_output=True)
