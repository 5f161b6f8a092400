"""``interpose bench``: run benchmarks/bench_tool_call.py (shipped in the wheel as
``interpose/_bench/``) with the command's options."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ._common import Subparsers, command, positive, usage

__all__ = ["add_parser", "find_benchmarks", "run"]


def add_parser(sub: Subparsers) -> None:
    """The ``bench`` subcommand."""
    bench = command(
        sub,
        "bench",
        "measure per-tool-call overhead against its floor",
        "Measure what interpose adds to one tool call (an empty pipeline, interceptors, "
        "middleware, tracing) against the floor and hand-written references, and print "
        "each target's verdict. A full run takes a few minutes, --quick under a minute. "
        "Needs the bench extra (pluggy, the OpenTelemetry SDK).",
        "  0  measured (whatever the verdicts)\n"
        "  2  bad input: --plot into a directory that does not exist, a format matplotlib "
        "cannot write, matplotlib or the bench extra missing\n",
    )
    bench.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    bench.add_argument("--rounds", type=positive(int), default=None, help="timed rounds per case")
    bench.add_argument(
        "--target-ms",
        type=positive(float),
        default=None,
        metavar="MS",
        help="how long one timed run of a case lasts",
    )
    bench.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time by wall time (default) or by CPU time (on a machine shared with other work)",
    )
    bench.add_argument(
        "--plot",
        metavar="PATH",
        default=None,
        help="also draw ns per call against the number of layers into PATH (needs matplotlib)",
    )
    bench.set_defaults(func=run)


def find_benchmarks() -> Path | None:
    """bench_tool_call.py: in the installed package (the wheel ships it as
    ``interpose/_bench/``), else in the source checkout's benchmarks/ (an editable
    install); wherever the command is run from."""
    here = Path(__file__).resolve().parent.parent  # interpose/
    for candidate in (
        here / "_bench" / "bench_tool_call.py",
        here.parent / "benchmarks" / "bench_tool_call.py",
    ):
        if candidate.is_file():
            return candidate
    return None


def _plot_target(path: str) -> None:
    """``bench --plot PATH``, checked before the benchmark runs: matplotlib is installed,
    PATH's directory exists and is writable, and matplotlib can write PATH's format."""
    target = Path(path).expanduser()
    parent = target.parent
    if not parent.is_dir():
        raise usage(f"--plot {path}: the directory {parent} does not exist")
    if target.is_dir():
        raise usage(f"--plot {path}: a directory, not a file")
    if not os.access(parent, os.W_OK):
        raise usage(f"--plot {path}: cannot write to {parent}")
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise usage(
            "--plot needs matplotlib: pip install 'interpose[plot]' (or pip install matplotlib)"
        ) from None
    formats = Figure().canvas.get_supported_filetypes()
    suffix = target.suffix[1:].lower()
    if suffix and suffix not in formats:
        raise usage(
            f"--plot {path}: matplotlib cannot write .{suffix} files; "
            f"use one of: {', '.join(sorted(formats))}"
        )


def run(args: argparse.Namespace) -> int:
    import runpy

    if args.plot:
        _plot_target(args.plot)
    script = find_benchmarks()
    if script is None:
        raise usage("bench_tool_call.py is not installed with this copy of interpose")
    sys.argv = [
        str(script),
        *(["--quick"] if args.quick else []),
        *(["--rounds", str(args.rounds)] if args.rounds else []),
        *(["--target-ms", str(args.target_ms)] if args.target_ms else []),
        *(["--plot", args.plot] if args.plot else []),
        *(["--clock", args.clock] if args.clock != "wall" else []),
    ]
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:  # the script's own exit status (2: --plot without matplotlib)
        return exc.code if isinstance(exc.code, int) else 1
    except ModuleNotFoundError as exc:  # pluggy, the OpenTelemetry SDK: the bench extra
        raise usage(f"the benchmark needs {exc.name}: pip install 'interpose[bench]'") from None
    return 0
