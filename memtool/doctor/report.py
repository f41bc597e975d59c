"""What `memory doctor` hands back: a Report of the Problems found, with what `--fix` did about them.

The CLI renders it (memtool/cli/doctor.py) or prints it as JSON (Report.to_dict).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

ERROR, WARNING = "error", "warning"


@dataclass
class Problem:
    kind: str  # temp, forget, unparsable, conflict, misplaced, duplicate, index, orphan, embedding, pending, config, unsafe
    path: str  # relative to the memory root
    message: str
    line: int | None = None
    severity: str = ERROR
    fix: str = ""  # what `--fix` does about it; empty when it needs a person

    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass
class Report:
    root: str  # the fields in the order Report.to_dict gives them
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not any(p.severity == ERROR for p in self.problems)

    def add(self, *args, **kw) -> None:
        """Report a Problem(*args, **kw)."""
        self.problems.append(Problem(*args, **kw))

    def of(self, *kinds: str) -> list[Problem]:
        return [p for p in self.problems if p.kind in kinds]

    def to_dict(self) -> dict:
        return {"root": self.root, "healthy": self.healthy, **asdict(self)}
