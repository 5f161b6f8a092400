"""The examples run, print what the docs say they print, and the docs quote them exactly.

Every ``examples/*.py`` is run as a subprocess (new files are picked up by the glob).
Every fenced python block in ``docs/*.md`` whose first line is ``# examples/<file>.py``
must appear in that file: the block's lines after the marker, split at lines that are
exactly ``# ...`` (an elision), must each occur in the file, in order.

Every fenced console block that the docs present as an example's output (the paragraph
before it says "`python examples/<file>.py` prints", or its first line is
``$ python examples/<file>.py``) must be that example's whole output; on the Gotchas
page, whose blocks are excerpts of ``examples/gotchas.py``, each block must be a run of
consecutive lines of its output.  Measured durations (a number followed by ``ms`` or
``us``, and the other numbers on that line) are compared as placeholders.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
DOCS = sorted((ROOT / "docs").glob("*.md"))

# What each example must print (substrings of its stdout); the docs quote these lines.
EXPECTED: dict[str, list[str]] = {
    "quickstart.py": [
        "timing: exec -> ok in",
        "result: ok ran 'ls' (timeout 30s)",
        "result: blocked {'status': 'blocked', 'tool': 'exec', "
        "'reason': 'force-pushing is not allowed'}",
        "observer: exec ok ran=['no-force-push', 'default-timeout']",
        "observer: exec blocked ran=['no-force-push']",
    ],
    "rewrite_args.py": [
        "execution order for read: ['gate', 'normalize-path', 'default-offset', 'tag', 'audit']",
        "gate       (100) sees {'path': 'src/../README.md'}",
        "audit      (-10) final read args {'path': '/workspace/README.md', 'offset': 0, "
        "'requested_by': 'coder'}",
        "tool returned: <contents of /workspace/README.md from line 0>",
    ],
    "block_and_respond.py": [
        "-> ok: '<html from https://example.net/>'",
        "tool.after: status=blocked blocked=True is_error=True",
        "-> blocked: {'status': 'blocked', 'tool': 'web_fetch', "
        "'reason': 'internal hosts are off limits'} (decided_by=no-internal-hosts)",
        "-> responded: '<cached html>' (decided_by=cache)",
        "-> responded: 'User-agent: *\\nAllow: /' (decided_by=robots)",
        "-> denied: {'status': 'denied', 'tool': 'web_fetch', "
        "'reason': 'example.org is not approved'} (decided_by=no-example-org)",
        "the tool ran for: ['https://example.net/']",
    ],
    "approval.py": [
        "-> ok: ran 'ls'",
        "-> denied: {'status': 'denied', 'tool': 'exec', 'reason': 'no sudo'}",
        "human asked about exec {'command': 'deploy staging'} (deployments need a human)",
        "-> ok: ran 'deploy staging'",
        "-> denied: {'status': 'denied', 'tool': 'exec', 'reason': 'not today'}",
        "'reason': \"approver 'slow-reviewer' did not answer within 0.2s\"}",
        "-> blocked: {'status': 'blocked', 'tool': 'exec', "
        "'reason': \"interceptor 'ticket-check' failed: KeyError: 'ticket'\"}",
        "'reason': 'approval required (deployments need a human) but no human-approval "
        "handler is set'}",
        "-> denied: {'status': 'denied', 'tool': 'exec', 'reason': \"approval required "
        "(deployments need a human): the handler failed: OSError('no terminal to ask on')\"}",
        "failures counted: {'slow-reviewer': 1, 'ticket-check': 1}",
        "timeouts counted: {'slow-reviewer': 1}",
    ],
    "middleware_timing.py": [
        "timing in: memory_search call_id=call-1\n"
        "  cache in\n"
        "    measure-tool in: wraps ctx.call\n"
        "      tool.before sees {'query': 'deploys', 'limit': 5}\n"
        "        the tool runs with {'query': 'deploys', 'limit': 5}\n"
        "      tool.after sees ['note about deploys']\n"
        "    measure-tool out\n"
        "  cache out\n"
        "timing out: ok,",
        "  cache out: short-circuit, nothing inside runs\ntiming out: responded,",
        "result: ['from the cache']",
    ],
    "observer.py": [
        "without `async with pipe`: this pipeline has subscribers",
        "kinds: ['turn_started', 'message_received', 'tool_exec_start', 'tool_exec_end', "
        "'tool_exec_skipped', 'tool_exec_end', 'tool_exec_start', 'tool_exec_end', "
        "'turn_ended']",
        "skipped: write why=blocked by=no-dotfiles",
        "reason='dotfiles are read-only' agent=coder session=s1",
        "statuses: {'ok': 2, 'blocked': 1}",
        "block policy: published=3 delivered=3 dropped=0",
        "drop_newest: delivered + dropped == published: True",
    ],
    "fleet.py": [
        "dashboard (consumer group 'dashboard'):\n"
        "  coder-1     exec  ok\n"
        "  coder-2     exec  blocked  deploys need a ticket\n"
        "  reviewer-1  exec  ok\n",
        "delivered=3 acked=4 failures=3 dead_lettered=1\nlag=0 pending=0",
        "dead letter: failed 3 times: observer run_dashboard.<locals>.show: RuntimeError: "
        "the dashboard cannot draw this one",
    ],
    "audit_log.py": [
        "published 10, dropped 0, read back 10",
        "rotated: True, in seq order: True",
        " 4 tool_exec_skipped call-2 blocked by no-rm: rm is not allowed",
        " 6 tool_exec_skipped call-3 denied by no-deploys: deploys need a ticket",
        " 9 tool_exec_end call-4 ok\n10 turn_ended",
    ],
    "logging_observer.py": [
        "interpose.events INFO turn_started agent=coder session=s1 turn=t1",
        "interpose.events INFO message_received chars=26 turn=t1",
        "interpose.events WARNING tool_exec_skipped exec call=call-1 why=blocked "
        "decided_by=no-rm reason='rm is not allowed' turn=t1",
        'json: {"tool_name": "exec", "tool_call_id": "call-1", "status": "blocked", '
        '"decided_by": "no-rm", "reason": "rm is not allowed", "session_key": "s1"}',
        "interpose.events WARNING tool_exec_end exec call=call-1 status=blocked "
        "decided_by=no-rm interceptors=no-rm reason='rm is not allowed' turn=t1",
        "interpose.events WARNING interceptor_failed tool.before ticket-check policy=skip "
        "tool=exec call=call-2 error=\"KeyError: 'env'\" handler=__main__.ticket_check "
        "defined_at=examples/logging_observer.py:34 raised_at=examples/logging_observer.py:36 "
        "turn=t1",
        "interpose.events INFO tool_exec_end exec call=call-2 status=ok duration=",
        "interpose.events INFO turn_ended duration=",
    ],
    "metrics_observer.py": [
        "gen_ai.agent.id=coder gen_ai.tool.name=exec interpose.status=blocked: 1",
        "gen_ai.agent.id=coder gen_ai.tool.name=exec interpose.status=ok: 3",
        "interpose.tool.duration (s)\n"
        "  gen_ai.agent.id=coder gen_ai.tool.name=exec interpose.status=ok: count=3\n",
        "interpose.interceptor.id=no-rm: count=6",
        "error.type=ValueError interpose.hook=tool.after interpose.interceptor.id=parse-tests "
        "interpose.policy=skip: 1",
        "interpose.subscription=sampler: 5",
    ],
    "abort_turn.py": [
        "search: results for 'msgspec'",
        "turn aborted=True reason='tool budget of 2 calls used up'",
        "call_tool: aborted {'status': 'aborted', 'tool': 'web_search', "
        "'reason': 'tool budget of 2 calls used up'}",
        "run_turn (new session): results for 'anyio'",
        "run_turn (spent session): None",
        "HardAbort: the agent tried to shut the host down (raised in kill-switch, "
        "turn aborted=True)",
        "turn_aborted events: [('s1', False), ('s1', False), ('s1', False), ('s3', True)]",
        "aborted calls: [('s1', 'web_search', 'budget'), ('s1', 'web_search', 'budget'), "
        "('s1', 'web_search', 'budget')]",
    ],
    "errors_and_timeouts.py": [
        "read: blocked {'status': 'blocked', 'tool': 'read', "
        "'reason': \"interceptor 'buggy-gate' failed: KeyError: 'path'\"}",
        "write: ok ok {'path': 'x'}",
        "slow-async: cancelled",
        "web_fetch: blocked {'status': 'blocked', 'tool': 'web_fetch', "
        "'reason': \"interceptor 'slow-async' failed: TimeoutError: timed out after 0.1s\"}",
        "web_search: ok ok {'path': 'x'}",
        "edit: raised RuntimeError('strict interceptor failed')",
        "message: raised LookupError('no profile for this user')",
        "TypeError: tool arguments must be a dict, got str",
        "failures: {'buggy-gate': 1, 'buggy-enricher': 1, 'buggy-after': 1, "
        "'slow-async': 1, 'strict': 1, 'buggy-message': 1}",
        "timeouts: {'slow-async': 1}",
        "event: tool.before slow-async policy=block timed_out=True",
        "event: message.before buggy-message policy=raise timed_out=False",
        "RegistrationError: registration 'buggy_gate': unknown tool group 'group:filesystem'",
        "registry unchanged: True",
        "log: tool.before 'buggy-gate' failed (read, policy block): KeyError: 'path'",
    ],
    "llm_stage.py": [
        "turn coder/s1 starts",
        "message='how do I run the tests?' metadata={'channel': 'cli'}",
        "params: provider=anthropic model=claude-small temp=0.2",
        "  llm.after: attempt 1 stop_reason=overloaded\n"
        "  llm.after: attempt 2 stop_reason=tool_use\n"
        "  tool Read -> ok\n"
        "  llm.after: attempt 1 stop_reason=end_turn",
        "turn ends with 'Run `make test`.'",
        "LLM requests sent: 3",
        "system prompt seen by the model: You are a careful coding agent.",
    ],
    "command_and_compact.py": [
        "-> ok: deployed to staging (dry_run=True)",
        "-> blocked: {'status': 'blocked', 'tool': 'deploy', "
        "'reason': 'prod deploys go through the release pipeline'}",
        "compact (context_full): keep=['message 5', 'message 6']",
        "summary='4 earlier messages, summarized (one line, keep file names)'",
        "summary='(summary written by the interceptor)'",
    ],
    "gotchas.py": [
        "  don't: instance says B, the call was A",
        "  do:    local says A, the call was A",
        "  tool stage: blocked, decided_by=forgetful",
        "  llm stage: raised MiddlewareError (stage='llm')",
        "  message stage, silently: 'my password is hunter2'",
        "  don't: turn aborted=False\n  do:    turn aborted=True",
        "  don't: ok after 0.2 s (timeout 0.05), ticks: 0",
        "  do:    blocked (timed out), heartbeat kept ticking: True",
        "  don't: trusted   simulator -> responded\n  do:    untrusted simulator -> denied",
        "  don't: max_retries=0: error after 1 run(s)",
        "  do:    max_retries=2: ok after 3 run(s)",
        "  don't: tools='read' also applies to spreadsheet: ['loose']",
        "  don't: name an application tool before register_tool(): RegistrationError",
        "  don't: blocked: interceptor 'rename' failed: AttributeError: immutable type",
        "  do:    read after it: 3 events",
        "  don't: sync  handler answering after 0.2 s (timeout 0.05): ok",
        "  do:    async handler answering after 0.2 s (timeout 0.05): denied",
    ],
    "export_otlp.py": [
        "call-1: ok\ncall-2: blocked",
        "invoke_agent coder\n"
        "  chat claude-x\n"
        "  execute_tool exec\n"
        "    tool.before builtin:command-safety-guard decision=continue\n"
        "    tool.before no-color decision=modify\n"
        "    tool.approve builtin:command-safety-guard.ask decision=allow\n"
        "  execute_tool exec ERROR tool_blocked: command-safety-guard: fs-destruction: "
        "rm -rf targets '/', the filesystem root (token '/')\n"
        "    tool.before builtin:command-safety-guard decision=block\n"
        "exporting 8 spans to ",
    ],
    "tool_names.py": [
        "normalize: exec apply_patch",
        "group:runtime = ['exec', 'process']",
        "BASH -> ['regex', 'alias-regex', 'list', 'every-tool']",
        "web_fetch -> ['compiled', 'every-tool']",
        "apply-patch -> ['group', 'every-tool']",
        "memory_get -> ['list', 'every-tool']",
        "tts -> ['every-tool']",
        "refused: registration 'typo': tool matcher ^shell$ matches no known or registered tool",
        "the message goes on: valid tool names: agents_list, apply_patch,",
        "register_tool: deploy",
        "deploy: ok ['every-tool', 'deploy-gate']",
    ],
    "guards.py": [
        '  allowed  exec git commit -m "rm -rf /"',
        "  BLOCKED  exec rm -rf /\n"
        "           command-safety-guard: fs-destruction: rm -rf targets '/', the filesystem root "
        "(token '/')",
        "  BLOCKED  exec D=/; rm -rf $D",
        "  allowed  read node_modules/dotenv/.env\n"
        "  BLOCKED  read node_modules/../.env\n"
        "           security-audit: env-file: 'node_modules/../.env' (normalized '.env')",
        "           command-safety-guard: extra-deny: 'terraform destroy -auto-approve' matches "
        "extra_deny pattern '^terraform destroy\\\\b'",
        "  allowed  exec docker system prune -a --volumes",
        "  allowed  read .env.ci\n  BLOCKED  read .env",
        "one guard removed\n  allowed  read .env\n  BLOCKED  exec cat .env",
        "  allowed  exec python3 -c 'import shutil, sys; shutil.rmtree(sys.argv[1])' /",
        "  allowed  exec docker run --privileged -v /:/host some/image",
    ],
    "policies.py": [
        "  web_fetch         -> blocked: tool filter: web_fetch is denied by 'web_fetch'",
        "  exec              -> blocked: tool filter: exec is not on the allow list "
        "(group:fs, group:web, /^mcp_github_/)",
        "  t=0.0s -> blocked: rate limit for exec in session s1: retry in 2.0s\n"
        "  t=1.3s -> blocked: rate limit for exec in session s1: retry in 0.7s\n"
        "  t=2.0s -> ok:",
        "  call 3 -> blocked: loop guard: exec called 3 times with the same arguments in this turn",
        "  output: {'ANTHROPIC_API_KEY': '[REDACTED]', 'AUTH': 'Bearer [REDACTED]', "
        "'EDITOR': 'vim'}\n"
        "  details: {'redacted': 2, 'redacted_kinds': {'anthropic': 1, 'pattern': 1}}",
        "  t=59.9s read  -> responded (cached 59.9s ago)\n  t=60.0s read  -> ok",
        "  t=62.0s read  -> ok\n  the read tool ran 3 times",
        "  details: {'truncated_chars': 18853}",
        "   120 builtin:tool-filter\n"
        "   105 builtin:loop-guard\n"
        "   100 builtin:command-safety-guard\n"
        "    95 builtin:rate-limit",
    ],
    "command_hook.py": [
        "command:hooks/check.sh on tool.before\n"
        "command:hooks/check.sh#2 on tool.approve\n"
        "command:hooks/check.sh#3 on tool.after",
        "bash {'command': 'git push --force origin main'} -> blocked: {'status': 'blocked', "
        "'tool': 'exec', 'reason': 'force-pushing is not allowed'}",
        "bash {'command': 'ls'} -> ok: ran {'command': 'ls --color=never'}",
        "  human asked about 'deploy staging' (deploys need a human): yes\n"
        "bash {'command': 'deploy staging'} -> ok: ran {'command': 'deploy staging'}",
        "  additional_context: ['files under gen/ are generated: edit the templates']",
        "web_fetch {'url': 'https://example.net'} -> ok:",
        "ConfigError: command hook 'hooks/missing.sh': <examples>/hooks/missing.sh does not exist",
    ],
    "config.py": [
        "exec passes through: ['builtin:tool-filter', 'builtin:loop-guard', "
        "'builtin:command-safety-guard', 'no-force-push']",
        "  exec git push --force          -> blocked by no-force-push: "
        "force-pushing is not allowed",
        "  deploy env=prod                -> denied by prod-needs-ticket: prod deploys need an OPS "
        "ticket\n  deploy env=prod ticket=OPS-42  -> ok",
        "  cron {}                        -> blocked by builtin:tool-filter: tool filter: cron is "
        "denied by 'group:automation'",
        "ConfigError: interpose.toml: hooks.commands[0].timeout_ms: expected int, got str",
        "interpose.toml: OK\n",
        "  tool   tool.approve       100  builtin:command-safety-guard.ask  exec",
        "  tool   tool.approve         0  prod-needs-ticket                 allow deploy",
        "  tool.before  no-force-push                 block     ",
        'result: blocked (decided by no-force-push) {"status": "blocked", "tool": "exec", '
        '"reason": "force-pushing is not allowed"}',
    ],
    "openai_agents_agent.py": [
        "  final output: Listed. I may not clear your home. The password is [redacted].",
        "  final output: [turn aborted: deploys are for humans]",
        "  c2: exec blocked by builtin:command-safety-guard",
        "  c3: exec aborted by no-deploys",
        "  turn_aborted coder deploys are for humans",
        "commands the tool saw: ['ls --color=never']",
        "scripted answers never asked for: 1",
    ],
    "process_hook.py": [
        "review_gate is up: it calls itself 'review_gate'",
        "git status        -> ok: ran 'git status' (timeout 30s)",
        "git push --force  -> blocked: force-pushing rewrites shared history; push without --force",
        "deploy prod       -> denied: production deploys need a change ticket",
        "whoami            -> responded: agent coder in session s1",
        "legacy running: False\nread notes.md     -> ok: ran 'notes.md'",
        "interceptor_failed: process:legacy:before_tool policy=skip\n"
        "  ProcessHookError: process hook 'legacy' is not running (handshake failed: "
        "the child speaks protocol_version 2, this side speaks 1)",
        "the gate saw: tool_exec_end exec ok | tool_exec_end exec blocked | "
        "tool_exec_end exec denied | tool_exec_end whoami responded | tool_exec_end read ok",
    ],
}

_FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
_MARKER = re.compile(r"#\s*(examples/[\w.-]+\.py)\s*$")


def _quoted_blocks() -> list[tuple[str, str, str]]:
    """(doc page, example path, block body) for every block marked as an example quote."""
    found = []
    for doc in DOCS:
        for match in _FENCE.finditer(doc.read_text(encoding="utf-8")):
            first, _, body = match.group(1).partition("\n")
            marker = _MARKER.fullmatch(first.strip())
            if marker is not None:
                found.append((doc.name, marker.group(1), body))
    return found


_CONSOLE = re.compile(r"^```console\n(.*?)^```", re.MULTILINE | re.DOTALL)
_PRINTS = re.compile(r"`python (examples/[\w.-]+\.py)`[^`]*\bprints\b")
_COMMAND = re.compile(r"\$ python (examples/[\w.-]+\.py)")
_DURATION = re.compile(r"\d (?:ms|us)\b")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# pages whose console blocks are excerpts of one example's output
_EXCERPT_PAGES = {"gotchas.md": "examples/gotchas.py"}


# examples that need a part from outside Python, and how to tell it is there
NEEDS: dict[str, tuple[str, bool]] = {
    "fleet.py": (
        "redis-server (scripts/test.sh installs it) or INTERPOSE_REDIS_URL",
        bool(shutil.which("redis-server") or os.environ.get("INTERPOSE_REDIS_URL")),
    ),
}


@functools.cache
def _run(example: str) -> subprocess.CompletedProcess[str]:
    """Run ``examples/<example>`` once per test session and return the finished process.

    An example whose outside part is missing is skipped, except under CI (``CI=true``),
    where that fails the test.
    """
    what, present = NEEDS.get(example, ("", True))
    if not present:
        message = f"examples/{example} needs {what}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / example)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _normalized_lines(text: str) -> list[str]:
    """The lines of ``text``, with every number on a line that reports a duration
    replaced by ``N`` (durations vary from run to run)."""
    return [
        _NUMBER.sub("N", line) if _DURATION.search(line) else line
        for line in text.strip("\n").splitlines()
    ]


def _output_blocks() -> list[tuple[str, str, bool, str]]:
    """(doc page, example path, whole output?, block body) for every console block that
    the docs present as an example's output."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in _CONSOLE.finditer(text):
            body = match.group(1)
            first, _, rest = body.partition("\n")
            command = _COMMAND.fullmatch(first.strip())
            intro = text[: match.start()].rstrip("\n").rpartition("\n\n")[2]
            prints = _PRINTS.search(" ".join(intro.split()))
            if command is not None:
                found.append((doc.name, command.group(1), True, rest))
            elif prints is not None:
                found.append((doc.name, prints.group(1), True, body))
            elif doc.name in _EXCERPT_PAGES:
                found.append((doc.name, _EXCERPT_PAGES[doc.name], False, body))
    return found


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_and_prints_what_the_docs_promise(example: Path) -> None:
    proc = _run(example.name)
    assert proc.returncode == 0, f"{example.name} failed:\n{proc.stdout}\n{proc.stderr}"
    missing = [line for line in EXPECTED.get(example.name, []) if line not in proc.stdout]
    assert not missing, f"{example.name} did not print {missing!r}; it printed:\n{proc.stdout}"


def test_expectation_table_names_existing_examples() -> None:
    names = {p.name for p in EXAMPLES}
    assert set(EXPECTED) <= names, f"no such example: {sorted(set(EXPECTED) - names)}"


def test_every_example_has_a_docstring() -> None:
    for example in EXAMPLES:
        text = example.read_text(encoding="utf-8")
        assert text.startswith('"""'), f"{example.name} does not open with a module docstring"


@pytest.mark.parametrize(
    ("page", "source", "body"),
    [
        pytest.param(page, source, body, id=f"{page}-{n}-{Path(source).name}")
        for n, (page, source, body) in enumerate(_quoted_blocks(), 1)
    ],
)
def test_docs_quote_examples_verbatim(page: str, source: str, body: str) -> None:
    path = ROOT / source
    assert path.is_file(), f"{page} quotes {source}, which does not exist"
    text = path.read_text(encoding="utf-8")
    chunks = re.split(r"^# \.\.\.\n", body, flags=re.MULTILINE)
    position = 0
    for chunk in chunks:
        if not chunk.strip():
            continue
        found = text.find(chunk, position)
        assert found >= 0, f"{page}: this block does not appear (in order) in {source}:\n{chunk}"
        position = found + len(chunk)


@pytest.mark.parametrize(
    ("page", "source", "whole", "body"),
    [
        pytest.param(page, source, whole, body, id=f"{page}-{n}-{Path(source).name}")
        for n, (page, source, whole, body) in enumerate(_output_blocks(), 1)
    ],
)
def test_docs_quote_example_output_verbatim(page: str, source: str, whole: bool, body: str) -> None:
    path = ROOT / source
    assert path.is_file(), f"{page} shows the output of {source}, which does not exist"
    proc = _run(path.name)
    assert proc.returncode == 0, f"{source} failed:\n{proc.stdout}\n{proc.stderr}"
    printed, quoted = _normalized_lines(proc.stdout), _normalized_lines(body)
    if whole:
        assert quoted == printed, f"{page}: the output of {source} is now:\n{proc.stdout}"
    else:
        runs = [printed[i : i + len(quoted)] for i in range(len(printed) - len(quoted) + 1)]
        assert quoted in runs, (
            f"{page}: {source} no longer prints:\n{body}\nit prints:\n{proc.stdout}"
        )


def test_docs_show_the_output_of_examples() -> None:
    # guards the check above against an intro wording that silently matches nothing
    shown = {source for _, source, whole, _ in _output_blocks() if whole}
    assert {"examples/block_and_respond.py", "examples/approval.py"} <= shown


def test_docs_quote_at_least_one_example() -> None:
    # guards the check above against a marker syntax that silently matches nothing
    assert _quoted_blocks(), "no docs block is marked '# examples/<file>.py'"


def test_every_example_is_referenced_from_the_docs() -> None:
    docs_text = "\n".join(doc.read_text(encoding="utf-8") for doc in DOCS)
    unreferenced = [p.name for p in EXAMPLES if f"examples/{p.name}" not in docs_text]
    assert not unreferenced, f"examples not referenced from any docs/*.md page: {unreferenced}"
