"""False refusals of the command guard on real-world example commands.

What it measures: how many of the example shell commands that two cheat-sheet packages
on PyPI ship the command-safety guard refuses (``analyze_command(command)`` returns a
finding), the rate -- blocked and asked apart: a rule that asks (``decisions.DEFAULTS``)
refuses until a person says yes --, and the refused commands grouped by the rule that
refused them.
The target (issues 10 and 28) is at most 0.1% refused falsely. A refusal is not
necessarily false: the sheets also show ``shred`` onto a disk, ``cat ~/.netrc`` and a
reverse shell. Those were reviewed by hand, one by one, and are listed with why in
``benchmarks/data/real_world_dangerous.json``: a refusal of a listed command is meant; any
other refusal counts as false until someone reviews it and lists it. A listed command the
guard lets through is printed too (a danger it no longer sees).

The data is not part of this repository. It comes from the source distributions of

- ``cheat==2.5.1`` (``cheat/cheatsheets/<page>``: a ``#`` comment, then the command),
- ``eg==1.2.3`` (``eg/examples/<page>.md``: commands in indented code blocks; in a
  block that shows a prompt, only the ``$ `` lines are commands, the rest is output),

about 3,000 commands for some 250 programs. The tldr pages would be larger, but no
package on PyPI, npm or Debian ships them: the ``tldr`` clients there download the pages
at run time. Get the two archives once with the ordinary client, then run the script::

    python -m pip download --no-deps -d ~/.cache/interpose/guard-real-world \\
        cheat==2.5.1 eg==1.2.3
    python benchmarks/guard_real_world.py [--dir DIR] [--download] [--examples N]

(``--download`` runs that ``pip download`` for you.) The archives are read in place,
nothing is unpacked. How a line becomes a command:

- blank lines and ``#`` comments are skipped; a line ending in ``\\`` is joined to the
  next;
- a line counts as a command only if its command word (after ``sudo``, ``$ `` and
  ``VAR=value`` prefixes) names a page of either package: sheets also hold key bindings
  (``vim``, ``tmux``), program code (``python``, ``perl``) and output, and those lines
  are not shell commands; how many were skipped is printed;
- in a line that ``bash -n`` rejects, placeholders such as ``<package name>`` become a
  word (``package_name``): as written they are redirections, and the shell would refuse
  them before the guard did (a line bash reads as it is, such as a ``tcpdump`` filter
  with ``<<``, is left alone);
- a line that ``bash -n`` still rejects is not counted (a sheet's multi-line loop cut
  into lines, a note after the command): the shell would not run it, so refusing it is
  no false refusal; how many is printed;
- duplicates are counted once.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from interpose.middleware.builtins.command_safety import analyze_command
from interpose.middleware.builtins.command_safety.decisions import DEFAULTS

PACKAGES = {"cheat": "2.5.1", "eg": "1.2.3"}
REVIEWED = Path(__file__).resolve().parent / "data" / "real_world_dangerous.json"
DEFAULT_DIR = Path.home() / ".cache" / "interpose" / "guard-real-world"
TARGET = 0.001

CHEAT_PAGES = re.compile(r"^cheat-[^/]+/cheat/cheatsheets/([^/]+)$")
EG_PAGES = re.compile(r"^eg-[^/]+/eg/examples/([^/]+)\.md$")
PLACEHOLDER = re.compile(r"<([^<>\s](?:[^<>]*[^<>\s])?)>")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")


@dataclass(frozen=True)
class Example:
    source: str  # "cheat/<page>" or "eg/<page>"
    command: str


def archive(directory: Path, name: str) -> Path:
    """The sdist of one package in ``directory``.

    Raises:
        FileNotFoundError: it is not there (run with ``--download``).
    """
    path = directory / f"{name}-{PACKAGES[name]}.tar.gz"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run with --download, or see the docstring")
    return path


def pages(path: Path, pattern: re.Pattern[str]) -> Iterator[tuple[str, str]]:
    """Yield ``(page name, text)`` for each member of the archive matching ``pattern``."""
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            match = pattern.match(member.name)
            if match is None or not member.isfile():
                continue
            handle = tar.extractfile(member)
            if handle is not None:
                yield match.group(1), handle.read().decode("utf-8", errors="replace")


def joined(lines: list[str]) -> Iterator[str]:
    """The lines with backslash continuations joined."""
    pending = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def cheat_lines(text: str) -> Iterator[str]:
    """The non-comment lines of a cheat sheet."""
    for line in joined(text.splitlines()):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yield stripped


def eg_lines(text: str) -> Iterator[str]:
    # a code block is a run of lines indented by four spaces; blank lines do not end it,
    # prose does
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("    "):
            current.append(line[4:].rstrip())
        elif line.strip() and current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    for block in blocks:
        if any(entry.startswith("$ ") for entry in block):
            block = [entry[2:] for entry in block if entry.startswith("$ ")]
        yield from (entry.strip() for entry in joined(block) if entry.strip())


def command_word(command: str) -> str:
    """The program a command line starts with, past ``sudo``, ``$`` and assignments."""
    words = command.split()
    while words and (words[0] in ("sudo", "$") or ASSIGNMENT.match(words[0])):
        words = words[1:]
    return words[0] if words else ""


def bash_parses(command: str) -> bool:
    """Whether bash reads ``command`` without a syntax error (``bash -n``: nothing runs)."""
    run = subprocess.run(["bash", "-n", "-c", command], capture_output=True, check=False)
    return run.returncode == 0


def examples(directory: Path) -> tuple[list[Example], int, int]:
    """The commands of both packages, how many lines were not commands and how many
    were not valid shell.

    Raises:
        FileNotFoundError: an archive is missing.
    """
    raw: list[tuple[str, str]] = []
    for page, text in pages(archive(directory, "cheat"), CHEAT_PAGES):
        raw.extend((f"cheat/{page}", line) for line in cheat_lines(text))
    for page, text in pages(archive(directory, "eg"), EG_PAGES):
        raw.extend((f"eg/{page}", line) for line in eg_lines(text))
    known = {source.split("/", 1)[1] for source, _ in raw}
    found: dict[str, Example] = {}
    skipped = invalid = 0
    for source, line in raw:
        if command_word(line) not in known:
            skipped += 1
            continue
        command = line
        if not bash_parses(command):
            command = PLACEHOLDER.sub(lambda m: re.sub(r"\W+", "_", m.group(1)), line)
            if not bash_parses(command):
                invalid += 1
                continue
        found.setdefault(command, Example(source, command))
    return list(found.values()), skipped, invalid


def download(directory: Path) -> None:
    """Fetch the two sdists with pip.

    Raises:
        subprocess.CalledProcessError: pip failed.
    """
    directory.mkdir(parents=True, exist_ok=True)
    specs = [f"{name}=={version}" for name, version in PACKAGES.items()]
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
    subprocess.run([*pip, "-d", str(directory), *specs], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where the sdists are")
    parser.add_argument("--download", action="store_true", help="pip download them first")
    parser.add_argument(
        "--examples", type=int, default=0, help="print at most N refused commands per rule (0: all)"
    )
    args = parser.parse_args()
    if args.download:
        download(args.dir)
    try:
        commands, skipped, invalid = examples(args.dir)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 2

    refused: dict[str, list[tuple[Example, str]]] = defaultdict(list)
    for example in commands:
        finding = analyze_command(example.command)
        if finding is not None:
            refused[finding.rule].append((example, finding.message))

    sources = Counter(example.source.split("/", 1)[0] for example in commands)
    n_refused = sum(len(entries) for entries in refused.values())
    dangerous = reviewed()
    meant = {e.command for entries in refused.values() for e, _ in entries} & dangerous
    false = n_refused - len(meant)
    rate = false / len(commands)
    print(
        f"guard on real-world examples: {len(commands)} commands "
        f"({', '.join(f'{name} {n}' for name, n in sorted(sources.items()))}; "
        f"skipped: {skipped} lines that are not commands, {invalid} that bash rejects)"
    )
    verdict = "PASS" if rate <= TARGET else "MISS"
    asked = sum(len(e) for rule, e in refused.items() if DEFAULTS.get(rule) == "ask")
    print(
        f"refused {n_refused} ({n_refused / len(commands):.2%}: blocked {n_refused - asked}, "
        f"asked {asked}); reviewed as dangerous {len(meant)}; false refusals {false} "
        f"({rate:.2%}); target <= {TARGET:.1%}: {verdict}"
    )
    for rule, entries in sorted(refused.items(), key=lambda item: -len(item[1])):
        print(f"  {rule} ({DEFAULTS.get(rule, 'block')}): {len(entries)}")
        shown = entries if args.examples <= 0 else entries[: args.examples]
        for example, message in shown:
            mark = "reviewed" if example.command in dangerous else "FALSE?"
            print(f"    [{example.source}] {example.command}  ({mark})")
            print(f"        {message}")
    seen = {example.command for example in commands}
    missed = sorted(c for c in dangerous & seen if c not in meant)
    for command in missed:
        print(f"  listed as dangerous, allowed: {command}")
    return 0


def reviewed() -> set[str]:
    """The commands of ``REVIEWED``: example commands a refusal of which is meant."""
    with REVIEWED.open(encoding="utf-8") as f:
        return {entry["command"] for entry in json.load(f)["commands"]}


if __name__ == "__main__":
    sys.exit(main())
