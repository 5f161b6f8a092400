"""The ``interpose`` command: ``interpose demo``, ``interpose bench``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]


def _find_benchmarks() -> Path | None:
    """benchmarks/ of the source checkout (editable install) or of the current directory."""
    for root in (Path(__file__).resolve().parent.parent, Path.cwd()):
        candidate = root / "benchmarks" / "bench_tool_call.py"
        if candidate.is_file():
            return candidate
    return None


def _demo(args: argparse.Namespace) -> int:
    from .agent.demo import run_demo

    code: int = run_demo(workdir=args.workdir)
    return code


def _bench(args: argparse.Namespace) -> int:
    import runpy

    script = _find_benchmarks()
    if script is None:
        print(
            "interpose bench: benchmarks/bench_tool_call.py not found; run it from a source "
            "checkout of interpose",
            file=sys.stderr,
        )
        return 2
    sys.argv = [str(script), *(["--quick"] if args.quick else [])]
    runpy.run_path(str(script), run_name="__main__")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="interpose", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run a scripted agent session through a pipeline")
    demo.add_argument("--workdir", default=None, help="scratch directory for the demo's tools")
    demo.set_defaults(func=_demo)
    bench = sub.add_parser("bench", help="measure per-tool-call overhead against its floor")
    bench.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    bench.set_defaults(func=_bench)
    args = parser.parse_args(argv)
    try:
        result: int = args.func(args)
    except BrokenPipeError:
        # the reader went away (`interpose demo | head`): stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
