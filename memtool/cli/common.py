"""What every command module shares: the memory root option, JSON output, the error mapping."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from typer.core import TyperGroup

from memtool.errors import MemtoolError


class MemtoolGroup(TyperGroup):
    """Maps domain errors to one message on stderr and their exit code, for every subcommand."""

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemtoolError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None


def root_of(ctx: typer.Context) -> str | None:
    while ctx.parent is not None and not (ctx.obj or {}).get("root"):
        ctx = ctx.parent
    return (ctx.obj or {}).get("root")


def open_from(ctx: typer.Context, **kw):
    from memtool.app import open_memory

    return open_memory(root_of(ctx), **kw)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def console():
    from rich.console import Console

    return Console()


def warn(message: str) -> None:
    typer.echo(f"warning: {message}", err=True)
