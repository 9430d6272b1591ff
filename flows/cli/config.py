"""``kinefit config show`` and ``kinefit body-plan validate|show``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.tree import Tree

from flows.cli.common import ConfigOption, SetOption, Verbose, guard, load_plan
from flows.cli.output import console, q, say

config_app = typer.Typer(
    rich_markup_mode=None,
    help="Run configs: show the effective settings.",
    no_args_is_help=True,
    add_completion=False,
)
body_plan_app = typer.Typer(
    rich_markup_mode=None,
    help="Body plans: validate a file, show its joints and DOFs.",
    no_args_is_help=True,
    add_completion=False,
)
PlanArgument = Annotated[str, typer.Argument(help="Body-plan JSON file, or 'mannequin'.")]


@config_app.command("show")
def show_config(
    config: ConfigOption = None,
    set_: SetOption = None,
    format: Annotated[str, typer.Option(help="Output format: yaml or json.")] = "yaml",
    verbose: Verbose = False,
) -> None:
    """Print the effective run config, every default filled in and every path absolute.

    Without --config: the built-in default (pipeline/config/shipped/default.yaml, the demo's).
    """
    with guard(verbose):
        import json

        from pipeline.config import default_config_path, load_run_config
        from pipeline.config.config_files import dump_yaml

        if format not in ("yaml", "json"):
            raise typer.BadParameter(f"{format!r}; valid: yaml, json", param_hint="--format")
        run = load_run_config(config, assignments=set_ or ())
        data = run.model_dump(mode="json")
        source = config or default_config_path()
        if format == "json":
            typer.echo(json.dumps(data, indent=2))
        else:
            typer.echo(f"# effective run config of {source}\n" + dump_yaml(data), nl=False)


def _limits(dof: Any) -> str:
    if dof.limits is None:
        return "free"
    lo, hi = dof.limits
    if dof.type in ("slide", "prismatic"):
        return f"[{lo:g}, {hi:g}]"
    return f"[{math.degrees(lo):.0f}°, {math.degrees(hi):.0f}°]"


def plan_tree(plan: Any, title: str) -> Tree:
    """A rich tree of the plan's joints (kind, DOFs with their limits)."""
    tree = Tree(f"[bold]{title}[/]")
    nodes: dict[str, Tree] = {}
    for joint in plan.joints:
        kind = joint.kind.kind if getattr(joint, "kind", None) else "dofs"
        parts = []
        for d in joint.dofs:
            short = (d.name or d.type).removeprefix(f"{joint.name}/")
            if d.type == "swing" and getattr(joint.kind, "swing_limit", None):
                cone = "x".join(f"{math.degrees(a):.0f}" for a in joint.kind.swing_limit)
                parts.append(f"{short} (cone {cone}°)")
            else:
                parts.append(f"{short} {_limits(d)}")
        dofs = ", ".join(parts)
        label = f"[bold]{joint.name}[/] [dim]{kind}[/]" + (f": {dofs}" if dofs else "")
        parent = nodes.get(joint.parent) if joint.parent else None
        nodes[joint.name] = (parent or tree).add(label)
    return tree


@body_plan_app.command("show")
def show_plan(plan: PlanArgument, verbose: Verbose = False) -> None:
    """Show a body plan as a tree of joints with their DOFs and limits."""
    with guard(verbose):
        body = load_plan(plan)
        base = "fixed base" if body.fixed_base else "free base (6 root DOFs)"
        console.print(plan_tree(body, f"{Path(plan).name}: {base}"))
        unit = body.unit or 'unknown (say it with "unit" in version 2, "x-unit" in version 1)'
        say(f"{body.n_joints} joints, {body.n_dofs} DOFs, length unit: {unit}")


@body_plan_app.command("validate")
def validate_plan(plan: PlanArgument, verbose: Verbose = False) -> None:
    """Check a body plan file; print its size and sha256 (exit 1 if it is invalid)."""
    with guard(verbose):
        from pipeline.bodyplan import body_plan_sha256

        body = load_plan(plan)
        say(
            f"[green]valid[/] {q(plan)}: {body.n_joints} joints, {body.n_dofs} DOFs, "
            f"{'fixed' if body.fixed_base else 'free'} base, sha256 {body_plan_sha256(body)[:16]}"
        )
