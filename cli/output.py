"""How a command prints its result: JSON on request (`--json`), else its human form.

Its own module because the command modules (`agent_cmds`, `replay_cmd`) and `app`, which
registers them, all print this way; from `app` it made the two import each other.
"""

from __future__ import annotations

import json

import click


def emit(data, as_json: bool, human) -> None:
    """Print `data` as one JSON line when `as_json`, else call `human(data)`."""
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False))
    else:
        human(data)
