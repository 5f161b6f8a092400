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

# The integration tests export spans to a real OTLP collector: rotel-agent, shipped in
# the rotel package of the dev extra.  Under CI a missing collector fails the run here,
# before anything else; elsewhere those tests are skipped (pytest says so).
ROTEL_AGENT="$(.venv/bin/python - <<'PY'
import importlib.util, os, pathlib, shutil
spec = importlib.util.find_spec("rotel")
found = ""
for location in (spec.submodule_search_locations or []) if spec else []:
    candidate = pathlib.Path(location) / "rotel-agent"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        found = str(candidate)
        break
print(found or shutil.which("rotel-agent") or "")
PY
)"
if [ -z "$ROTEL_AGENT" ] || ! "$ROTEL_AGENT" version >/dev/null 2>&1; then
    echo "scripts/test.sh: rotel-agent (the OTLP collector of the rotel package in the dev" \
        "extra) is missing or does not run here${ROTEL_AGENT:+ ($ROTEL_AGENT)}" >&2
    if [ "${CI:-}" = "true" ]; then
        echo "scripts/test.sh: CI=true: the integration tests need it; stopping" >&2
        exit 1
    fi
    echo "scripts/test.sh: the integration tests that need it will be skipped" >&2
fi

# The MCP gateway's integration tests put real npm MCP servers behind the proxy
# (tests/mcp_servers/package.json, versions pinned by its package-lock.json).  Under CI
# a failed install fails the run here; elsewhere those tests are skipped.
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1 \
    && npm ci --prefix tests/mcp_servers --no-audit --no-fund --loglevel=error >/dev/null; then
    :
else
    echo "scripts/test.sh: the npm MCP servers (tests/mcp_servers) could not be installed:" \
        "node and npm are needed" >&2
    if [ "${CI:-}" = "true" ]; then
        echo "scripts/test.sh: CI=true: the MCP gateway's integration tests need them; stopping" >&2
        exit 1
    fi
    echo "scripts/test.sh: the tests that need them will be skipped" >&2
fi

# The fleet tests (tests/fleet) start real redis-server processes on loopback ports:
# install Debian's redis-server when it is missing.  Under CI a failed install fails the
# run here; elsewhere those tests are skipped.
if ! command -v redis-server >/dev/null 2>&1; then
    { apt-get update -qq && apt-get install -y -qq redis-server; } >/dev/null 2>&1 || true
fi
if ! command -v redis-server >/dev/null 2>&1; then
    echo "scripts/test.sh: redis-server is missing and could not be installed with apt" \
        "(apt-get install redis-server, as root)" >&2
    if [ "${CI:-}" = "true" ]; then
        echo "scripts/test.sh: CI=true: the fleet's integration tests need it; stopping" >&2
        exit 1
    fi
    echo "scripts/test.sh: the tests that need it will be skipped" >&2
fi

# The approvals inbox's page is tested in a real headless browser (tests/inbox): install
# Debian's chromium and chromium-driver when either is missing.  Under CI a failed
# install fails the run here; elsewhere those tests are skipped.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    { apt-get update -qq && apt-get install -y -qq chromium chromium-driver; } >/dev/null 2>&1 \
        || true
fi
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    echo "scripts/test.sh: chromium or chromedriver is missing and could not be installed" \
        "with apt (apt-get install chromium chromium-driver, as root)" >&2
    if [ "${CI:-}" = "true" ]; then
        echo "scripts/test.sh: CI=true: the inbox's browser tests need them; stopping" >&2
        exit 1
    fi
    echo "scripts/test.sh: the tests that need them will be skipped" >&2
fi

# The sandbox tests (tests/sandbox, tests/adapters/test_mcp_sandbox.py) run commands under
# bubblewrap, and reach loopback servers with curl: install Debian's bubblewrap and curl
# when missing.  Under CI a missing bwrap, or one that cannot create its namespaces here
# (no unprivileged user namespaces), fails the run here; elsewhere those tests are skipped.
if ! command -v bwrap >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
    { apt-get update -qq && apt-get install -y -qq bubblewrap curl; } >/dev/null 2>&1 || true
fi
if ! bwrap --ro-bind / / --unshare-all --die-with-parent --new-session true >/dev/null 2>&1 \
    || ! command -v curl >/dev/null 2>&1; then
    echo "scripts/test.sh: bubblewrap (bwrap) or curl is missing and could not be installed" \
        "with apt (apt-get install bubblewrap curl, as root), or bwrap cannot create its" \
        "namespaces here (unprivileged user namespaces are off)" >&2
    if [ "${CI:-}" = "true" ]; then
        echo "scripts/test.sh: CI=true: the sandbox's tests need them; stopping" >&2
        exit 1
    fi
    echo "scripts/test.sh: the tests that need them will be skipped" >&2
fi

.venv/bin/python -m ruff check .
.venv/bin/python -m ruff format --check .
.venv/bin/python -m mypy
exec .venv/bin/python -m pytest "$@"
