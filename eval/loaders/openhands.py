"""OpenHands CodeAct trajectories in chat form, from two places:

- an ``llm_completions/<instance_id>/<model>-<unix time>.json`` folder (the per-call LLM
  logs of an evaluation run: ``{messages, response, args, kwargs, timestamp, cost}``); the
  LAST file of each task holds the whole conversation in ``messages`` plus the final action
  in ``response``;
- the Nebius SWE-rebench OpenHands trajectories, one row per run (parquet, or JSONL with
  the same columns): ``instance_id``, ``trajectory`` (the message list), and optionally
  ``trajectory_id``, ``repo``, ``problem_statement``, ``resolved``, ``exit_status``,
  ``model_patch``. Parquet needs the ``parquet`` extra (pyarrow).

Both are OpenAI-style messages: ``system``, ``user``, ``assistant`` with ``tool_calls``
(``function.arguments`` a JSON string or an object) and ``tool`` messages answering by
``tool_call_id``. Tools:

- ``execute_bash{command}`` through :mod:`brainbox.shell`; ``exit_code`` from the output's
  ``[Command finished with exit code N]`` / ``[The command completed with exit code N.]``;
  ``error`` the output's tail when the code is non-zero and there is output, or the
  timeout notice. The shell is persistent, so the loader follows ``cd`` and the reported
  working directory (``[Current working directory: X]``, the ``user@host:X #`` prompt).
- ``str_replace_editor{command, path}`` -> tool ``str_replace_editor:<command>``; ``view``
  reads (a directory view touches no file), ``str_replace``/``insert``/``undo_edit``/
  ``edit`` edit, ``create``/``write`` (the whole file) create (the fact; the event's action
  is ``edit``); a result starting ``ERROR:`` is an error.
- ``finish`` is the submit step: dropped. ``think`` and ``task_tracker`` are ``plan``; any
  other tool is kept by name.

The checkout is the ``<uploaded_files>`` path of the first user message (e.g.
``/workspace/astropy__astropy__5.0``), the same directory as ``/testbed`` in the container
(agents use both). The project root is ``/testbed`` and the uploaded path an alias of it:
the uploaded path carries the version (``__1.3``, ``__5.1``), so it changes between tasks
of one repository, and a root that moved would split the replay's per-repository memory.
Scratch files in ``/workspace`` itself are outside.
The task description is the ``<pr_description>`` text (or ``problem_statement``).
Harness nudges ("Please continue working on the task ...") are not prompts.

Timestamps (``llm_completions`` only): ``llm_completion_times.tsv`` lists the unix time
of every LLM call of a task, one per assistant message. Some tasks logged more calls than
the last file has steps (retries, a restarted attempt), so times are aligned from the end:
the final ``response`` gets the last time, the assistant message before it the one
before, and so on. Without the file, ``at`` is ``None``.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

from brainbox import shell
from brainbox.eval.loaders.base import Task, TaskBuilder, parse_task_id, read_json, warn_skip
from brainbox.eval.loaders.shown import numbered

__all__ = ["load", "load_completions", "load_nebius", "task_from_messages"]

SOURCE = "openhands"
NEBIUS = "nebius"
PROJECT = "/testbed"

_UPLOADED = re.compile(r"<uploaded_files>\s*(\S+?)/?\s*</uploaded_files>")
_PR = re.compile(r"<pr_description>\s*(.*?)\s*</pr_description>", re.DOTALL)
_EXIT = re.compile(
    r"\[(?:Command finished with exit code|The command completed with exit code)"
    r" (-?\d+)\.?\]"
)
_CWD = re.compile(
    r"\[Current working directory: ([^\]\n]+)\]|^\S+@[\w.-]+:(/\S*) [#$] ?$", re.MULTILINE
)
_CAT_N = re.compile(r"^(?:.*? )?Here's the result of running `cat -n` on (?:a snippet of )?"
                    r"(/\S+?):\n")
_META_LINE = re.compile(
    r"^\s*(\[(Command finished|The command|Current working directory|"
    r"Python [Ii]nterpreter)[^\n]*\]|\S+@[\w.-]+:/\S* [#$] ?)\s*$",
    re.MULTILINE,
)
_TIMEOUT = re.compile(r"(timed out|no new output after \d+ seconds)", re.IGNORECASE)
# Editor command -> the fact of its file (base.py).
_EDIT_CMDS = {
    "create": "create",
    "str_replace": "edit",
    "insert": "edit",
    "undo_edit": "edit",
    "view": "read",
    "write": "create",
    "edit": "edit",
}
_PLAN = {"think", "task_tracker"}
_DROP = {"finish"}
_NUDGE = ("Please continue working on the task",)


def _text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content)
    return str(content)


def _arguments(call: dict) -> dict:
    fn = call.get("function") or {}
    a = fn.get("arguments")
    if isinstance(a, str):
        try:
            a = json.loads(a) if a.strip() else {}
        except json.JSONDecodeError:
            return {}
    return a if isinstance(a, dict) else {}


def _bash_result(output: str | None) -> tuple[int | None, str | None]:
    if output is None:
        return None, None
    m = None
    for m in _EXIT.finditer(output):
        pass
    rc = int(m.group(1)) if m else None
    body = _META_LINE.sub("", output).strip()
    if rc is None and _TIMEOUT.search(output[-600:]):
        return None, "timed out"
    if rc not in (None, 0) and body:
        return rc, body
    return rc, None


def _shell_output(command: str, result: str | None) -> str | None:
    """A shell step's output without the echoed command (its first line) and the
    harness's trailing lines (interpreter, prompt, exit code), ``\r\n`` as ``\n``; for
    the text of a file a view showed (:mod:`.shown`). None when there is none."""
    if not result:
        return None
    lines = result.replace("\r\n", "\n").split("\n")
    if lines and lines[0].strip() == command.strip():
        lines = lines[1:]
    while lines and (not lines[-1].strip() or _META_LINE.fullmatch(lines[-1])
                     or lines[-1].startswith("[Python ") or lines[-1].endswith("/python]")):
        lines.pop()
    return "\n".join(lines) + "\n" if lines else None


def _reported_cwd(output: str | None) -> str | None:
    if not output:
        return None
    found = None
    for m in _CWD.finditer(output):
        found = m.group(1) or m.group(2)
    return found.strip() if found else None


def _add_call(b: TaskBuilder, name: str, args: dict, result: str | None, cwd: str, at) -> str:
    """Record one tool call; return the shell's working directory after it."""
    if name == "execute_bash" or name == "bash":
        command = args.get("command")
        command = command if isinstance(command, str) else ""
        rc, err = _bash_result(result)
        b.shell(command, cwd=cwd, at=at, error=err, exit_code=rc,
                output=_shell_output(command, result))
        return b.map_cwd(_reported_cwd(result) or shell.cwd_after(command, cwd) or cwd)
    if name in ("str_replace_editor", "file_editor", "edit_file"):
        sub = str(args.get("command") or ("edit" if name == "edit_file" else "view"))
        path = args.get("path")
        fact = _EDIT_CMDS.get(sub, "other")
        act = "edit" if fact == "create" else fact
        text = result or ""
        err = text.strip()[:2000] if text.lstrip().startswith("ERROR:") else None
        is_dir = act == "read" and (
            "files and directories" in text[:200]
            or (isinstance(path, str) and not shell.has_extension(path))
        )
        files = [(path, fact)] if isinstance(path, str) and path and not is_dir else []
        if sub == "create" and files and not err:
            b.note_file(path, args.get("file_text"), cwd)
        ev = b.tool(f"{name}:{sub}", files=files, action=act, cwd=cwd, at=at, error=err,
                    file_tool=True)
        m = _CAT_N.match(text) if files and not err else None
        got = numbered(text[m.end():]) if m else None
        if got is not None:  # the file's lines the result showed (.shown)
            whole = sub == "view" and not args.get("view_range") and got[0] == 1 and \
                "<response clipped>" not in text
            b.show(ev, m.group(1), got[0], got[1], whole, cwd)
        return cwd
    action = "plan" if name in _PLAN else "other"
    b.tool(name, action=action, cwd=cwd, at=at)
    return cwd


def task_from_messages(
    messages: list,
    task_id: str,
    *,
    source: str,
    path,
    times: list[float] | None = None,
    final: dict | None = None,
    description: str | None = None,
    session: str | None = None,
    meta: dict | None = None,
) -> Task:
    """Build a Task from an OpenHands chat ``messages`` list (plus the final ``response``
    message of an LLM log, if any). ``times``: unix times of the LLM calls, aligned from the
    end onto the assistant messages. Raises ``KeyError``/``ValueError`` on unusable input."""
    if not isinstance(messages, list):
        raise KeyError("messages")
    first_user = next(
        (
            _text(m.get("content"))
            for m in messages
            if isinstance(m, dict) and m.get("role") == "user"
        ),
        None,
    )
    if first_user is None:
        raise KeyError("no user message")
    parse_task_id(task_id)
    up = _UPLOADED.search(first_user)
    uploaded = up.group(1) if up else None
    if description is None:
        m = _PR.search(first_user)
        description = m.group(1) if m else first_user
    b = TaskBuilder(
        session=session or task_id, project=PROJECT, aliases=(uploaded,) if uploaded else ()
    )
    results = {}
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id"):
            results.setdefault(m["tool_call_id"], _text(m.get("content")))
    turns = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
    if final is not None:
        turns.append(final)
    stamps: list = [None] * len(turns)
    if times:
        for k in range(1, min(len(turns), len(times)) + 1):
            stamps[-k] = times[-k]
    stamp_of = {id(t): s for t, s in zip(turns, stamps)}
    cwd = PROJECT
    seen_task = False
    for m in messages + ([final] if final is not None else []):
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role == "user":
            text = _text(m.get("content")).strip()
            if not seen_task:
                seen_task = True
                continue
            if text and not text.startswith(_NUDGE):
                b.prompt(text, at=stamp_of.get(id(m)), cwd=cwd)
            continue
        if role != "assistant":
            continue
        for call in m.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            name = (call.get("function") or {}).get("name") or "unknown"
            if name in _DROP:
                continue
            cwd = _add_call(
                b, name, _arguments(call), results.get(call.get("id")), cwd, stamp_of.get(id(m))
            )
    return b.task(task_id, description, source, path, meta)


# --------------------------------------------------------------------------- llm_completions


def _times(folder: Path) -> dict[str, list[float]]:
    f = folder / "llm_completion_times.tsv"
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    if not f.exists():
        return {}
    with open(f, encoding="utf-8") as fh:
        for no, r in enumerate(csv.DictReader(fh, delimiter="\t"), 2):
            try:
                out[r["instance_id"]].append((int(r["call_index"]), float(r["unix_time"])))
            except (KeyError, TypeError, ValueError):
                warn_skip(f, "bad row in llm_completion_times.tsv", no)
    return {k: [t for _, t in sorted(v)] for k, v in out.items()}


def _call_time(p: Path) -> float:
    m = re.search(r"-(\d+(?:\.\d+)?)\.json$", p.name)
    return float(m.group(1)) if m else 0.0


def _load_completion(p: Path, tid: str, times: list[float] | None) -> Task | None:
    data = read_json(p, "LLM log")
    if data is None:
        return None
    try:
        final = None
        choices = (data.get("response") or {}).get("choices") or []
        if choices and isinstance(choices[0], dict):
            final = choices[0].get("message")
        return task_from_messages(
            data["messages"],
            tid,
            source=SOURCE,
            path=p,
            times=times,
            final=final,
            meta={"cost": data.get("cost")},
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        warn_skip(p, f"missing field or bad id ({exc!r}); task skipped")
        return None


def load_completions(folder) -> Iterator[Task]:
    """Tasks of an ``llm_completions`` run folder (or the ``llm_completions`` folder itself,
    one task's subfolder, or one LLM log file), by repository then PR number."""
    folder = Path(folder)
    if folder.is_file():
        times = _times(folder.parent.parent.parent).get(folder.parent.name)
        t = _load_completion(folder, folder.parent.name, times)
        if t is not None:
            yield t
        return
    root = folder / "llm_completions" if (folder / "llm_completions").is_dir() else folder
    if any(root.glob("*.json")):  # one task's folder
        task_dirs = [root]
        run = root.parent.parent
    else:
        task_dirs = [d for d in root.iterdir() if d.is_dir()]
        run = root.parent
    times = _times(run)

    def key(d: Path):
        try:
            repo, order = parse_task_id(d.name)
            return (repo, order, d.name)
        except ValueError:
            return ("~", 0, d.name)

    for d in sorted(task_dirs, key=key):
        files = sorted(d.glob("*.json"), key=_call_time)
        if not files:
            continue
        t = _load_completion(files[-1], d.name, times.get(d.name))
        if t is not None:
            yield t


# --------------------------------------------------------------------------- Nebius rows


def _parquet_rows(path: Path) -> Iterator[tuple[int, dict]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - exercised only without pyarrow
        raise ImportError(
            f"reading {path} needs pyarrow: pip install 'brainbox[parquet]' (or pyarrow)"
        ) from exc
    pf = pq.ParquetFile(path)
    no = 0
    for batch in pf.iter_batches(batch_size=64):
        for row in batch.to_pylist():
            no += 1
            yield no, row


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict]]:
    with open(path, encoding="utf-8", errors="replace") as fh:
        for no, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except json.JSONDecodeError as exc:
                warn_skip(path, f"bad JSON line ({exc.msg}); task skipped", no)
                continue
            if isinstance(row, dict):
                yield no, row
            else:
                warn_skip(path, "line is not a JSON object; task skipped", no)


def _row_task(row: dict, path: Path, no: int) -> Task | None:
    try:
        tid = row["instance_id"]
        traj = row["trajectory"]
        if isinstance(traj, str):
            traj = json.loads(traj)
        desc = row.get("problem_statement")
        meta = {
            k: row.get(k) for k in ("trajectory_id", "repo", "resolved", "exit_status") if k in row
        }
        meta["row"] = no
        session = row.get("trajectory_id") or tid
        return task_from_messages(
            list(traj),
            tid,
            source=NEBIUS,
            path=path,
            description=desc if isinstance(desc, str) and desc else None,
            session=str(session),
            meta=meta,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        warn_skip(path, f"missing field or bad value ({exc!r}); task skipped", no)
        return None


def load_nebius(path, sort: bool = True) -> Iterator[Task]:
    """Tasks of a Nebius SWE-rebench OpenHands file (``.parquet``, ``.jsonl``) or a folder
    of them, sorted by repository then PR number (a task can have several runs: all kept,
    each its own session, in file order). ``sort=False`` streams rows in file order
    instead of holding every task in memory (the full dataset has 67k runs)."""
    path = Path(path)
    files: Iterable[Path]
    if path.is_dir():
        files = sorted(list(path.glob("*.parquet")) + list(path.glob("*.jsonl")))
    else:
        files = [path]
    tasks = []
    for f in files:
        rows = _parquet_rows(f) if f.suffix == ".parquet" else _jsonl_rows(f)
        for no, row in rows:
            t = _row_task(row, f, no)
            if t is None:
                continue
            if sort:
                tasks.append(t)
            else:
                yield t
    tasks.sort(key=lambda t: (t.repo, t.order))
    yield from tasks


def load(path) -> Iterator[Task]:
    """``llm_completions`` folders and Nebius files alike."""
    path = Path(path)
    if path.suffix in (".parquet", ".jsonl") or (
        path.is_dir()
        and not ((path / "llm_completions").is_dir() or path.name == "llm_completions")
        and (any(path.glob("*.parquet")) or any(path.glob("*.jsonl")))
    ):
        yield from load_nebius(path)
    else:
        yield from load_completions(path)
