"""Cost of the secret detector (interpose.secrets), in one run.

What it measures (ns per call; every case is an ``async def loop(n)`` timed inside the
coroutine, like the other benchmarks, and calls a sync function ``n`` times):

- floor: ``await tool(args)``, where ``async def tool(args): return args``;
- ``scan_args`` of a clean short argument dict (an email to send: recipient, subject,
  a two-sentence body, an empty cc list; personal data not asked for): what a flow
  check adds to each sink call; target: at most 5 µs;
- ``scan`` of a clean 1 KB tool result (prose, a directory listing and a few lines of
  Python); target: at most 25 µs;
- ``scan`` of a clean 16 KB text (the 1 KB text and fifteen more of the same shapes);
  target: at most 400 µs (per KB the same as 1 KB: nothing is quadratic);
- ``scan`` of the 1 KB text with three secrets in it (a GitHub token, an AWS key pair,
  a password in a URL), which runs the recognizers' checks; informational;
- ``scan`` of the clean 1 KB text with every PII kind on; informational (PII scanning
  is opt-in and costs more: digits are everywhere);
- ``RedactSecrets.scrub`` of a clean MCP-shaped result holding the 1 KB text: the
  redaction policy's walk plus the scan; informational;
- ``env_secrets`` of a 12-line ``.env``; informational.

Every case is checked once before timing (the clean texts have no match, the text with
secrets has exactly its three kinds).

Methodology: ``harness.py``'s (calibrated loops, warm-up, rounds in a shuffled order
with the garbage collector off, a case's number the median over rounds).

Run it with ``python benchmarks/bench_secrets.py [--quick] [--json out.json]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import harness
from harness import Case, Loop, Row

from interpose.middleware.builtins import RedactSecrets
from interpose.secrets import env_secrets, scan, scan_args

SHORT_TARGET_NS = 5_000.0
KB_TARGET_NS = 25_000.0
KB16_TARGET_NS = 400_000.0

SHORT_ARGS: dict[str, Any] = {
    "to": "team@example.com",
    "subject": "Weekly report",
    "body": "Hi all, the numbers for this week are attached. Thanks for the reviews!",
    "cc": [],
}

CLEAN_1K = (
    "The build finished in 4m12s. 128 tests passed, 3 were skipped on this platform.\n"
    "drwxr-xr-x  5 dev dev  4096 Nov 29 10:41 src\n"
    "-rw-r--r--  1 dev dev  1532 Nov 29 10:41 README.md\n"
    "-rw-r--r--  1 dev dev   311 Nov 29 10:41 pyproject.toml\n"
    "def load(path: str) -> dict[str, int]:\n"
    "    with open(path, encoding='utf-8') as f:\n"
    "        return {line.split('=')[0]: int(line.split('=')[1]) for line in f}\n"
    "Next: review the pull request, update the changelog and tag release 2.4.1 on "
    "2024-01-15. The deploy goes to staging first; ask ops before production.\n"
)
CLEAN_1K = (CLEAN_1K * 3)[:1024]
CLEAN_16K = "".join(CLEAN_1K.replace("4096", str(4096 + i)) for i in range(16))

GITHUB = "ghp_" + "q7Rk2LmZ9xTb" * 3
AWS_ID, AWS_SECRET = "AKIA" + "Z3MBTQ7KXPL4VW2N", "k9Xq2Lm7Tb4Wc1Vd8Ze5Yf3Ug6Sh0Ri2Pj7On4Qa"
SECRETS_1K = (
    f"token {GITHUB}\naws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET}\n"
    "db: postgres://app:Tr0ub4dor-x9@db.internal/app\n" + CLEAN_1K
)[:1024]

ENV = "\n".join(
    [
        "APP_ENV=production",
        "DEBUG=false",
        "PORT=8080",
        "DATABASE_URL=postgres://app:Tr0ub4dor-x9@db.internal/app",
        "DATABASE_PASSWORD=s3cret-Passw0rd",
        f"GITHUB_TOKEN={GITHUB}",
        f"AWS_ACCESS_KEY_ID={AWS_ID}",
        f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
        "LOG_LEVEL=info",
        "WEBHOOK_SALT=Zk3f9QmX2pL8vR4tYb7WqE",
        "FEATURE_FLAGS=search,export",
        "TIMEZONE=UTC",
    ]
)


def sync_case(call: Callable[[], object]) -> Loop:
    """``call()`` n times inside an ``async def``, timed with harness.clock."""

    async def loop(n: int) -> int:
        clock = harness.clock
        start = clock()
        for _ in range(n):
            call()
        return clock() - start

    return loop


def check() -> None:
    """The cases do what they say before anything is timed.

    Raises:
        RuntimeError: a clean text has a match, or the text with secrets is misread.
    """
    for text in (CLEAN_1K, CLEAN_16K):
        if scan(text) or scan(text, pii=True):
            raise RuntimeError(f"a clean text has matches: {scan(text, pii=True)}")
    if scan_args(SHORT_ARGS):
        raise RuntimeError("the short arguments have matches")
    kinds = sorted(m.kind for m in scan(SECRETS_1K))
    if kinds != ["aws-access-key", "aws-secret-key", "github", "url-password"]:
        raise RuntimeError(f"the text with secrets reads as {kinds}")
    if len(env_secrets(ENV)) != 6:
        raise RuntimeError(f".env secrets: {sorted(env_secrets(ENV))}")


def build_cases() -> list[Case]:
    policy = RedactSecrets()
    mcp_result = {"content": [{"type": "text", "text": CLEAN_1K}], "isError": False}
    return [
        Case("floor", "floor: await tool(args)", harness.floor_case(SHORT_ARGS)),
        Case("short", "scan_args(clean short args)", sync_case(lambda: scan_args(SHORT_ARGS))),
        Case("k1", "scan(clean 1 KB)", sync_case(lambda: scan(CLEAN_1K))),
        Case("k16", "scan(clean 16 KB)", sync_case(lambda: scan(CLEAN_16K))),
        Case("secrets", "scan(1 KB, 4 secrets)", sync_case(lambda: scan(SECRETS_1K))),
        Case("pii", "scan(clean 1 KB, pii=True)", sync_case(lambda: scan(CLEAN_1K, pii=True))),
        Case(
            "policy", "RedactSecrets.scrub(MCP 1 KB)", sync_case(lambda: policy.scrub(mcp_result))
        ),
        Case("env", "env_secrets(12-line .env)", sync_case(lambda: env_secrets(ENV))),
    ]


def rows_of(t: Mapping[str, float], cases: Sequence[Case]) -> list[Row]:
    """The rows of one set of times per case (medians, or one round's samples).

    Raises:
        KeyError: a case the table needs was not measured.
    """
    label = {c.key: c.label for c in cases}
    floor = t["floor"]

    def row(key: str, goal: str) -> Row:
        return Row(label[key], t[key], t[key] - floor, "ns per call", t[key], None, goal)

    return [
        Row(label["floor"], floor, 0.0),
        row("short", f"<= {SHORT_TARGET_NS:g} ns"),
        row("k1", f"<= {KB_TARGET_NS:g} ns"),
        row("k16", f"<= {KB16_TARGET_NS:g} ns"),
        row("secrets", "info"),
        row("pii", "info"),
        row("policy", "info"),
        row("env", "info"),
    ]


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, check and run every case, print the table and the verdict
    (and write JSON if asked).

    Raises:
        RuntimeError: a case does not behave as expected.
        OSError: the JSON file cannot be written.
    """
    return harness.table_bench(
        __doc__,
        argv,
        "interpose bench: the secret detector",
        build_cases,
        rows_of,
        rounds=21,
        check=check,
    )


if __name__ == "__main__":
    raise SystemExit(main())
