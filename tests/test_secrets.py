"""Acceptance: no planted secret reaches the disk, by any channel (issue 13 item 9).

The reliability trial planted 32 realistic secrets into every channel a user's agent
feeds brainbox and searched the raw bytes on disk afterwards (its "Secrets by channel"
table). This does the same with those 32 and the forms added since: each one goes into a
Bash command, a Grep pattern, a WebFetch URL, a PostToolUseFailure error, the stderr of a
failed and the stdout of an interrupted Bash call, a prompt and a file path, through real `brainbox hook claude ...` processes (daemon off; once with the
database locked so the events go to the spool) and through `brainbox import claude` of a
written transcript. Then neither the secret nor its middle 12 characters may appear in
any byte of any file under BRAINBOX_HOME (the database, -wal, -shm, spool, logs,
sessions), after a `rebuild` has written `resources` too.

What no rule can catch is planted with its context: a bare password (`Hunter2`) has no
shape, so in a Grep pattern, a URL or a file name it goes in the form that says what it
is (`sshpass -p '...'`, `?password=...`); a secret with a shape (`ghp_...`) goes in bare.
"""

from __future__ import annotations

import base64
import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

_rng = random.Random(13)
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_B64 = _ALNUM + "+/"


def rnd(n: int, alphabet: str = _ALNUM) -> str:
    """A fake credential body: random, so its middle is found nowhere else."""
    return "".join(_rng.choice(alphabet) for _ in range(n))


def pw() -> str:
    return "Pw" + rnd(12)


@dataclass(frozen=True)
class Secret:
    name: str
    value: str  # what must never be on disk
    form: str  # how it appears in a command, a prompt or an error
    bare: bool = False  # the value alone has a recognisable shape


def _pem(kind: str) -> tuple[str, str]:
    body = "\n".join(rnd(64, _B64) for _ in range(3))
    return body.splitlines()[1], f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"


_RSA_LINE, _RSA = _pem("RSA PRIVATE KEY")
_SSH_LINE, _SSH = _pem("OPENSSH PRIVATE KEY")
_GCP_LINE = rnd(64, _B64)
_GCP = json.dumps({
    "type": "service_account", "project_id": "acme-prod",
    "private_key": f"-----BEGIN PRIVATE KEY-----\nMIIEvQ{rnd(58, _B64)}\n{_GCP_LINE}\n"
                   "-----END PRIVATE KEY-----\n",
    "client_email": "ci@acme-prod.iam.gserviceaccount.com",
})
_JWT = (base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=") + "."
        + base64.urlsafe_b64encode(b'{"sub":"1234567890","name":"ci"}').decode().rstrip("=")
        + "." + rnd(43, _ALNUM + "-_"))
_BASIC = base64.b64encode(f"alice:{pw()}".encode()).decode()
_SLACK_HOOK = f"T{rnd(8).upper()}/B{rnd(8).upper()}/{rnd(24)}"
_PYPI = "pypi-AgEIcHlwaS5vcmc" + rnd(120, _ALNUM + "-_")
_PW = {k: pw() for k in ("mysql", "mysql2", "sshpass", "docker", "docker2", "twine", "curl",
                         "curl2", "url", "flag", "env", "xsecret", "q1", "q2", "q3", "q4",
                         "mongo", "redis")}
_AWS_SECRET = rnd(40, _B64)
_AWS_SECRET2 = rnd(40, _B64)
_AZURE = rnd(86, _B64) + "=="
_SB = rnd(43, _B64) + "="
_LETTERS = {k: "".join(_rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(24))
            for k in ("api_key", "token", "access_token", "password")}

SECRETS = [
    # --- the 24 forms the trial found redacted ---
    Secret("aws-key-id", v := "AKIA" + rnd(16).upper(), f"aws configure set aws_access_key_id {v}", True),
    Secret("aws-secret-export", _AWS_SECRET, f"export AWS_SECRET_ACCESS_KEY={_AWS_SECRET}"),
    Secret("github-classic", v := "ghp_" + rnd(36), f"git clone https://{v}@github.com/acme/app.git", True),
    Secret("github-fine", v := "github_pat_11A" + rnd(8).upper() + "0_" + rnd(59),
           f"gh auth login --with-token <<< {v}", True),
    Secret("gitlab", v := "glpat-" + rnd(20, _ALNUM + "-_"), f"export GL={v}", True),
    Secret("slack-bot", v := f"xoxb-{rnd(12, '0123456789')}-{rnd(13, '0123456789')}-{rnd(24)}",
           f"curl -d 'token={v}' https://slack.com/api/chat.postMessage", True),
    Secret("slack-webhook", _SLACK_HOOK,
           f"curl -X POST -d '{{\"text\":\"hi\"}}' https://hooks.slack.com/services/{_SLACK_HOOK}"),
    Secret("stripe-live", v := "sk_live_" + rnd(24), f"stripe charges list --api-key {v}", True),
    Secret("openai-proj", v := "sk-proj-" + rnd(48), f"echo {v} | llm keys set openai", True),
    Secret("anthropic", v := "sk-ant-api03-" + rnd(80, _ALNUM + "-_") + "AA",
           f"export ANTHROPIC_API_KEY={v}", True),
    Secret("google", v := "AIza" + rnd(35, _ALNUM + "-_"),
           f'curl "https://maps.googleapis.com/maps/api/geocode/json?key={v}"', True),
    Secret("gcp-service-account", _GCP_LINE, f"echo '{_GCP}' > sa.json"),
    Secret("jwt", _JWT, f"curl -H 'Authorization: Bearer {_JWT}' https://api.acme.dev", True),
    Secret("npm", v := "npm_" + rnd(36), f"npm config set //registry.npmjs.org/:_authToken={v}", True),
    Secret("url-password", _PW["url"], f"psql postgres://app:{_PW['url']}@db.internal:5432/app"),
    Secret("bearer", v := rnd(40, _ALNUM + "._-"),
           f'curl -H "Authorization: Bearer {v}" https://api.acme.dev/v1/me'),
    Secret("basic", _BASIC, f"curl -H 'Authorization: Basic {_BASIC}' https://api.acme.dev"),
    Secret("export-x-secret", _PW["xsecret"], f"export CLIENT_SECRET={_PW['xsecret']}"),
    Secret("dotenv", _PW["env"], f"printf 'DB_HOST=db\\nDB_PASSWORD={_PW['env']}\\n' > .env"),
    Secret("pem-rsa", _RSA_LINE, f"cat > id_rsa <<'EOF'\n{_RSA}\nEOF"),
    Secret("openssh", _SSH_LINE, f"cat > id_ed25519 <<'EOF'\n{_SSH}\nEOF"),
    Secret("huggingface", v := "hf_" + rnd(34), f"HF_TOKEN={v} python train.py", True),
    Secret("password-flag", _PW["flag"], f"mytool --password={_PW['flag']} --user bob"),
    # --- the 8 forms the trial found stored verbatim ---
    Secret("mysql-p", _PW["mysql"], f"mysql -u root -p{_PW['mysql']} appdb"),
    Secret("sshpass", _PW["sshpass"], f"sshpass -p '{_PW['sshpass']}' ssh deploy@host"),
    Secret("docker-login-p", _PW["docker"], f"docker login -u ci -p {_PW['docker']} registry.acme.dev"),
    Secret("twine-pypi", _PYPI, f"twine upload -u __token__ -p {_PYPI} dist/*", True),
    Secret("curl-u", _PW["curl"], f"curl -u alice:{_PW['curl']} https://api.acme.dev"),
    Secret("aws-configure-secret", _AWS_SECRET2,
           f"aws configure set aws_secret_access_key {_AWS_SECRET2}"),
    Secret("stripe-whsec", v := "whsec_" + rnd(32), f"stripe listen --forward-to localhost:3000 # {v}", True),
    Secret("azure-account-key", _AZURE,
           "az storage blob list --connection-string 'DefaultEndpointsProtocol=https;"
           f"AccountName=acme;AccountKey={_AZURE};EndpointSuffix=core.windows.net'"),
    # --- added: the rest of the brief's list and relatives ---
    Secret("mysql-password", _PW["mysql2"], f"mysql --password {_PW['mysql2']} -h db"),
    Secret("docker-password", _PW["docker2"], f"docker login --password {_PW['docker2']} ghcr.io"),
    Secret("pypi-bare", v := "pypi-AgENdGVzdC5weXBpLm9yZw" + rnd(100, _ALNUM + "-_"), f"echo {v}", True),
    Secret("curl-user", _PW["curl2"], f"curl -s --user 'bob:{_PW['curl2']}' https://api.acme.dev"),
    Secret("aws-session-token", v := "IQoJb3JpZ2luX2Vj" + rnd(200, _B64),
           f"aws configure set aws_session_token {v}"),
    Secret("sendgrid", v := f"SG.{rnd(22, _ALNUM + '-_')}.{rnd(43, _ALNUM + '-_')}", f"echo {v}", True),
    Secret("azure-sas", _SB,
           "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=root;"
           f"SharedAccessKey={_SB}"),
    Secret("query-api_key", _LETTERS["api_key"],
           f"curl 'https://api.acme.dev/v1/items?api_key={_LETTERS['api_key']}&page=2'"),
    Secret("query-token", _LETTERS["token"], f"wget https://acme.dev/feed?token={_LETTERS['token']}"),
    Secret("query-access_token", _LETTERS["access_token"],
           f"open 'https://acme.dev/cb?state=x&access_token={_LETTERS['access_token']}'"),
    Secret("query-password", _LETTERS["password"],
           f"curl 'https://acme.dev/login?user=bob&password={_LETTERS['password']}'"),
    Secret("mongosh", _PW["mongo"], f"mongosh -u admin -p {_PW['mongo']} --host db"),
    Secret("redis-cli", _PW["redis"], f"redis-cli -h cache -a {_PW['redis']} ping"),
]
assert len(SECRETS) >= 40 and len({s.value for s in SECRETS}) == len(SECRETS)


def needles(s: Secret) -> list[bytes]:
    """The value and, for a long one, its distinctive middle 12 characters."""
    out = [s.value.encode()]
    if len(s.value) >= 20:
        mid = len(s.value) // 2
        out.append(s.value[mid - 6: mid + 6].encode())
    return out


def leaks(home: Path) -> list[str]:
    """Every (secret, file) whose bytes hold the secret or its middle, anywhere in home."""
    found = []
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for s in SECRETS:
            for n in needles(s):
                at = data.find(n)
                if at >= 0:
                    around = data[max(0, at - 60): at + len(n) + 20].decode("utf-8", "replace")
                    found.append(f"{s.name} in {path.relative_to(home)}: ...{around}...")
                    break
    return found


# ------------------------------------------------------------------ planting in payloads

def _pack(items: list[str], limit: int, sep: str) -> list[str]:
    """Join items into as few texts of at most `limit` characters as possible (in order);
    every field stays under the hook's bounds, so no secret is cut in half."""
    out, cur = [], ""
    for item in items:
        assert len(item) <= limit, item[:40]
        if cur and len(cur) + len(sep) + len(item) > limit:
            out.append(cur)
            cur = ""
        cur = f"{cur}{sep}{item}" if cur else item
    if cur:
        out.append(cur)
    return out


def _one_line(s: Secret) -> bool:
    return "\n" not in s.form


def url_items() -> list[str]:
    """URL pieces: a shaped secret as a path segment, any other as a credential query value
    (the one place a bare value is recognisable in a URL), the URL password as itself."""
    items = []
    for s in SECRETS:
        if s.name == "url-password":
            continue
        if s.bare and "/" not in s.value:
            items.append(f"/{s.value}")
        elif all(c not in s.value for c in " &#?'\"\n"):
            items.append(f"&token={s.value}")
    return items


def urls() -> list[str]:
    paths = [i for i in url_items() if i.startswith("/")]
    queries = [i for i in url_items() if i.startswith("&")]
    out = ["https://acme.dev/x" + p for p in _pack(paths, 850, "")]
    out += ["https://acme.dev/y?page=1" + q for q in _pack(queries, 850, "")]
    out.append(f"https://app:{_PW['url']}@internal.acme.dev/status")
    out.append(f"https://hooks.slack.com/services/{_SLACK_HOOK}")
    return out


def paths(project: Path) -> list[str]:
    """Secret file paths: a shaped secret as a file name; a form without a slash as one
    (its context is what makes it a secret); the Slack webhook across folders."""
    out = []
    for s in SECRETS:
        if s.bare and "/" not in s.value:
            out.append(f"{project}/keys/{s.value}.txt")
        elif _one_line(s) and "/" not in s.form and len(s.form) < 200:
            out.append(f"{project}/notes/{s.form}.log")
    out.append(f"{project}/hooks.slack.com/services/{_SLACK_HOOK}")
    return out


def payloads(project: Path) -> list[tuple[str, dict]]:
    """(hook event, payload) for every channel, batched into a few dozen hook calls."""
    base = {"session_id": "s-secrets", "cwd": str(project)}
    forms = [s.form for s in SECRETS]
    out: list[tuple[str, dict]] = []
    n = 0

    def tool(event, name, inp, **extra):
        nonlocal n
        n += 1
        out.append((event, {**base, "hook_event_name": event, "tool_name": name,
                            "tool_input": inp, "tool_use_id": f"toolu_{n:03d}", **extra}))

    for cmd in _pack(forms, 3500, "\n"):
        tool("PostToolUse", "Bash", {"command": cmd}, tool_response={"stdout": "", "exit_code": 0})
    for pat in _pack([s.form for s in SECRETS if _one_line(s)], 900, "|"):
        tool("PostToolUse", "Grep", {"pattern": pat, "path": str(project)},
             tool_response={"filenames": []})
    for url in urls():
        tool("PostToolUse", "WebFetch", {"url": url, "prompt": "summarise"},
             tool_response={"result": "ok"})
    for err in _pack(forms, 1500, "\n"):
        tool("PostToolUseFailure", "Bash", {"command": "make deploy"},
             error=f"Exit code 1\n{err}\nerror: authentication failed")
        # a failed call's stderr and an interrupted call's stdout become the error too
        tool("PostToolUse", "Bash", {"command": "make deploy"},
             tool_response={"stdout": "", "stderr": err, "exit_code": 1})
        tool("PostToolUse", "Bash", {"command": "make watch"},
             tool_response={"stdout": err, "stderr": "", "interrupted": True})
    ps = paths(project)
    for i in range(0, len(ps), 20):
        tool("PostToolUse", "Grep", {"pattern": "TODO", "path": str(project)},
             tool_response={"filenames": ps[i:i + 20]})
    for prompt in _pack(forms, 7000, "\n"):
        out.append(("UserPromptSubmit", {**base, "hook_event_name": "UserPromptSubmit",
                                         "prompt": f"please run this for me:\n{prompt}"}))
    return out


# ----------------------------------------------------------------------------- running

def env_for(home: Path, **extra) -> dict:
    return {**os.environ, "BRAINBOX_HOME": str(home), "BRAINBOX_DAEMON": "off",
            # generous budgets: these cases test redaction, not the deadline (a loaded
            # machine must not send an event to the spool and the count below astray)
            "BRAINBOX_HOOK_BUDGET_TOOL": "60", "BRAINBOX_HOOK_BUDGET_PROMPT": "60", **extra}


def hook(event: str, payload: dict, env: dict) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "hook", "claude", event],
                       input=json.dumps(payload), capture_output=True, text=True, env=env,
                       check=False, timeout=120)
    assert r.returncode == 0, r.stderr
    return r


def bb(env: dict, *args) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *args], capture_output=True,
                       text=True, env=env, check=False, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def count(home: Path, sql: str = "select count(*) from events"):
    conn = sqlite3.connect(home / "brainbox.db")
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


@pytest.fixture
def project(tmp_path) -> Path:
    p = tmp_path / "proj"
    (p / ".git").mkdir(parents=True)
    return p


def test_the_table_is_the_trials_and_more():
    names = {s.name for s in SECRETS}
    trial_leaked = {"mysql-p", "sshpass", "docker-login-p", "twine-pypi", "curl-u",
                    "aws-configure-secret", "stripe-whsec", "azure-account-key"}
    assert trial_leaked <= names and len(names) >= 32 + 8


def test_no_secret_reaches_disk_through_hook_processes(project, brainbox_home):
    env = env_for(brainbox_home)
    calls = payloads(project)
    assert 15 <= len(calls) <= 60  # a few dozen processes, not hundreds
    for event, payload in calls:
        hook(event, payload, env)
    assert count(brainbox_home) == len(calls)  # every call was stored, none dropped
    assert count(brainbox_home, "select count(*) from events where files like '%REDACTED-%'") > 0
    bb(env, "rebuild")  # resources.key and the state blobs are written too
    assert count(brainbox_home, "select count(*) from resources where key like '%REDACTED-%'") > 0
    assert leaks(brainbox_home) == []


def _hold_write_lock(db: Path):
    conn = sqlite3.connect(db, isolation_level=None, timeout=30)
    conn.execute("BEGIN EXCLUSIVE")
    return conn


def test_no_secret_reaches_the_spool_while_the_database_is_locked(project, brainbox_home):
    env = env_for(brainbox_home)
    locked_env = env_for(brainbox_home, BRAINBOX_HOOK_BUDGET_TOOL="1.5")
    first = payloads(project)[0]
    hook(*first, env)  # creates the database
    calls = [c for c in payloads(project) if c[0] != "UserPromptSubmit"][1:]
    batch = calls[:: max(1, len(calls) // 6)]
    lock = _hold_write_lock(brainbox_home / "brainbox.db")
    try:
        for event, payload in batch:
            hook(event, payload, locked_env)
        spooled = list((brainbox_home / "spool").glob("*"))
        assert spooled, "the locked database should have sent the events to the spool"
        assert leaks(brainbox_home) == []
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    hook(*first, env)  # drains the spool
    deadline = time.monotonic() + 120
    while count(brainbox_home) < len(batch) + 2 and time.monotonic() < deadline:
        hook(*first, env)
    assert count(brainbox_home) >= len(batch) + 2
    assert leaks(brainbox_home) == []


def test_no_secret_reaches_the_spool_when_the_deadline_comes_before_mapping(project,
                                                                            brainbox_home):
    """The trial's worst channel (25/32 in the spool as raw payload, issue 13 item 2)."""
    env = env_for(brainbox_home, BRAINBOX_HOOK_BUDGET_TOOL="0.001")
    for event, payload in payloads(project)[:3]:
        hook(event, payload, env)
    assert list((brainbox_home / "spool").glob("*")), "a 1 ms budget should spool every event"
    assert leaks(brainbox_home) == []


# ------------------------------------------------------------------------------- import

def transcript(project: Path) -> str:
    """A Claude Code transcript with every secret in every channel, one call each."""
    lines = []
    n = 0
    t0 = time.time() - 7200

    def stamp(i):
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t0 + i)) + ".000Z"

    base = {"sessionId": "imp-1", "cwd": str(project), "version": "2.1.39", "isSidechain": False,
            "userType": "external"}

    def call(name, inp, result, *, error=False, structured=None):
        nonlocal n
        n += 1
        use_id = f"toolu_imp{n:04d}"
        lines.append({**base, "type": "assistant", "uuid": f"a{n}", "timestamp": stamp(2 * n),
                      "message": {"role": "assistant", "content": [
                          {"type": "tool_use", "id": use_id, "name": name, "input": inp}]}})
        user = {**base, "type": "user", "uuid": f"u{n}", "timestamp": stamp(2 * n + 1),
                "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": use_id, "content": result,
                     **({"is_error": True} if error else {})}]}}
        if structured is not None:
            user["toolUseResult"] = structured
        lines.append(user)

    for s in SECRETS:
        n += 1
        lines.append({**base, "type": "user", "uuid": f"p{n}", "timestamp": stamp(2 * n),
                      "message": {"role": "user", "content": f"please run {s.form}"}})
        call("Bash", {"command": s.form}, "ok", structured={"stdout": "ok", "stderr": ""})
        call("Bash", {"command": "make deploy"}, f"Exit code 1\n{s.form}\nauth failed", error=True)
        if _one_line(s):
            call("Grep", {"pattern": s.form, "path": str(project)}, "No matches",
                 structured={"filenames": [], "numFiles": 0})
    for url in urls():
        call("WebFetch", {"url": url, "prompt": "summarise"}, "ok")
    for p in paths(project):
        call("Read", {"file_path": p}, "1\tx")
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def test_no_secret_reaches_disk_through_import(project, brainbox_home, tmp_path):
    env = env_for(brainbox_home)
    root = tmp_path / "claude-projects" / "-proj"
    root.mkdir(parents=True)
    f = root / "imp-1.jsonl"
    f.write_text(transcript(project), encoding="utf-8")
    os.utime(f, (time.time() - 3600, time.time() - 3600))  # a finished session
    bb(env, "import", "claude", str(tmp_path / "claude-projects"))
    stored = count(brainbox_home)
    assert stored >= 3 * len(SECRETS)
    assert count(brainbox_home, "select count(*) from events where kind = 'prompt'") == len(SECRETS)
    bb(env, "rebuild")
    assert leaks(brainbox_home) == []
