"""The rules every subcommand shares: bad input is a ``UsageError`` (``main`` prints it
as one line and exits 2), and ``--help`` ends with the command's exit codes."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TypeAlias

from ..errors import UsageError

__all__ = ["Help", "Parser", "Subparsers", "command", "existing", "positive", "usage"]

#: what ``add_parser`` functions receive: the ``interpose`` parser's subcommands
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class Parser(argparse.ArgumentParser):
    """argparse's parser, refusing bad arguments in one line like every other bad input:
    ``interpose demo: argument --otlp-protocol: invalid choice: 'x' (choose from 'http',
    'grpc'); see interpose demo --help``, exit 2 (argparse prints the usage line first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}; see {self.prog} --help\n")


def usage(message: str) -> UsageError:
    """The error a subcommand raises for bad input (``main`` prints it, exits 2)."""
    return UsageError(message)


def positive(kind: type[int] | type[float]) -> Callable[[str], float]:
    """An argparse ``type=``: a number above 0."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"expected a number above 0, got {text}")
        return value

    return parse


def existing(file: str) -> None:
    """A config file given on the command line exists (else exit 2, not 1: there is
    nothing to validate)."""
    if not Path(file).is_file():
        what = "a directory, not a file" if Path(file).is_dir() else "no such file"
        raise usage(f"{file}: {what}")


class Help(argparse.RawDescriptionHelpFormatter):
    """Each line of a description or epilog wrapped on its own, so the exit codes keep
    one line per code (an indented line's continuation under its meaning)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        return "\n".join(
            textwrap.fill(
                line,
                width,
                initial_indent=indent,
                subsequent_indent=indent + (" " * 5 if line.startswith("  ") else ""),
            )
            for line in text.splitlines()
        )


def command(
    sub: Subparsers,
    name: str,
    summary: str,
    description: str,
    exits: str,
) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` says what it does and how it exits (``exits``: one
    ``  N  meaning`` line per code)."""
    return sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog="exit codes:\n" + exits,
        formatter_class=Help,
    )
