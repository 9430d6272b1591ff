"""Every hint names a command and options that exist: ``kinefit fit --plan`` was one.

The hints are collected from the string literals of ``pipeline/`` and ``flows/``
(messages, error texts, help): each ``kinefit <command> [--option ...]`` in them is
resolved against the real typer app, command by command, option by option.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import typer

from flows.cli import app

ROOT = Path(__file__).resolve().parents[3]
#: ``kinefit`` then words that may be a command path, then the options after it.
HINT = re.compile(r"\bkinefit((?: [a-z][a-z0-9-]*)+)((?: [^\s`'\"(),;]+)*)")


def _texts(path: Path) -> list[str]:
    """The string literals of a module (f-strings' literal parts joined with a space)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            out.append(
                " X ".join(v.value for v in node.values if isinstance(v, ast.Constant)).strip()
            )
    return out


def hints() -> list[tuple[str, list[str], list[str]]]:
    """(where, command words, option tokens) of every ``kinefit ...`` in the sources."""
    found = []
    for folder in ("pipeline", "flows"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for text in _texts(path):
                for match in HINT.finditer(text):
                    words = match.group(1).split()
                    rest = match.group(2).split()
                    found.append((f"{path.relative_to(ROOT)}: {match.group(0)}", words, rest))
    return found


@functools.cache
def _root():
    return typer.main.get_command(app)


def _resolve(words: list[str]):
    """The deepest command the words name, and the words left over (None: no command)."""
    command = _root()
    used = 0
    for word in words:
        sub = getattr(command, "commands", {}).get(word)
        if sub is None:
            break
        command, used = sub, used + 1
    return (command, words[used:]) if used else (None, words)


def test_hints_are_found():
    assert len(hints()) >= 10


def test_every_hint_names_a_command_and_options_that_exist():
    wrong = []
    for where, words, rest in hints():
        command, left = _resolve(words)
        if command is None:
            # prose ("kinefit version", "kinefit writes"): not a command hint
            continue
        if hasattr(command, "commands") and left and left[0] not in command.commands:
            wrong.append(f"{where}: no command {left[0]!r}")
            continue
        names = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        for token in [*left, *rest]:
            flag = token.split("=")[0]
            if flag.startswith("-") and flag not in names:
                wrong.append(f"{where}: {' '.join(words)} has no option {flag}")
    assert not wrong, "\n".join(wrong)


def test_the_qpos_hint_names_the_body_plan_option():
    assert any("kinefit fit --body-plan robot.xml" in w for w, _, _ in hints())
