"""What every command module shares: the memory root, JSON and line output, progress bars, the error mapping.

Every line for the terminal goes through `echo` (or `markup`, for rich): text from a file, a
transcript or a clone is printed with its control characters shown, not acted on
(memtool.quoting.terminal_safe). `print_json` writes JSON as it is (JSON escapes them itself)."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import typer
from typer.core import TyperGroup

from memtool.errors import MemtoolError
from memtool.quoting import terminal_safe

if TYPE_CHECKING:
    from pathlib import Path

    from memtool.store import Layout


class MemtoolGroup(TyperGroup):
    """Maps domain errors to one message on stderr and their exit code, for every subcommand."""

    def invoke(self, ctx: Any) -> Any:  # typer's own click Context
        try:
            return super().invoke(ctx)
        except MemtoolError as exc:
            echo(f"error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None


def command_group(help: str) -> typer.Typer:
    """A typer app for a group of commands, mapping domain errors like every other."""
    return typer.Typer(cls=MemtoolGroup, help=help, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


def root_of(ctx: typer.Context) -> str | None:
    while ctx.parent is not None and not (ctx.obj or {}).get("root"):
        ctx = ctx.parent
    return (ctx.obj or {}).get("root")


def root_path(ctx: typer.Context) -> "Path":
    from memtool.app import resolve_root

    return resolve_root(root_of(ctx))


def layout_of(ctx: typer.Context, require: bool = True) -> "Layout":
    """The memory root's layout; with `require`, checked to be a memory root in the current layout."""
    from memtool.store import Layout

    layout = Layout(root_path(ctx))
    return layout.require() if require else layout


PERSONAL_HELP = "Write to your personal memory ($XDG_DATA_HOME/memtool, setting personal_root), not the project's: read beside every project, never in its git."
PERSONAL_READ_HELP = "Read your personal memory ($XDG_DATA_HOME/memtool, setting personal_root) instead of the project's; `memory init --personal` makes it."
PRIVATE_HELP = (
    "Keep it on this machine: stored under memory/.private/ (ignored by git), marked private in search and context, "
    "left out of backups and exports unless --include-private."
)


def open_from(ctx: typer.Context, **kw):
    from memtool.app import open_memory

    return open_memory(root_of(ctx), **kw)


def print_json(data: Any) -> None:
    """`data` as JSON; a result dataclass goes by its `to_dict` if it has one, else field by field."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=_plain) + "\n")


def _plain(obj: Any) -> Any:
    return obj.to_dict() if hasattr(obj, "to_dict") else asdict(obj) if is_dataclass(obj) and not isinstance(obj, type) else str(obj)


def echo(text: str = "", err: bool = False) -> None:
    """One line (or more) to stdout or stderr, safe for the terminal."""
    typer.echo(terminal_safe(str(text)), err=err)


def echo_lines(lines: Iterable[str], err: bool = False) -> None:
    for line in lines:
        echo(line, err=err)


def markup(text: str) -> str:
    """Stored text inside rich markup: shown as typed ("[brackets]" stay), safe for the terminal."""
    from rich.markup import escape

    return escape(terminal_safe(text))


def console():
    from rich.console import Console

    return Console()


@contextmanager
def progress_bar(label: str, total: int, shown: bool) -> Iterator[Callable[[int], None] | None]:
    """A transient progress bar while the block runs; yields its advance(n), or None when not `shown`."""
    if not shown:
        yield None
        return
    from rich.progress import Progress

    with Progress(console=console(), transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def warn(*messages: str) -> None:
    for message in messages:
        echo(f"warning: {message}", err=True)
