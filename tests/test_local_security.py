"""Another local user cannot hijack the daemon's socket, plant a store, or make brainbox
write through a symlink (reliability trial D3, D8, D15; issue 13 items 10 and 11).

The tests run as root (the trial did too), so "another user" is uid 4242: root may chown
files to it and start processes as it. Where that is not possible, the test is skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brainbox import paths
from brainbox import store as db
from brainbox.cli import client
from brainbox.storage import files

OTHER = 4242
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root to act as another uid")


def brainbox(*args, env=None, timeout=120, stdin=None):
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *args],
                          capture_output=True, text=True, env=env, timeout=timeout, input=stdin)


def one_line_error(r, *words):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr and all(w in lines[0] for w in words), r.stderr


def mode(p) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture
def long_home(tmp_path, monkeypatch):
    """A home whose socket path is too long for sun_path, and a private stand-in for /tmp
    (so that the shared machine's /tmp/brainbox-<uid> is never touched)."""
    home = tmp_path / ("x" * 60) / ("y" * 40) / "bb"
    home.mkdir(parents=True, mode=0o700)
    base = tmp_path / "tmp"
    base.mkdir()
    base.chmod(0o1777)
    monkeypatch.setenv("BRAINBOX_HOME", str(home))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(paths, "TMP", str(base))
    return home, base / f"brainbox-{os.geteuid()}"


SERVE = ("import sys\nfrom brainbox import paths\nfrom brainbox.cli import daemon\n"
         "paths.TMP = sys.argv[1]\n"
         "sys.exit(daemon.serve(idle=float(sys.argv[2]), warm=False))\n")


def serve_process(base: Path, idle: float = 1.0, **kw):
    return subprocess.run([sys.executable, "-c", SERVE, str(base), str(idle)],
                          capture_output=True, text=True, timeout=120, **kw)


# ------------------------------------------------------------------- socket folder (D3)


def test_the_fallback_socket_folder_is_created_private(long_home):
    home, folder = long_home
    path = paths.socket_path(home)
    assert Path(path).parent == folder and len(path.encode()) <= 100
    r = serve_process(folder.parent)
    assert r.returncode == 0, r.stderr
    assert folder.is_dir() and not folder.is_symlink() and mode(folder) == 0o700


@pytest.mark.parametrize("plant", ["world-writable", "symlink", "other-owner"])
def test_a_planted_socket_folder_is_refused(long_home, tmp_path, plant):
    home, folder = long_home
    if plant == "world-writable":
        folder.mkdir()
        folder.chmod(0o777)
        word = "0777"
    elif plant == "symlink":
        target = tmp_path / "elsewhere"
        target.mkdir(mode=0o700)
        folder.symlink_to(target)
        word = "symlink"
    else:
        if not ROOT:
            pytest.skip("needs root to chown")
        folder.mkdir(mode=0o700)
        os.chown(folder, OTHER, OTHER)
        word = f"uid {OTHER}"
    r = serve_process(folder.parent, idle=30)
    assert r.returncode != 0 and word in r.stderr and "in-process" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    sock = Path(paths.socket_path(home))
    assert not sock.exists() and not sock.is_symlink()
    assert client.spawn(home, force=True) is False  # nor does a hook start one there
    assert "refus" in (home / client.LOG_NAME).read_text()


LISTENER = r"""
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(4)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    try:
        c.recv(65536)
        c.sendall(b'{"ok": true, "result": {"output": "INJECTED", "pid": 1}}\n')
    except OSError:
        pass
    c.close()
"""


@needs_root
def test_the_client_refuses_a_listener_of_another_uid(long_home, tmp_path):
    """The attacker's listener sits at the right path in a correct 0700 folder of ours and
    the socket file is chowned to us: only the peer's credentials give it away."""
    home, folder = long_home
    assert files.strict_dir(folder) is None
    import shutil
    import tempfile

    drop = Path(tempfile.mkdtemp(prefix="bb-drop-"))  # the attacker's own folder
    drop.chmod(0o777)
    planted = drop / "s.sock"
    python = next((x for x in ("/usr/bin/python3", "/usr/local/bin/python3")
                   if os.access(x, os.X_OK)), None)
    if python is None:
        pytest.skip("no system python another uid may run")
    p = subprocess.Popen([python, "-I", "-c", LISTENER, str(planted)], user=OTHER,
                         stdout=subprocess.PIPE, text=True, cwd="/")
    try:
        assert p.stdout.readline().strip() == "ready"
        path = paths.socket_path(home)
        os.rename(planted, path)
        os.chown(path, 0, 0)
        assert client.request({"op": "ping"}, 5.0, home) is None
        assert client.status(home)["running"] is False
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with pytest.raises(PermissionError, match=f"uid {OTHER}"):
            client.trusted_connect(s, path)
        s.close()
    finally:
        p.kill()
        p.wait()
        shutil.rmtree(drop, ignore_errors=True)


@needs_root
def test_the_client_refuses_a_socket_file_of_another_uid(long_home):
    home, folder = long_home
    assert files.strict_dir(folder) is None
    path = paths.socket_path(home)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(1)
    os.chown(path, OTHER, OTHER)
    try:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with pytest.raises(PermissionError, match=f"uid {OTHER}"):
            client.trusted_connect(c, path)
        c.close()
    finally:
        s.close()


def test_xdg_runtime_dir_is_preferred_when_private(long_home, tmp_path, monkeypatch):
    home, folder = long_home
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    assert Path(paths.socket_path(home)).parent == run
    run.chmod(0o755)  # not private: not used
    assert Path(paths.socket_path(home)).parent == folder


# --------------------------------------------------------- an existing home or DB (D8)


def tool_payload(tmp_path):
    return json.dumps({"session_id": "s1", "cwd": str(tmp_path), "tool_name": "Read",
                       "hook_event_name": "PostToolUse",
                       "tool_input": {"file_path": str(tmp_path / "a.py")}})


@needs_root
def test_a_planted_database_of_another_uid_is_refused(brainbox_home, tmp_path):
    brainbox_home.mkdir(mode=0o700)
    path = brainbox_home / "brainbox.db"
    db.connect(path).close()
    os.chown(path, OTHER, OTHER)
    path.chmod(0o666)
    before = digest(path)
    with pytest.raises(db.StoreError, match=f"uid {OTHER}"):
        db.connect(path)
    r = brainbox("record", "--session", "s", "--tool", "Read", "--project", "/p")
    one_line_error(r, str(path), f"uid {OTHER}")
    assert digest(path) == before and mode(path) == 0o666


def test_an_own_database_readable_by_others_is_tightened(brainbox_home):
    brainbox_home.mkdir(mode=0o700)
    path = brainbox_home / "brainbox.db"
    db.connect(path).close()
    path.chmod(0o644)
    db.connect(path).close()
    assert mode(path) == 0o600


def test_a_shared_writable_home_is_refused(brainbox_home):
    brainbox_home.mkdir()
    brainbox_home.chmod(0o777)
    with pytest.raises(db.StoreError, match="writable by others"):
        db.connect()
    assert not (brainbox_home / "brainbox.db").exists()
    r = brainbox("record", "--session", "s", "--tool", "Read", "--project", "/p")
    one_line_error(r, "writable by others")


@needs_root
def test_a_home_of_another_uid_is_refused(brainbox_home):
    brainbox_home.mkdir(mode=0o700)
    os.chown(brainbox_home, OTHER, OTHER)
    with pytest.raises(db.StoreError, match=f"uid {OTHER}"):
        db.connect()


def test_an_own_home_open_to_others_is_tightened(brainbox_home):
    brainbox_home.mkdir()
    brainbox_home.chmod(0o755)
    db.connect().close()
    assert mode(brainbox_home) == 0o700


def test_a_dangling_symlink_home_is_one_line_not_a_traceback(brainbox_home, tmp_path):
    brainbox_home.symlink_to(tmp_path / "gone")
    for args in (["record", "--session", "s", "--tool", "Read", "--project", "/p"],
                 ["stats"]):
        r = brainbox(*args)
        one_line_error(r, "dangling symlink")
    assert not (tmp_path / "gone").exists()


def test_a_home_symlinked_to_an_own_folder_is_used(brainbox_home, tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    brainbox_home.symlink_to(real)
    db.connect().close()
    assert (real / "brainbox.db").exists()


# ---------------------------------------------------- files the daemon writes (D8, D15)


def test_files_brainbox_opens_are_0600_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        fd = files.open_private(tmp_path / "log")
        os.close(fd)
        files.write_private(tmp_path / "info.json", b"{}")
    finally:
        os.umask(old)
    assert mode(tmp_path / "log") == 0o600 and mode(tmp_path / "info.json") == 0o600


def test_open_private_never_writes_through_a_symlink_or_a_hard_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (tmp_path / "log").symlink_to(victim)
    with pytest.raises(db.StoreError, match="symlink"):
        files.open_private(tmp_path / "log")
    os.link(victim, tmp_path / "hard")
    with pytest.raises(db.StoreError, match="hard links"):
        files.open_private(tmp_path / "hard")
    files.write_private(tmp_path / "log", b"new")  # replaces the link, not its target
    assert victim.read_text() == "keep\n" and not (tmp_path / "log").is_symlink()


def test_the_daemon_files_are_private_and_never_followed(home_with_umask0, tmp_path):
    home = home_with_umask0
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    (home / client.LOG_NAME).symlink_to(victim)
    (home / client.SPAWN_NAME).symlink_to(tmp_path / "victim2")
    assert client.spawn(home, force=True) is False  # refuses to log through the link
    assert victim.read_text() == "keep\n" and not (tmp_path / "victim2").exists()
    (home / client.LOG_NAME).unlink()
    (home / client.SPAWN_NAME).unlink()
    r = serve_process(tmp_path, idle=1.0)
    assert r.returncode == 0, r.stderr
    for name in (client.LOCK_NAME,):
        assert mode(home / name) == 0o600
    assert client.spawn(home, force=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (home / client.INFO_NAME).exists():
        time.sleep(0.1)
    try:
        for name in (client.LOG_NAME, client.SPAWN_NAME, client.INFO_NAME, client.LOCK_NAME):
            assert mode(home / name) == 0o600, name
    finally:
        client.stop(home, wait=30)


@pytest.fixture
def home_with_umask0(brainbox_home):
    brainbox_home.mkdir(mode=0o700)
    old = os.umask(0)
    yield brainbox_home
    os.umask(old)
