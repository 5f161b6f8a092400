"""Tests for the policy builtins: tool filter, rate limit, secret redaction, loop guard,
result cache and output cap, each through a real pipeline."""

from __future__ import annotations

import re
from typing import Any

import anyio
import pytest

from interpose import (
    ApprovalRequest,
    Pipeline,
    Redactor,
    RegistrationError,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolResult,
)
from interpose.errors import ConfigError
from interpose.middleware.builtins import (
    LoopGuard,
    OutputCap,
    RateLimit,
    RedactSecrets,
    ResultCache,
    ToolFilter,
)


class Clock:
    """A settable clock: tests step it over each boundary instead of sleeping."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Tool:
    """A tool that records its calls and returns ``output`` (or the next of ``outputs``)."""

    def __init__(self, output: Any = "ran") -> None:
        self.calls: list[dict[str, Any]] = []
        self.output = output

    def __call__(self, args: dict[str, Any]) -> Any:
        self.calls.append(dict(args))
        return self.output(args) if callable(self.output) else self.output


def reason(result: ToolResult) -> str:
    assert result.status == "blocked", result
    return str(result.output["reason"])


# -- installing -------------------------------------------------------------------------------


def test_every_policy_installs_under_its_id_hook_and_priority() -> None:
    pipe = Pipeline()  # with the built-in guards, to see where the policies fall
    for policy in (
        ToolFilter(deny=["cron"]),
        RateLimit(rate=10, per=60),
        RedactSecrets(),
        LoopGuard(),
        ResultCache(),
        OutputCap(),
    ):
        policy.install(pipe)

    def order(hook: str, tool: str) -> list[tuple[str, int]]:
        return [(r.id, r.priority) for r in pipe.registry.get(hook, tool=tool)]

    assert order("tool.before", "exec") == [
        ("builtin:tool-filter", 120),
        ("builtin:loop-guard", 105),
        ("builtin:command-safety-guard", 100),
        ("builtin:rate-limit", 95),
    ]
    assert order("tool.before", "read") == [
        ("builtin:tool-filter", 120),
        ("builtin:loop-guard", 105),
        ("builtin:security-audit", 99),
        ("builtin:rate-limit", 95),
        ("builtin:result-cache", 5),
    ]
    assert order("tool.after", "read") == [
        ("builtin:redact-secrets", 100),
        ("builtin:output-cap", 90),
        ("builtin:result-cache:store", 10),
    ]
    assert order("tool.after", "write") == [
        ("builtin:redact-secrets", 100),
        ("builtin:output-cap", 90),
        ("builtin:result-cache:invalidate", 10),
    ]
    pipe.register_tool("fetch_and_store")
    ResultCache(tools=["fetch_and_store"], invalidate_on=["fetch_and_store"], id="c2").install(pipe)
    assert order("tool.after", "fetch_and_store")[-2:] == [
        ("c2:invalidate", 10),  # empties the cache, then the call's own result is stored
        ("c2:store", 10),
    ]
    cache = pipe.registry["builtin:result-cache"]
    assert cache.trusted  # type: ignore[union-attr]


def test_install_is_all_or_nothing() -> None:
    pipe = Pipeline(builtins=False)
    pipe.intercept("tool.after", id="builtin:result-cache:store")(lambda inp, out: None)

    with pytest.raises(RegistrationError, match="duplicate id"):
        ResultCache().install(pipe)

    assert [r.id for r in pipe.registry.list()] == ["builtin:result-cache:store"]


def test_install_into_a_registry_and_a_second_instance_under_its_own_id() -> None:
    pipe = Pipeline(builtins=False)
    added = RateLimit(rate=1, tools=["exec"]).install(pipe.registry)
    RateLimit(rate=5, tools=["read"], id="read-rate").install(pipe)

    assert [r.id for r in added] == ["builtin:rate-limit"]
    assert [r.id for r in pipe.registry.get("tool.before", tool="read")] == ["read-rate"]
    with pytest.raises(RegistrationError, match="duplicate id"):
        RateLimit(rate=1).install(pipe)


async def test_a_policy_is_removed_by_its_id(pipe: Pipeline) -> None:
    ToolFilter(deny=["exec"]).install(pipe)
    pipe.registry.remove("builtin:tool-filter")

    result = await pipe.call_tool("exec", {"command": "ls"}, call=Tool())

    assert result.status == "ok"


@pytest.mark.parametrize(
    "make",
    [
        lambda: ToolFilter(deny=["exec"], priority="high"),  # type: ignore[arg-type]
        lambda: ToolFilter(deny=["exec"], priority=True),
        lambda: LoopGuard(id=""),
        lambda: OutputCap(id=None),  # type: ignore[arg-type]
    ],
)
def test_bad_priority_or_id_is_a_config_error(make: Any) -> None:
    with pytest.raises(ConfigError):
        make()


# -- tool filter -------------------------------------------------------------------------------


async def test_tool_filter_deny_by_name_group_and_regex(pipe: Pipeline) -> None:
    ToolFilter(deny=["bash", "group:automation", re.compile(r"^mcp_.*_delete$")]).install(pipe)
    pipe.register_tool("mcp_files_delete")
    tool = Tool()

    by_alias = await pipe.call_tool("Bash", {"command": "ls"}, call=tool)
    by_group = await pipe.call_tool("cron", {}, call=tool)
    by_regex = await pipe.call_tool("mcp_files_delete", {}, call=tool)
    other = await pipe.call_tool("read", {"path": "x"}, call=tool)

    assert reason(by_alias) == "tool filter: exec is denied by 'bash'"
    assert reason(by_group) == "tool filter: cron is denied by 'group:automation'"
    assert reason(by_regex) == "tool filter: mcp_files_delete is denied by '/^mcp_.*_delete$/'"
    assert by_alias.details["decided_by"] == "builtin:tool-filter"
    assert other.status == "ok"
    assert tool.calls == [{"path": "x"}]


async def test_tool_filter_allow_list_blocks_everything_else(pipe: Pipeline) -> None:
    ToolFilter(allow=["read", "group:memory"]).install(pipe)
    tool = Tool()

    allowed = [await pipe.call_tool(t, {}, call=tool) for t in ("read", "memory_get")]
    refused = await pipe.call_tool("web_fetch", {"url": "x"}, call=tool)
    unknown = await pipe.call_tool("deploy", {}, call=tool)  # application tools too

    assert [r.status for r in allowed] == ["ok", "ok"]
    assert reason(refused) == (
        "tool filter: web_fetch is not on the allow list (read, group:memory)"
    )
    assert reason(unknown) == "tool filter: deploy is not on the allow list (read, group:memory)"
    assert len(tool.calls) == 2


async def test_tool_filter_deny_wins_over_allow(pipe: Pipeline) -> None:
    ToolFilter(allow=["group:web"], deny=["web_fetch"]).install(pipe)

    fetch = await pipe.call_tool("web_fetch", {}, call=Tool())
    search = await pipe.call_tool("web_search", {}, call=Tool())

    assert reason(fetch) == "tool filter: web_fetch is denied by 'web_fetch'"
    assert search.status == "ok"


async def test_tool_filter_regex_sees_aliases(pipe: Pipeline) -> None:
    ToolFilter(deny=[re.compile(r"^bash$")]).install(pipe)

    result = await pipe.call_tool("exec", {}, call=Tool())

    assert reason(result) == "tool filter: exec is denied by '/^bash$/'"


def test_tool_filter_check_answers_without_a_pipeline() -> None:
    policy = ToolFilter(allow=[re.compile(r"^web_")])

    assert policy.check("web_search") is None
    assert policy.check("READ") == "tool filter: read is not on the allow list (/^web_/)"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give an allow list, a deny list, or both"),
        ({"allow": []}, "an empty allow list would block every tool"),
        ({"deny": ["group:nope"]}, "unknown tool group 'group:nope'"),
        ({"deny": ["^web_"]}, r"'\^web_' is not a tool name; for a regex pass re.compile"),
        ({"deny": [42]}, "a rule is a tool name, a 'group:\\*' name or a compiled regex"),
        ({"deny": "exec"}, "lists of rules, not one rule"),
    ],
)
def test_tool_filter_rejects_bad_rules(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ToolFilter(**kwargs)


# -- rate limit -------------------------------------------------------------------------------


async def test_rate_limit_blocks_an_empty_bucket_and_refills_at_the_boundary(
    pipe: Pipeline,
) -> None:
    clock = Clock()
    RateLimit(rate=1, per=2.0, burst=2, clock=clock).install(pipe)  # a token every 2 s
    tool = Tool()

    async def call() -> ToolResult:
        return await pipe.call_tool("exec", {"command": "ls"}, call=tool, session_key="s1")

    burst = [await call(), await call()]
    empty = await call()
    clock.now += 0.6
    later = await call()
    clock.now += 2.0 - 0.6 - 1e-6  # just before the token is back
    almost = await call()
    clock.now += 1e-6  # exactly 2 s after the bucket emptied
    refilled = await call()
    again = await call()

    assert [r.status for r in burst] == ["ok", "ok"]
    assert reason(empty) == "rate limit for exec in session s1: retry in 2.0s"
    assert reason(later) == "rate limit for exec in session s1: retry in 1.4s"
    assert reason(almost) == "rate limit for exec in session s1: retry in 0.1s"  # rounded up
    assert refilled.status == "ok"
    assert reason(again) == "rate limit for exec in session s1: retry in 2.0s"
    assert len(tool.calls) == 3
    assert empty.details["decided_by"] == "builtin:rate-limit"


async def test_rate_limit_boundary_holds_with_fractional_rates(pipe: Pipeline) -> None:
    clock = Clock(0.0)
    RateLimit(rate=10, per=1.0, burst=1, clock=clock).install(pipe)  # a token every 0.1 s
    statuses = []
    for _ in range(30):  # float sums of 0.1 must not lose a token to rounding
        statuses.append((await pipe.call_tool("read", {}, call=Tool())).status)
        clock.now += 0.1

    assert statuses == ["ok"] * 30


async def test_rate_limit_buckets_are_per_tool_and_per_session(pipe: Pipeline) -> None:
    clock = Clock()
    RateLimit(rate=1, per=60, clock=clock).install(pipe)

    first = await pipe.call_tool("exec", {}, call=Tool(), session_key="s1")
    same = await pipe.call_tool("bash", {}, call=Tool(), session_key="s1")  # alias: same tool
    other_session = await pipe.call_tool("exec", {}, call=Tool(), session_key="s2")
    other_tool = await pipe.call_tool("read", {}, call=Tool(), session_key="s1")
    no_session = [await pipe.call_tool("exec", {}, call=Tool()) for _ in range(2)]

    assert first.status == other_session.status == other_tool.status == "ok"
    assert reason(same) == "rate limit for exec in session s1: retry in 60.0s"
    assert no_session[0].status == "ok"
    assert reason(no_session[1]) == "rate limit for exec: retry in 60.0s"


async def test_rate_limit_refill_stops_at_the_burst(pipe: Pipeline) -> None:
    clock = Clock()
    RateLimit(rate=1, per=1, burst=3, clock=clock).install(pipe)
    await pipe.call_tool("exec", {}, call=Tool())
    clock.now += 3600  # an hour idle refills to 3 tokens, not 3600

    statuses = [(await pipe.call_tool("exec", {}, call=Tool())).status for _ in range(4)]

    assert statuses == ["ok", "ok", "ok", "blocked"]


async def test_rate_limit_refused_calls_spend_no_token() -> None:
    pipe = Pipeline()  # the command guard (priority 100) refuses before the limit (95)
    clock = Clock()
    RateLimit(rate=1, per=60, burst=1, clock=clock).install(pipe)

    guarded = await pipe.call_tool("exec", {"command": "rm -rf /"}, call=Tool())
    limited = await pipe.call_tool("exec", {"command": "ls"}, call=Tool())
    clock.now += 1
    blocked = await pipe.call_tool("exec", {"command": "ls"}, call=Tool())

    assert reason(guarded).startswith("command-safety-guard: fs-destruction:")
    assert limited.status == "ok"
    assert reason(blocked) == "rate limit for exec: retry in 59.0s"  # the blocked try was free


async def test_rate_limit_only_limits_the_tools_it_names(pipe: Pipeline) -> None:
    RateLimit(rate=1, per=60, tools=["exec"], clock=Clock()).install(pipe)

    reads = [(await pipe.call_tool("read", {}, call=Tool())).status for _ in range(3)]

    assert reads == ["ok", "ok", "ok"]


async def test_rate_limit_default_burst_is_the_rate(pipe: Pipeline) -> None:
    RateLimit(rate=2.5, per=60, clock=Clock()).install(pipe)

    statuses = [(await pipe.call_tool("exec", {}, call=Tool())).status for _ in range(4)]

    assert statuses == ["ok", "ok", "ok", "blocked"]


async def test_rate_limit_keeps_at_most_max_buckets(pipe: Pipeline) -> None:
    clock = Clock()
    RateLimit(rate=1, per=60, max_buckets=2, clock=clock).install(pipe)
    for session in ("s1", "s2", "s3"):  # s1's bucket is the least recently used: dropped
        await pipe.call_tool("exec", {}, call=Tool(), session_key=session)

    s1 = await pipe.call_tool("exec", {}, call=Tool(), session_key="s1")
    s3 = await pipe.call_tool("exec", {}, call=Tool(), session_key="s3")

    assert s1.status == "ok"  # a dropped bucket starts full again
    assert s3.status == "blocked"


async def test_concurrent_calls_never_take_more_tokens_than_the_bucket_holds(
    pipe: Pipeline,
) -> None:
    RateLimit(rate=5, per=60, clock=Clock()).install(pipe)
    statuses: list[str] = []

    async def slow_tool(args: dict[str, Any]) -> str:
        await anyio.lowlevel.checkpoint()
        return "ran"

    async def one() -> None:
        statuses.append((await pipe.call_tool("exec", {}, call=slow_tool)).status)

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(one)

    assert sorted(statuses) == ["blocked"] * 15 + ["ok"] * 5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rate": 0}, "rate must be a positive number, got 0"),
        ({"rate": -1}, "rate must be a positive number"),
        ({"rate": float("inf")}, "rate must be a positive number"),
        ({"rate": "10"}, "rate must be a positive number"),
        ({"rate": 1, "per": 0}, "per must be a positive number"),
        ({"rate": 1, "burst": 0}, "burst must be an int >= 1, got 0"),
        ({"rate": 1, "burst": 1.5}, "burst must be an int >= 1"),
        ({"rate": 1, "max_buckets": 0}, "max_buckets must be an int >= 1"),
        ({"rate": 1, "clock": 5}, "clock must be a callable"),
    ],
)
def test_rate_limit_rejects_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RateLimit(**kwargs)


# -- secret redaction ------------------------------------------------------------------------

# fake secrets in the shape of each kind the default Redactor knows (built, not literal)
SECRETS = {
    "anthropic": "sk-ant-api03-" + "a1B2" * 8,
    "openai": "sk-proj-" + "Z9y8" * 8,
    "github": "ghp_" + "A1b2C3" * 6,
    "github-fine-grained": "github_pat_" + "11AB" * 12,
    "gitlab": "glpat-" + "x1Y2" * 6,
    "slack": "xoxb-" + "1234567890-abcdefghij",
    "stripe": "sk_live_" + "4eC3" * 6,
    "google": "AIza" + "Sy" + "B1c2D3e4" * 4 + "x",
    "huggingface": "hf_" + "QwErTy" * 6,
    "aws-access-key": "AKIA" + "IOSFODNN7EXAMPLE",
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
async def test_redaction_masks_each_kind_of_api_key_and_token(pipe: Pipeline, kind: str) -> None:
    RedactSecrets().install(pipe)
    secret = SECRETS[kind]

    result = await pipe.call_tool("exec", {}, call=Tool(f"found {secret} in the logs"))

    assert result.output == "found [REDACTED] in the logs"
    assert result.details["redacted"] == 1
    assert result.status == "ok"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Authorization: Bearer abcdefghijklmnop0123456789",
            "Authorization: Bearer [REDACTED]",
        ),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = [REDACTED]",
        ),
        ("db password: correct-horse-battery", "db password: [REDACTED]"),
        (
            "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
            "-----END OPENSSH PRIVATE KEY-----\ndone",
            "key:\n[REDACTED]\ndone",
        ),
    ],
    ids=["bearer", "aws-secret-key", "password-assignment", "private-key-block"],
)
async def test_redaction_masks_bearer_tokens_aws_secrets_assignments_and_private_keys(
    pipe: Pipeline, text: str, expected: str
) -> None:
    RedactSecrets().install(pipe)

    result = await pipe.call_tool("read", {"path": "notes"}, call=Tool(text))

    assert result.output == expected
    assert result.details["redacted"] == 1


async def test_redaction_walks_dicts_and_lists_and_masks_sensitive_keys(pipe: Pipeline) -> None:
    RedactSecrets().install(pipe)
    output: dict[str, Any] = {
        "env": {"api_key": "not-a-pattern-but-a-sensitive-key", "HOME": "/home/u"},
        "lines": ["ok", f"token {SECRETS['github']}", ("t", SECRETS["openai"])],
        "count": 3,
    }

    result = await pipe.call_tool("exec", {}, call=Tool(output))

    assert result.output == {
        "env": {"api_key": "[REDACTED]", "HOME": "/home/u"},
        "lines": ["ok", "token [REDACTED]", ["t", "[REDACTED]"]],
        "count": 3,
    }
    assert result.details["redacted"] == 3
    assert output["env"]["api_key"] == "not-a-pattern-but-a-sensitive-key"  # a copy was made


async def test_redaction_leaves_clean_output_as_it_was(pipe: Pipeline) -> None:
    RedactSecrets().install(pipe)
    output = {"files": ["a.py", "b.py"], "note": "[REDACTED] is just a word here"}

    result = await pipe.call_tool("exec", {}, call=Tool(output))

    assert result.output is output
    assert "redacted" not in result.details


async def test_redaction_scrubs_refusal_reasons_too(pipe: Pipeline) -> None:
    RedactSecrets().install(pipe)
    token = SECRETS["slack"]

    @pipe.intercept("tool.before", id="quoting-gate")
    def gate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.block = True
        out.block_reason = f"refusing to post with {token}"

    result = await pipe.call_tool("message", {}, call=Tool())

    assert result.output["reason"] == "refusing to post with [REDACTED]"
    assert result.status == "blocked"


async def test_redaction_with_custom_patterns(pipe: Pipeline) -> None:
    RedactSecrets(Redactor(patterns=[r"ticket-[0-9]{6}"], mask="***")).install(pipe)

    result = await pipe.call_tool("exec", {}, call=Tool("see ticket-123456 and ticket-654321"))

    assert result.output == "see *** and ***"
    assert result.details["redacted"] == 2


async def test_redaction_only_on_the_tools_it_names(pipe: Pipeline) -> None:
    RedactSecrets(tools=["read"]).install(pipe)
    text = f"key {SECRETS['anthropic']}"

    read = await pipe.call_tool("read", {}, call=Tool(text))
    other = await pipe.call_tool("exec", {}, call=Tool(text))

    assert read.output == "key [REDACTED]"
    assert other.output == text


async def test_redaction_fails_closed(pipe: Pipeline) -> None:
    class Broken(Redactor):
        def redact_text(self, text: str) -> str:
            raise RuntimeError("pattern engine down")

    RedactSecrets(Broken()).install(pipe)

    result = await pipe.call_tool("exec", {}, call=Tool(f"key {SECRETS['openai']}"))

    assert result.status == "blocked"
    assert SECRETS["openai"] not in str(result.output)
    assert reason(result) == (
        "interceptor 'builtin:redact-secrets' failed: RuntimeError: pattern engine down"
    )


def test_redaction_rejects_a_redactor_of_the_wrong_type() -> None:
    with pytest.raises(ConfigError, match=re.escape("redactor must be an interpose.Redactor")):
        RedactSecrets(redactor=[r"x"])  # type: ignore[arg-type]


# -- loop guard -------------------------------------------------------------------------------


async def test_loop_guard_allows_n_minus_1_repeats_and_blocks_the_nth(pipe: Pipeline) -> None:
    LoopGuard(max_repeats=3).install(pipe)
    tool = Tool()
    async with pipe.turn(session_key="s1") as turn:
        results = [await turn.call_tool("exec", {"command": "pytest"}, call=tool) for _ in range(4)]

    assert [r.status for r in results] == ["ok", "ok", "blocked", "blocked"]
    assert reason(results[2]) == (
        "loop guard: exec called 3 times with the same arguments in this turn"
    )
    assert reason(results[3]) == (
        "loop guard: exec called 4 times with the same arguments in this turn"
    )
    assert results[2].details["decided_by"] == "builtin:loop-guard"
    assert len(tool.calls) == 2


async def test_loop_guard_compares_arguments_canonically(pipe: Pipeline) -> None:
    LoopGuard(max_repeats=2).install(pipe)
    async with pipe.turn() as turn:
        first = await turn.call_tool("read", {"path": "a", "opts": {"x": 1, "y": [1]}}, call=Tool())
        reordered = await turn.call_tool(
            "read", {"opts": {"y": [1], "x": 1}, "path": "a"}, call=Tool()
        )

    assert first.status == "ok"
    assert reason(reordered) == (
        "loop guard: read called 2 times with the same arguments in this turn"
    )


async def test_loop_guard_counts_each_tool_and_argument_set_apart(pipe: Pipeline) -> None:
    LoopGuard(max_repeats=2).install(pipe)
    async with pipe.turn() as turn:
        statuses = [
            (await turn.call_tool(name, args, call=Tool())).status
            for name, args in (
                ("exec", {"command": "ls"}),
                ("exec", {"command": "ls -la"}),
                ("process", {"command": "ls"}),
                ("exec", {"command": "ls", "cwd": "/tmp"}),
            )
        ]

    assert statuses == ["ok"] * 4


async def test_loop_guard_starts_each_turn_afresh(pipe: Pipeline) -> None:
    LoopGuard(max_repeats=2).install(pipe)
    statuses = []
    for _ in range(3):
        async with pipe.turn() as turn:
            statuses.append((await turn.call_tool("exec", {"command": "ls"}, call=Tool())).status)

    assert statuses == ["ok", "ok", "ok"]


async def test_loop_guard_ignores_calls_outside_a_turn(pipe: Pipeline) -> None:
    LoopGuard(max_repeats=2).install(pipe)

    statuses = [(await pipe.call_tool("exec", {"c": 1}, call=Tool())).status for _ in range(3)]

    assert statuses == ["ok", "ok", "ok"]


async def test_loop_guard_keeps_at_most_max_turns(pipe: Pipeline) -> None:
    guard = LoopGuard(max_repeats=2, max_turns=2)
    guard.install(pipe)
    for turn_id in ("t1", "t2", "t3"):  # t1 is forgotten when t3 starts
        async with pipe.turn(turn_id=turn_id) as turn:
            await turn.call_tool("exec", {"command": "ls"}, call=Tool())
    async with pipe.turn(turn_id="t3") as turn:
        t3 = await turn.call_tool("exec", {"command": "ls"}, call=Tool())

    assert guard.tracked_turns == 2
    assert t3.status == "blocked"  # a tracked turn still counts


async def test_loop_guard_counts_attempts_the_guards_refuse() -> None:
    pipe = Pipeline()
    LoopGuard(max_repeats=3).install(pipe)
    async with pipe.turn() as turn:
        reasons = [
            reason(await turn.call_tool("exec", {"command": "rm -rf /"}, call=Tool()))
            for _ in range(3)
        ]

    assert reasons[0].startswith("command-safety-guard: fs-destruction:")
    assert reasons[2] == "loop guard: exec called 3 times with the same arguments in this turn"


async def test_loop_guard_copes_with_arguments_json_cannot_encode(pipe: Pipeline) -> None:
    LoopGuard(max_repeats=2).install(pipe)
    marker = object()
    async with pipe.turn() as turn:
        odd = [
            await turn.call_tool("exec", {"keys": {1: "a", "b": 2}, "o": marker}, call=Tool())
            for _ in range(2)
        ]

    assert [r.status for r in odd] == ["ok", "blocked"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_repeats": 1}, "max_repeats must be an int >= 2, got 1"),
        ({"max_repeats": 0}, "max_repeats must be an int >= 2"),
        ({"max_repeats": "3"}, "max_repeats must be an int >= 2"),
        ({"max_repeats": True}, "max_repeats must be an int >= 2"),
        ({"max_turns": 0}, "max_turns must be an int >= 1"),
    ],
)
def test_loop_guard_rejects_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        LoopGuard(**kwargs)


# -- result cache ----------------------------------------------------------------------------


def counter() -> Tool:
    """A tool whose every run returns a new value: {"run": n}."""
    runs = iter(range(1, 1000))
    return Tool(lambda args: {"run": next(runs), "path": args.get("path")})


async def test_cache_answers_a_repeat_within_the_ttl_and_expires_at_it(pipe: Pipeline) -> None:
    clock = Clock()
    ResultCache(ttl=30.0, clock=clock).install(pipe)
    tool = counter()

    first = await pipe.call_tool("read", {"path": "a.py"}, call=tool)
    clock.now += 29.5
    hit = await pipe.call_tool("read", {"path": "a.py"}, call=tool)
    clock.now += 0.5  # exactly ttl after the store
    expired = await pipe.call_tool("read", {"path": "a.py"}, call=tool)

    assert first.status == "ok"
    assert first.output == {"run": 1, "path": "a.py"}
    assert hit.status == "responded"
    assert hit.output == {"run": 1, "path": "a.py"}
    assert hit.details["cached"] is True
    assert hit.details["cache_age"] == 29.5
    assert expired.status == "ok"
    assert expired.output == {"run": 2, "path": "a.py"}
    assert len(tool.calls) == 2


async def test_cache_keys_on_the_arguments(pipe: Pipeline) -> None:
    ResultCache(clock=Clock()).install(pipe)
    tool = counter()

    await pipe.call_tool("read", {"path": "a.py", "offset": 0}, call=tool)
    other = await pipe.call_tool("read", {"path": "b.py", "offset": 0}, call=tool)
    reordered = await pipe.call_tool("read", {"offset": 0, "path": "a.py"}, call=tool)

    assert other.status == "ok"
    assert reordered.status == "responded"
    assert len(tool.calls) == 2


async def test_cache_only_caches_the_tools_it_lists(pipe: Pipeline) -> None:
    ResultCache(clock=Clock()).install(pipe)  # default: read-only tools
    pipe.registry.remove("builtin:result-cache:invalidate")  # exec would empty it anyway
    tool = counter()

    runs = [await pipe.call_tool("exec", {"command": "date"}, call=tool) for _ in range(2)]
    searched = [await pipe.call_tool("web_search", {"q": "x"}, call=tool) for _ in range(2)]

    assert [r.status for r in runs] == ["ok", "ok"]
    assert [r.status for r in searched] == ["ok", "responded"]


async def test_cache_stores_only_successful_runs(pipe: Pipeline) -> None:
    ResultCache(clock=Clock()).install(pipe)

    def failing(args: dict[str, Any]) -> str:
        raise OSError("disk on fire")

    errors = [await pipe.call_tool("read", {"path": "a"}, call=failing) for _ in range(2)]

    @pipe.intercept("tool.before", id="deny-b")
    def deny_b(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.args["path"] == "b":
            out.block, out.block_reason = True, "no b"

    blocked = [await pipe.call_tool("read", {"path": "b"}, call=counter()) for _ in range(2)]

    assert [r.status for r in errors] == ["error", "error"]
    assert [r.status for r in blocked] == ["blocked", "blocked"]
    assert [r.output["reason"] for r in blocked] == ["no b", "no b"]


async def test_a_cache_hit_skips_the_approvers(pipe: Pipeline) -> None:
    ResultCache(clock=Clock()).install(pipe)
    asked: list[dict[str, Any]] = []

    @pipe.approver(tools=["read"], id="reviewer")
    def reviewer(req: ApprovalRequest) -> bool:
        asked.append(req.args)
        return True

    first = await pipe.call_tool("read", {"path": "a"}, call=counter())
    hit = await pipe.call_tool("read", {"path": "a"}, call=counter())

    assert (first.status, hit.status) == ("ok", "responded")
    assert hit.details["decided_by"] == "builtin:result-cache"
    assert asked == [{"path": "a"}]  # asked once, for the call that filled the entry


async def test_a_later_interceptor_may_still_block_a_cache_hit(pipe: Pipeline) -> None:
    ResultCache(clock=Clock()).install(pipe)
    await pipe.call_tool("read", {"path": "a"}, call=counter())

    @pipe.intercept("tool.before", priority=0, id="lockdown")
    def lockdown(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.block, out.block_reason = True, "locked down"

    result = await pipe.call_tool("read", {"path": "a"}, call=counter())

    assert reason(result) == "locked down"


async def test_cache_scope_keeps_sessions_apart_unless_global(pipe: Pipeline) -> None:
    ResultCache(clock=Clock()).install(pipe)
    ResultCache(clock=Clock(), tools=["web_fetch"], scope="global", id="shared").install(pipe)
    tool = counter()

    await pipe.call_tool("read", {"path": "a"}, call=tool, session_key="s1")
    read_s2 = await pipe.call_tool("read", {"path": "a"}, call=tool, session_key="s2")
    read_other_agent = await pipe.call_tool(
        "read", {"path": "a"}, call=tool, session_key="s1", agent_id="other"
    )
    await pipe.call_tool("web_fetch", {"url": "u"}, call=tool, session_key="s1")
    fetch_s2 = await pipe.call_tool("web_fetch", {"url": "u"}, call=tool, session_key="s2")

    assert read_s2.status == "ok"
    assert read_other_agent.status == "ok"
    assert fetch_s2.status == "responded"


async def test_a_write_that_ran_empties_the_cache(pipe: Pipeline) -> None:
    cache = ResultCache(clock=Clock())
    cache.install(pipe)
    tool = counter()

    @pipe.intercept("tool.before", tools=["write"], id="read-only-etc")
    def read_only_etc(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.args["path"].startswith("/etc"):
            out.block, out.block_reason = True, "no"

    await pipe.call_tool("read", {"path": "a"}, call=tool)
    await pipe.call_tool("write", {"path": "/etc/x"}, call=Tool())  # blocked: did not run
    still = await pipe.call_tool("read", {"path": "a"}, call=tool)
    await pipe.call_tool("write", {"path": "a"}, call=Tool())
    fresh = await pipe.call_tool("read", {"path": "a"}, call=tool)

    assert still.status == "responded"
    assert fresh.status == "ok"
    assert fresh.output == {"run": 2, "path": "a"}


async def test_a_tool_both_cached_and_invalidating_is_cached(pipe: Pipeline) -> None:
    ResultCache(clock=Clock(), tools=["exec"]).install(pipe)  # exec also invalidates
    tool = counter()

    first = await pipe.call_tool("exec", {"command": "date"}, call=tool)
    repeat = await pipe.call_tool("exec", {"command": "date"}, call=tool)
    await pipe.call_tool("exec", {"command": "touch x"}, call=tool)
    after_other = await pipe.call_tool("exec", {"command": "date"}, call=tool)

    assert (first.status, repeat.status, after_other.status) == ("ok", "responded", "ok")


async def test_cache_without_invalidation(pipe: Pipeline) -> None:
    ResultCache(clock=Clock(), invalidate_on=None).install(pipe)
    tool = counter()

    await pipe.call_tool("read", {"path": "a"}, call=tool)
    await pipe.call_tool("exec", {"command": "touch a"}, call=Tool())
    result = await pipe.call_tool("read", {"path": "a"}, call=tool)

    assert "builtin:result-cache:invalidate" not in pipe.registry
    assert result.status == "responded"


async def test_cache_evicts_the_least_recently_used_entry(pipe: Pipeline) -> None:
    cache = ResultCache(clock=Clock(), max_entries=2)
    cache.install(pipe)
    tool = counter()

    async def read(path: str) -> str:
        return (await pipe.call_tool("read", {"path": path}, call=tool)).status

    filled = [await read("a"), await read("b"), await read("a"), await read("c")]
    after = [await read("a"), await read("b")]

    assert filled == ["ok", "ok", "responded", "ok"]  # c pushed out b, not a (just used)
    assert after == ["responded", "ok"]
    assert len(cache) == 2


async def test_cached_results_are_copies(pipe: Pipeline) -> None:
    ResultCache(clock=Clock()).install(pipe)
    tool = counter()

    first = await pipe.call_tool("read", {"path": "a"}, call=tool)
    first.output["run"] = "changed by the agent"
    hit = await pipe.call_tool("read", {"path": "a"}, call=tool)
    hit.output["run"] = "changed again"
    hit.details["note"] = "x"
    again = await pipe.call_tool("read", {"path": "a"}, call=tool)

    assert again.output == {"run": 1, "path": "a"}
    assert "note" not in again.details


async def test_cache_keys_on_the_arguments_after_transforms(pipe: Pipeline) -> None:
    ResultCache(clock=Clock()).install(pipe)
    tool = counter()

    @pipe.intercept("tool.before", tools=["read"], priority=50, id="default-offset")
    def default_offset(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.args.setdefault("offset", 0)

    await pipe.call_tool("read", {"path": "a"}, call=tool)
    explicit = await pipe.call_tool("read", {"path": "a", "offset": 0}, call=tool)

    assert tool.calls == [{"path": "a", "offset": 0}]
    assert explicit.status == "responded"


async def test_cache_stores_what_the_agent_got_redacted_and_capped(pipe: Pipeline) -> None:
    ResultCache(clock=Clock()).install(pipe)
    RedactSecrets().install(pipe)
    OutputCap(max_chars=20).install(pipe)
    secret = SECRETS["anthropic"]
    text = f"{secret} " + "x" * 40

    first = await pipe.call_tool("read", {"path": "a"}, call=Tool(text))
    hit = await pipe.call_tool("read", {"path": "a"}, call=Tool(text))

    assert first.output == "[REDACTED] xxxxxxxxx\n… [truncated 31 chars]"
    assert hit.status == "responded"
    assert hit.output == first.output  # not cut a second time
    assert hit.details["truncated_chars"] == 31
    assert hit.details["redacted"] == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ttl": 0}, "ttl must be a positive number, got 0"),
        ({"ttl": -5.0}, "ttl must be a positive number"),
        ({"scope": "user"}, "scope must be 'session' or 'global', got 'user'"),
        ({"max_entries": 0}, "max_entries must be an int >= 1"),
        ({"clock": None}, "clock must be a callable"),
    ],
)
def test_cache_rejects_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ResultCache(**kwargs)


def test_cache_rejects_an_unknown_tool_when_installed() -> None:
    with pytest.raises(RegistrationError, match="unknown tools"):
        ResultCache(tools=["raed"]).install(Pipeline(builtins=False))


# -- output cap --------------------------------------------------------------------------------


async def test_output_cap_keeps_exactly_max_chars_and_cuts_one_more(pipe: Pipeline) -> None:
    OutputCap(max_chars=10).install(pipe)

    exact = await pipe.call_tool("exec", {}, call=Tool("a" * 10))
    over = await pipe.call_tool("exec", {}, call=Tool("a" * 10 + "b"))

    assert exact.output == "a" * 10
    assert "truncated_chars" not in exact.details
    assert over.output == "a" * 10 + "\n… [truncated 1 char]"
    assert over.details["truncated_chars"] == 1


async def test_output_cap_marker_says_how_much_was_cut(pipe: Pipeline) -> None:
    OutputCap(max_chars=5).install(pipe)

    result = await pipe.call_tool("exec", {}, call=Tool("12345" + "x" * 12_345))

    assert result.output == "12345\n… [truncated 12,345 chars]"
    assert result.details["truncated_chars"] == 12_345


async def test_output_cap_custom_marker(pipe: Pipeline) -> None:
    OutputCap(max_chars=3, marker=" [+{cut:,}]").install(pipe)

    result = await pipe.call_tool("exec", {}, call=Tool("abc" + "d" * 2000))

    assert result.output == "abc [+2,000]"


async def test_output_cap_on_structured_output(pipe: Pipeline) -> None:
    OutputCap(max_chars=20).install(pipe)
    small = {"a": 1}
    large = {"items": list(range(20))}

    kept = await pipe.call_tool("exec", {}, call=Tool(small))
    cut = await pipe.call_tool("exec", {}, call=Tool(large))
    nothing = await pipe.call_tool("exec", {}, call=Tool(None))

    assert kept.output is small
    assert cut.output == '{"items":[0,1,2,3,4,\n… [truncated 41 chars]'
    assert nothing.output is None


async def test_output_cap_strings_only_leaves_other_outputs(pipe: Pipeline) -> None:
    OutputCap(max_chars=5, strings_only=True).install(pipe)
    large = list(range(100))

    result = await pipe.call_tool("exec", {}, call=Tool(large))

    assert result.output is large


async def test_output_cap_caps_error_results_and_only_its_tools(pipe: Pipeline) -> None:
    OutputCap(max_chars=30, tools=["exec"]).install(pipe)

    def noisy(args: dict[str, Any]) -> str:
        raise RuntimeError("x" * 100)

    error = await pipe.call_tool("exec", {}, call=noisy)
    other_tool = await pipe.call_tool("read", {}, call=Tool("y" * 100))

    assert error.status == "error"
    assert error.output == "RuntimeError: " + "x" * 16 + "\n… [truncated 84 chars]"
    assert other_tool.output == "y" * 100


async def test_output_cap_keeps_the_shape_of_refusals(pipe: Pipeline) -> None:
    OutputCap(max_chars=10).install(pipe)

    @pipe.intercept("tool.before", id="wordy-gate")
    def wordy_gate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.block, out.block_reason = True, "a reason much longer than ten characters"

    result = await pipe.call_tool("exec", {}, call=Tool())

    assert result.output == {
        "status": "blocked",
        "tool": "exec",
        "reason": "a reason much longer than ten characters",
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_chars": 0}, "max_chars must be an int >= 1, got 0"),
        ({"max_chars": 1.5}, "max_chars must be an int >= 1"),
        ({"marker": 5}, "marker must be a str"),
        ({"marker": "{nope}"}, "does not format with {cut} and {chars}"),
        ({"marker": "{"}, "does not format with"),
    ],
)
def test_output_cap_rejects_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        OutputCap(**kwargs)


# -- together ----------------------------------------------------------------------------------


async def test_policies_work_with_a_tool_after_of_ones_own(pipe: Pipeline) -> None:
    RedactSecrets().install(pipe)
    seen: list[Any] = []

    @pipe.intercept("tool.after", priority=-10, id="audit")
    def audit(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        seen.append(out.result.output)

    await pipe.call_tool("exec", {}, call=Tool(f"token {SECRETS['huggingface']}"))

    assert seen == ["token [REDACTED]"]  # logging after redaction never sees the secret
