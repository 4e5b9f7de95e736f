"""Secret redaction for recorded commands and texts (DESIGN §7).

``redact(text)`` replaces secrets with ``[REDACTED]`` and keeps everything around them, so a
recorded command stays readable and still says what was run::

    curl -H "Authorization: Bearer [REDACTED]" https://user:[REDACTED]@host/x
    export OPENAI_API_KEY=[REDACTED]; GITHUB_TOKEN=[REDACTED] gh pr list

What is redacted, in this order (each rule sees the output of the previous one, and
``redact(redact(x)) == redact(x)``):

1. PEM private-key blocks: the body between ``-----BEGIN ... PRIVATE KEY-----`` and its
   ``END`` line (a block without ``END`` loses the base64 run after its header).
2. Passwords in URLs: ``scheme://user:[REDACTED]@host``.
3. Credential headers: ``Authorization:`` / ``Proxy-Authorization:`` (the scheme word
   ``Bearer``/``Basic``/``token`` is kept), ``Cookie:``, ``X-...-Key/Token/Secret:``,
   ``Api-Key:``, ``Private-Token:``, also inside ``curl -H '...'`` and JSON.
4. Tokens of known shapes wherever they occur: Anthropic ``sk-ant-``, OpenAI ``sk-``
   (with at least one digit, so ``sk-learn-...`` words survive), GitHub ``ghp_ gho_ ghu_
   ghs_ ghr_ github_pat_``, AWS key ids ``AKIA``/``ASIA``..., Slack ``xox[abposr]-`` and
   webhook paths, Google ``AIza``, Stripe ``sk_/rk_live|test_`` and ``whsec_``, GitLab
   ``glpat-``, npm ``npm_``, Hugging Face ``hf_``, PyPI ``pypi-Ag...`` (every PyPI token is a
   macaroon whose base64 starts ``Ag``, so ``pypi-simple-mirror`` survives), SendGrid
   ``SG.<16-64>.<16-128>``, JWTs ``eyJ...eyJ...``.
5. ``aws_secret_access_key = ...`` / ``aws_session_token`` in config syntax, and positional
   (``aws configure set [profile.]aws_secret_access_key X``) when X looks random (a digit,
   an upper- and a lower-case letter) and ends the word: ``grep aws_secret_access_key
   config/credentials.ini`` keeps its file name.
5b. Connection strings: the value of ``AccountKey=``, ``SharedAccessKey=``,
   ``SharedAccessSignature=``, ``SharedSecret=`` (Azure; the names end in ``Key`` with no
   ``_``, so rule 8 cannot see them). URL query parameters named like a credential (``?api_key=``, ``&token=``,
   ``access_token``, ``client_secret``, ``password``, ``sig``, ``X-Amz-Signature``...) lose
   their value whatever it looks like: rule 8 keeps a letters-only lower-case value
   (``f(token=tok)``), which in a query string is the leak the trial found.
5c. Short flags, per tool. ``-p`` is a port (psql, ssh, ``docker run``), a parent
   (mkdir), a plugin (pytest) or a project (``docker compose``) too often to redact
   everywhere, so a short flag is a password only after the program word of a tool where it
   is one, up to the end of that simple command (an unquoted ``;``, ``|``, ``&`` or newline):
   mysql/mysqldump/mariadb ``-pX`` (attached only: ``mysql -p db`` prompts and names a
   database), sshpass ``-p``, ``docker|podman|nerdctl|buildah|skopeo login -p``, twine
   ``-p``, mongo/mongosh ``-p``, redis-cli ``-a``, ldapsearch & co ``-w``, sqlcmd/bcp ``-P``,
   zip/unzip ``-P``, 7z/rar ``-pX``, openssl ``-passin/-passout/-pass pass:X`` and ``-k``,
   keytool ``-storepass/-keypass``; and ``user:password`` after curl ``-u/--user/-U/
   --proxy-user`` and ``user%password`` after smbclient/rpcclient ``-U``, where only the part
   after the separator goes (``curl -u alice`` has none: curl asks). Not psql (``-p`` is
   the port; its password comes from ``PGPASSWORD``, rule 8), not ssh/scp, not grep ``-P``.
6. Flags whose name ends in password, passwd, passphrase, token, secret, api-key, apikey,
   access-key or secret-key: ``--password=X``, ``--api-key X``, ``--github-token "X"``
   (``mysql --password X`` and ``docker login --password X`` too).
7. Quoted keys with a secret name in JSON or Python dicts: ``{"password": "X"}``.
8. Assignments ``NAME=value`` (also after ``export``/``set``, or as ``name="x"`` kwargs)
   whose last ``_`` component names a secret (``..KEY``, ``..TOKEN``, ``..SECRET``,
   ``..PASSWORD``, ``..PASSWD``, ``..PASSPHRASE``, ``..CREDENTIAL(S)``, ``PASS``, ``PWD``,
   ``AUTH``) or that contain SECRET/PASSWORD/PASSWD/CREDENTIAL unless they end in a
   reference word (``_FILE``, ``_PATH``, ``_URL``...). The *last component* rule is a
   deliberate narrowing of "name contains KEY/TOKEN": ``TOKENIZERS_PARALLELISM=false``,
   ``MAX_TOKENS=100``, ``KEYBOARD=us`` and ``TOKEN_PATH=/x`` are not secrets. Lower-case
   names (code rather than environment) need a strong word (password, secret, token,
   api_key...) and, except for passwords, a quoted value or one with a digit, so that
   ``sorted(xs, key=len)`` and ``f(token=tok)`` survive. Values that are only a reference
   (``$VAR``, ``${VAR}``, ``$(cmd)``) are kept: they are not the secret. A literal ``\n``
   escape ends a value and starts a name (``printf 'A=1\nDB_PASSWORD=x\n' > .env``).

``redact_path(path)`` applies all of this to each segment of a stored file path and
replaces what goes by a tagged marker, so that the path stays a stable key (see there).

Standard library only, every regex compiled once (at import, or at first use for the
rules behind a guard: see ``_Lazy``) and linear in the input: bounded repetitions, and a
token pattern only starts where the run of token characters starts (a look-behind on the
token alphabet), so a megabyte of ``eyJ-eyJ-...`` is one scan; the per-tool windows of 5c
do not overlap (a megabyte of ``curl -u a:b `` takes about 1 s, of ordinary text 50 ms).
The whole text is scanned (a secret past any cut-off would leak).
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact", "redact_path"]

REDACTED = "[REDACTED]"


class _Lazy:
    """A regex compiled on first use. The rules added for the trial's gaps (5, 5b, 5c: 35
    patterns) are ones a hook process almost never needs; compiled at import they took
    the module's import from 15 to 29 ms (best of 15 runs of `python -c 'import
    brainbox.redact'` on the loaded 2-core box), compiled lazily it stays at the old cost."""

    __slots__ = ("_args", "_rx")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._rx: re.Pattern[str] | None = None

    def _get(self) -> re.Pattern[str]:
        if self._rx is None:
            self._rx = re.compile(*self._args)
        return self._rx

    def search(self, text: str, pos: int = 0):
        return self._get().search(text, pos)

    def match(self, text: str, pos: int = 0):
        return self._get().match(text, pos)

    def sub(self, repl, text: str):
        return self._get().sub(repl, text)

# --------------------------------------------------------------------------- 1. PEM

_PEM_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9]{1,20} ){0,3}PRIVATE KEY( BLOCK)?-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,64}PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=:,.\- \t\r\n]|\\[nr]){0,65536}")


def _redact_pem(text: str) -> str:
    if "PRIVATE KEY" not in text:
        return text
    out: list[str] = []
    pos = 0
    end: re.Match[str] | None = None
    no_end = False  # once no END follows some point, none follows any later point
    while True:
        m = _PEM_BEGIN.search(text, pos)
        if m is None:
            break
        after = m.end()
        sep = (
            "\\n"
            if text.startswith("\\n", after)
            else ("\n" if text.startswith(("\n", "\r\n"), after) else " ")
        )
        if not no_end and (end is None or end.start() < after):
            end = _PEM_END.search(text, after)
            no_end = end is None
        if end is not None and not no_end:
            out.append(text[pos:after] + sep + REDACTED + sep)
            out.append(end.group(0))
            pos = end.end()
            continue
        body = _PEM_BODY.match(text, after)
        stop = body.end() if body else after
        if len(text[after:stop].strip()) < 16:  # a header alone, e.g. in a grep pattern
            out.append(text[pos:after])
            pos = after
            continue
        out.append(text[pos:after] + sep + REDACTED)
        pos = stop
    out.append(text[pos:])
    return "".join(out)


# ------------------------------------------------------------------- 2. URL passwords

_URL_PASSWORD = re.compile(r"(://[^\s:/?#@'\"<>]{0,256}:)([^\s/?#'\"<>]{1,256})@")

# -------------------------------------------------------------------------- 3. headers

_AUTH_HEADER = re.compile(
    r"(?i)((?:proxy-)?authorization[\"']?\s{0,5}:\s{0,5}[\"']?)"
    r"((?:bearer|basic|token|bot|digest|negotiate|apikey|aws4-hmac-sha256)\s{1,5})?"
    r"(?!(?:bearer|basic|token|bot|digest|negotiate)\b|\$)"
    r"[^\s'\"]{1,4096}(?:,\s?[^\s'\",]{1,4096}){0,20}"
)
_COOKIE_HEADER = re.compile(
    r"(?i)((?:set-)?cookie[\"']?\s{0,5}:\s{0,5}[\"']?)(?=[^\s'\"$])[^\r\n'\"]{1,8192}"
)
_KEY_HEADER = re.compile(
    r"(?i)((?:x-(?<![\w-]x-)[\w-]{0,40}(?:key|token|secret|signature)|api-?key|private-token)"
    r"[\"']?\s{0,5}:\s{0,5}[\"']?)(?!\$)[^\s'\"]{1,4096}"
)

# ------------------------------------------------------------------- 4. token shapes

# Literal first (sre then jumps between candidates at memory speed: 1 ms/MB instead of
# 60 ms/MB for a pattern that opens with a look-behind), then a fixed-width look-behind that
# rejects a start inside a longer run of token characters (this also keeps the scan linear).
_TOKEN_SHAPES: list[tuple[tuple[str, ...], re.Pattern[str] | _Lazy]] = [
    (("sk-ant-",), re.compile(r"sk-ant-(?<![\w-]sk-ant-)[A-Za-z0-9_\-]{20,512}")),
    (("_",), re.compile(r"gh[pousr]_(?<![\w-]gh[pousr]_)[A-Za-z0-9]{20,255}")),
    (("github_pat_",), re.compile(r"github_pat_(?<![\w-]github_pat_)[A-Za-z0-9_]{20,255}")),
    (
        ("A",),
        re.compile(
            r"A(?<![A-Za-z0-9]A)(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|NPA|NVA|IPA)[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
    ),
    (("xox",), re.compile(r"xox[abposr]-(?<![\w-]xox[abposr]-)[A-Za-z0-9\-]{10,255}")),
    (("AIza",), re.compile(r"AIza(?<![\w-]AIza)[0-9A-Za-z_\-]{30,64}(?![\w-])")),
    (
        ("k_live_", "k_test_"),
        re.compile(r"[sr]k_(?<![\w-][sr]k_)(?:live|test)_[0-9A-Za-z]{16,255}"),
    ),
    (("glpat-",), re.compile(r"glpat-(?<![\w-]glpat-)[A-Za-z0-9_\-]{20,255}")),
    (("npm_",), re.compile(r"npm_(?<![\w-]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    (("hf_",), re.compile(r"hf_(?<![\w-]hf_)[A-Za-z0-9]{30,255}")),
    (("whsec_",), _Lazy(r"whsec_(?<![\w-]whsec_)[A-Za-z0-9+/=]{20,255}")),
    (("pypi-Ag",), _Lazy(r"pypi-(?<![\w-]pypi-)Ag[A-Za-z0-9_\-]{40,4096}")),
    (
        ("SG.",),
        _Lazy(r"SG\.(?<![\w.-]SG\.)[A-Za-z0-9_\-]{16,64}\.[A-Za-z0-9_\-]{16,128}"),
    ),
    (
        ("eyJ",),
        re.compile(
            r"eyJ(?<![\w-]eyJ)[A-Za-z0-9_\-]{8,8192}\.eyJ[A-Za-z0-9_\-]{8,16384}\.[A-Za-z0-9_\-]{0,8192}"
        ),
    ),
]
_SLACK_WEBHOOK = re.compile(r"(hooks\.slack\.com/services/)[A-Za-z0-9/]{20,255}")
_OPENAI_KEY = re.compile(r"sk-(?<![\w-]sk-)[A-Za-z0-9_\-]{20,512}")
_HAS_DIGIT = re.compile(r"\d")


def _openai(m: re.Match[str]) -> str:
    body = m.group(0)[3:]
    return REDACTED if _HAS_DIGIT.search(body) and any(c.isalpha() for c in body) else m.group(0)


# ----------------------------------------------------------------- 5. AWS config lines

_AWS_CONFIG = re.compile(
    r"(?i)((?:aws_secret_access_key|aws_session_token|secret_access_key)[\"']?\s{0,5}[=:]\s{0,5}[\"']?)"
    r"(?!\$)[A-Za-z0-9/+=]{16,2048}"
)
# `aws configure set [profile.]aws_secret_access_key VALUE`: the value is positional, so it
# must look random (a digit, an upper- and a lower-case letter) and end the word, or
# `grep aws_secret_access_key config/credentials.ini` would lose its file name.
_AWS_POSITIONAL = _Lazy(
    r"(?i)((?:aws_secret_access_key|aws_session_token)[ \t]{1,10}[\"']?)"
    r"([A-Za-z0-9/+=]{16,2048})(?![\w\-~])"
)


def _aws_positional(m: re.Match[str]) -> str:
    v = m.group(2)
    if any(c.isdigit() for c in v) and any(c.isupper() for c in v) and any(c.islower() for c in v):
        return m.group(1) + REDACTED
    return m.group(0)


# ------------------------------------------------- 5b. connection strings, URL queries

_CONN_STRING = _Lazy(
    r"(?i)((?<![\w-])(?:AccountKey|SharedAccessKey|SharedAccessSignature|SharedSecret)=)"
    r"(?!\$|\[REDACTED|REDACTED-)[^;\s'\"]{1,4096}"
)
# A query parameter whose name is a credential: redacted whatever its value looks like
# (`?api_key=abcdef` has no digit, which the assignment rule below needs for lower case).
# Over the 18,271 commands, arguments, errors and prompts of the four trajectory sets in
# shared/data it changed one text, a pytest id with `?key=value` (harmless); brackets
# and parentheses end the value, so such an id stays readable.
_URL_QUERY = _Lazy(
    r"(?i)([?&](?:[a-z0-9_.\-]{0,40}[_.\-])?"
    r"(?:api[_-]?key|apikey|key|token|access[_-]?token|auth[_-]?token|refresh[_-]?token|"
    r"id[_-]?token|private[_-]?token|client[_-]?secret|secret|password|passwd|pwd|sig|"
    r"signature|x-amz-signature|x-amz-security-token|x-amz-credential)=)"
    r"(?![$&#\s]|\[REDACTED|REDACTED-)[^&\s'\"#<>()\[\]]{1,4096}"
)

# --------------------------------------------------- 5c. tools whose short flag is a password

# Whether `-p` is a password depends on the tool: it is for mysql (attached only: `-p db`
# prompts and names a database), sshpass, `docker|podman|nerdctl login`, twine and mongosh;
# it is not for psql, ssh, mkdir, pytest, `docker run` (ports, parents, plugins). So these
# rules apply only after the program word, up to the end of that simple command (an
# unquoted ``;``, ``|``, ``&`` or newline).
_VALUE = r"(\"[^\"\n]{0,4096}\"|'[^'\n]{0,4096}'|[^\s'\"]{1,4096})"
_ATTACHED = r"(?=[^\s-])"  # a value glued to the flag
_SPACED = r"(?:[ \t]{1,10}(?!-)|(?=[^\s-]))"  # glued or the next word (not another flag)


def _short(flags: str, sep: str) -> _Lazy:
    return _Lazy(r"((?<![\w\-])(?:" + flags + r")" + sep + r")" + _VALUE)


_TOOL_RULES: list[tuple[tuple[str, ...], _Lazy, list[tuple[_Lazy, str]]]] = [
    (
        ("mysql", "mariadb"),
        _Lazy(
            r"(?<![\w.\-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|"
            r"mysqlpump|mariadb|mariadb-dump|mariadb-admin)(?![\w.\-])"
        ),
        [(_short("-p", _ATTACHED), "")],
    ),
    (("sshpass",), _Lazy(r"sshpass(?<![\w.\-]sshpass)(?![\w.\-])"), [(_short("-p", _SPACED), "")]),
    (
        ("login",),
        _Lazy(r"(?<![\w.\-])(?:docker|podman|nerdctl|buildah|skopeo|helm registry)[ \t]{1,10}login(?![\w.\-])"),
        [(_short("-p", _SPACED), "")],
    ),
    (("twine",), _Lazy(r"twine(?<![\w.\-]twine)(?![\w.\-])"), [(_short("-p", _SPACED), "")]),
    (
        ("mongo",),
        _Lazy(r"(?<![\w.\-])(?:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)(?![\w.\-])"),
        [(_short("-p", _SPACED), "")],
    ),
    (("redis-cli",), _Lazy(r"redis-cli(?<![\w.\-]redis-cli)(?![\w.\-])"), [(_short("-a", _SPACED), "")]),
    (("ldap",), _Lazy(r"ldap(?<![\w.\-]ldap)[a-z]{2,12}(?![\w.\-])"), [(_short("-w", _SPACED), "")]),
    (("sqlcmd", "bcp"), _Lazy(r"(?<![\w.\-])(?:sqlcmd|bcp)(?![\w.\-])"), [(_short("-P", _SPACED), "")]),
    (("zip",), _Lazy(r"(?<![\w.\-])(?:zip|unzip|zipcloak)(?![\w.\-])"), [(_short("-P", _SPACED), "")]),
    (("7z", "rar"), _Lazy(r"(?<![\w.\-])(?:7z|7za|7zr|rar|unrar)(?![\w.\-])"), [(_short("-p", _ATTACHED), "")]),
    (
        ("openssl",),
        _Lazy(r"openssl(?<![\w.\-]openssl)(?![\w.\-])"),
        [(_short("-pass(?:in|out)?", r"[ \t]{1,10}pass:"), ""), (_short("-k", r"[ \t]{1,10}"), "")],
    ),
    (
        ("keytool",),
        _Lazy(r"keytool(?<![\w.\-]keytool)(?![\w.\-])"),
        [(_short("-(?:src|dest|new)?(?:store|key)?pass|-new", r"[ \t]{1,10}"), "")],
    ),
    # user:password, only the part after the separator goes
    (
        ("curl",),
        _Lazy(r"curl(?<![\w.\-]curl)(?![\w.\-])"),
        [(_short("-u|-U|--user|--proxy-user", r"(?:=|[ \t]{0,10})"), ":")],
    ),
    (
        ("smbclient", "rpcclient", "smbmap"),
        _Lazy(r"(?<![\w.\-])(?:smbclient|rpcclient|smbmap)(?![\w.\-])"),
        [(_short("-U|--user", r"(?:=|[ \t]{0,10})"), "%")],
    ),
]
# the rest of one simple command: quoted strings are skipped whole
_SIMPLE_COMMAND = _Lazy(r"(?:'[^'\n]{0,65536}'|\"[^\"\n]{0,65536}\"|[^'\"\n;|&])*")


def _tool_value(m: re.Match[str], sep: str) -> str:
    open_q, value, close_q = _strip_quotes(m.group(2))
    keep = ""
    if sep:
        if sep not in value:
            return m.group(0)  # `curl -u alice`: no password, curl asks for it
        keep, value = value.split(sep, 1)
        keep += sep
    if _is_reference(value):
        return m.group(0)
    return f"{m.group(1)}{open_q}{keep}{REDACTED}{close_q}"


_TOOL_ANY = _Lazy("|".join(re.escape(g) for gs, _, _ in _TOOL_RULES for g in gs))


def _redact_tools(text: str, low: str) -> str:
    # Rejecting a text without any program word: one alternation is a little cheaper on
    # commands and errors (9.4 against 10.2 µs per text over the 18,271 texts of the four
    # trajectory sets in shared/data), the literal loop on a megabyte (18 ms against 28).
    if len(low) < 8192 and not _TOOL_ANY.search(low):
        return text
    for guards, program, rules in _TOOL_RULES:
        if not any(g in low for g in guards):
            continue
        m = program.search(text)
        if m is None:
            continue
        out: list[str] = []
        pos = 0
        while m is not None:
            start = m.end()
            stop = _SIMPLE_COMMAND.match(text, start).end()
            if stop < len(text) and text[stop] in "'\"":  # an unclosed quote: to the line end
                nl = text.find("\n", stop)
                stop = len(text) if nl < 0 else nl
            window = text[start:stop]
            for rx, sep in rules:
                window = rx.sub(lambda v, sep=sep: _tool_value(v, sep), window)
            out.append(text[pos:start])
            out.append(window)
            pos = stop
            m = program.search(text, stop)
        out.append(text[pos:])
        text = "".join(out)
    return text

# --------------------------------------------------------------------------- 6. flags

_FLAG = re.compile(
    r"(?i)(-(?<![\w-]-)-?(?:[a-z0-9_\-]{0,40}[-_])?"
    r"(?:password|passwd|passphrase|token|secret|api[-_]?key|access[-_]key|secret[-_]key)"
    r"(?:=|[ \t]{1,10}))"
    r"(?![-$])(\"[^\"\n]{0,4096}\"|'[^'\n]{0,4096}'|[^\s'\"]{1,4096})"
)

# ---------------------------------------------------- 7./8. names that denote a secret

_SECRET_LAST = re.compile(
    r"(?:^|_)(?:[A-Z0-9]*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|CREDENTIALS?|APIKEY|ACCESSKEY|PRIVATEKEY)"
    r"|KEY|PASS|PWD|AUTH)$"
)
_SECRET_ANYWHERE = re.compile(r"SECRET|PASSWORD|PASSWD|CREDENTIAL")
_REFERENCE_LAST = re.compile(
    r"_(?:FILE|PATH|DIR|URL|URI|NAME|ID|LEN|LENGTH|MIN|MAX|TYPE|ENABLED|DISABLED|PROMPT|RESET|POLICY|HELPER|CMD|COMMAND|ENV|VAR|FIELD)S?$"
)
_LOWER_STRONG = re.compile(
    r"(?:^|_)(?:[a-z0-9]*(?:password|passwd|passphrase|secret|token|apikey)|api_key|access_key|secret_key|private_key|credentials?)$"
)
_LOWER_PASSWORD = re.compile(r"(?:password|passwd|passphrase)$")
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})


def _is_secret_name(name: str) -> bool:
    upper = name.upper()
    if upper in _NOT_SECRET_NAMES:
        return False
    if _SECRET_LAST.search(upper):
        return True
    return bool(_SECRET_ANYWHERE.search(upper)) and not _REFERENCE_LAST.search(upper)


def _strip_quotes(value: str) -> tuple[str, str, str]:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[0], value[1:-1], value[0]
    return "", value, ""


def _is_reference(value: str) -> bool:
    """A reference (``$VAR``) or what redaction already wrote (``[REDACTED]``, a path's
    ``REDACTED-<tag>``): nothing to redact."""
    return not value or value.startswith(("$", "[REDACTED", "REDACTED-"))


_JSON_KEY = re.compile(
    r"([\"'])([A-Za-z_][\w\-]{0,127})\1(\s{0,5}:\s{0,5})([\"'])([^\"'\n]{1,4096})\4"
)


def _json_key(m: re.Match[str]) -> str:
    name, value = m.group(2), m.group(5)
    if _is_reference(value) or not _is_secret_name(name.replace("-", "_")):
        return m.group(0)
    if not name.isupper() and not _LOWER_STRONG.search(name.lower().replace("-", "_")):
        return m.group(0)
    q = m.group(4)
    return f"{m.group(1)}{name}{m.group(1)}{m.group(3)}{q}{REDACTED}{q}"


# A literal ``\n`` / ``\t`` / ``\r`` escape ends a value and may precede a name, as in
# ``printf 'DB_HOST=db\nDB_PASSWORD=x\n' > .env`` (the password rode along as part of
# DB_HOST's value before).
_ASSIGNMENT = re.compile(
    r"(?:(?<![\w$./\-\\])|(?<=\\[nrt]))([A-Za-z_][A-Za-z0-9_]{0,127})="
    r"(\"[^\"\n]{0,4096}\"|'[^'\n]{0,4096}'|(?:[^\s;&|<>'\"`(){}\[\],\\]|\\(?![nrt])){1,4096})"
)


def _assignment(m: re.Match[str]) -> str:
    name, raw = m.group(1), m.group(2)
    open_q, value, close_q = _strip_quotes(raw)
    if _is_reference(value) or not _is_secret_name(name):
        return m.group(0)
    if not name.isupper():
        lower = name.lower()
        if not _LOWER_STRONG.search(lower):
            return m.group(0)
        if not (open_q or _LOWER_PASSWORD.search(lower) or _HAS_DIGIT.search(value)):
            return m.group(0)
    return f"{name}={open_q}{REDACTED}{close_q}"


def _flag(m: re.Match[str]) -> str:
    open_q, value, close_q = _strip_quotes(m.group(2))
    if _is_reference(value):
        return m.group(0)
    return f"{m.group(1)}{open_q}{REDACTED}{close_q}"


# --------------------------------------------------------------------------- redact

# Guards run on the lower-cased text, literal first and case-sensitive (about 1 ms/MB); the
# case-insensitive patterns above cost about 90 ms/MB, so they run only when a guard hits.
_GUARD_AUTH = re.compile(r"authorization[\"']?\s{0,5}:")
_GUARD_COOKIE = re.compile(r"cookie[\"']?\s{0,5}:")
_GUARD_KEY_HEADER = re.compile(r"(?:key|token|secret|signature)[\"']?\s{0,5}:")
_GUARD_QUERY = ("key=", "token=", "secret=", "password=", "passwd=", "pwd=", "sig=", "signature=",
                "credential=")
_GUARD_ASSIGNMENT = re.compile(
    r"(?:key|token|secret|pass|pwd|auth|credential)[a-z0-9_]{0,127}=[^=]"
)


def redact(text: str) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED]``."""
    if not text:
        return "" if text is None else text
    if not isinstance(text, str):
        text = (
            text.decode("utf-8", "replace") if isinstance(text, (bytes, bytearray)) else str(text)
        )
    # Cheap guards (str.find runs at memory speed) skip the scans that cannot match;
    # replacements only remove text, so guards computed on the input stay valid.
    low = text.lower()
    text = _redact_pem(text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + "@", text)
    if _GUARD_AUTH.search(low):
        text = _AUTH_HEADER.sub(lambda m: m.group(1) + (m.group(2) or "") + REDACTED, text)
    if _GUARD_COOKIE.search(low):
        text = _COOKIE_HEADER.sub(lambda m: m.group(1) + REDACTED, text)
    if _GUARD_KEY_HEADER.search(low):
        text = _KEY_HEADER.sub(lambda m: m.group(1) + REDACTED, text)
    for guards, rx in _TOKEN_SHAPES:
        if any(g in text for g in guards):
            text = rx.sub(REDACTED, text)
    if "hooks.slack.com" in text:
        text = _SLACK_WEBHOOK.sub(lambda m: m.group(1) + REDACTED, text)
    if "sk-" in text:
        text = _OPENAI_KEY.sub(_openai, text)
    if "secret_access_key" in low or "aws_session_token" in low:
        text = _AWS_CONFIG.sub(lambda m: m.group(1) + REDACTED, text)
        text = _AWS_POSITIONAL.sub(_aws_positional, text)
    if "shared" in low or "accountkey" in low:
        text = _CONN_STRING.sub(lambda m: m.group(1) + REDACTED, text)
    if ("?" in text or "&" in text) and any(g in low for g in _GUARD_QUERY):
        text = _URL_QUERY.sub(lambda m: m.group(1) + REDACTED, text)
    text = _redact_tools(text, low)
    secretish = any(
        w in low for w in ("pass", "token", "secret", "key", "pwd", "auth", "credential")
    )
    if not secretish:
        return text
    if "-" in text:
        text = _FLAG.sub(_flag, text)
    if ":" in text:
        text = _JSON_KEY.sub(_json_key, text)
    if _GUARD_ASSIGNMENT.search(low):
        text = _ASSIGNMENT.sub(_assignment, text)
    return text


# ------------------------------------------------------------------------ file paths


def _tag(text: str) -> str:
    import hashlib  # only when a path holds a secret

    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4,
                             person=b"brainbox.path").hexdigest()
    return f"REDACTED-{digest}"


def redact_path(path: str) -> str:
    """``path`` with each secret in it replaced by ``REDACTED-<tag>``, the tag being 8 hex
    digits of a BLAKE2b hash of the path segment that held it (of the whole path for a
    secret that spans segments, like a Slack webhook path).

    No brackets, unlike ``[REDACTED]`` in texts: a stored path is typed back (``brainbox
    forget keys/REDACTED-1a2b3c4d.txt``), and ``forget`` reads ``[...]`` as a glob that
    does not match itself, as zsh does (which refuses the unmatched word outright).

    A stored path is a key (``events.files``, ``resources.key``): a bare ``[REDACTED]``
    would merge every secret-named file of a folder into one resource, while a tag keeps
    ``keys/ghp_A.txt`` and ``keys/ghp_B.txt`` apart and maps each to the same key every
    time, so learning about it still works and ``forget`` of the absolute path finds it.
    The hash is not keyed (the record path has no key to read without I/O): 32 bits
    reveal nothing usable of a high-entropy token, but a guessable password in a file name
    (``PASSWORD=hunter2.txt``) can be confirmed from its tag by a dictionary attack."""
    if not path:
        return path
    parts = []  # each segment on its own: `a/TOKEN=x` hides the name from rule 8 as a whole
    for seg in path.split("/"):
        out = redact(seg)
        parts.append(seg if out == seg or _already(seg, out) else out.replace(REDACTED, _tag(seg)))
    joined = "/".join(parts)
    again = redact(joined)
    if again != joined and not _already(joined, again):
        joined = again.replace(REDACTED, _tag(path))
    return joined


_MARKER = re.compile(r"REDACTED-[0-9a-f]{8}")


def _already(text: str, out: str) -> bool:
    """Whether `text` is already redacted and only its path markers looked like secrets
    to ``redact`` (`out`): a header, URL-password or PEM rule accepts any value. Seen as
    ``[REDACTED]``, the markers leave redaction nothing to do; then `text` stays as it is,
    so ``redact_path`` is idempotent."""
    if "REDACTED-" not in text or out == text:
        return out == text
    plain = _MARKER.sub(REDACTED, text)
    return redact(plain) == plain
