#!/usr/bin/env bash
# Create the virtualenv, install interpose with its dev extra, start what the
# integration tests need, then lint, type-check and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev]'

.venv/bin/python -m ruff check .
.venv/bin/python -m ruff format --check .
.venv/bin/python -m mypy
exec .venv/bin/python -m pytest "$@"
