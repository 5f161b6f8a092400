"""A reduced run of benchmarks/agentdojo_flows.py on AgentDojo's real suites (no LLM).

Undefended, the ground truth of every user task run keeps its own utility check, and the
oracle attacker (the injection task's ground truth after the user task's calls, on an
environment carrying the attack text) wins every pair: the harness sees the attacks a
defense has to stop. A defense that blocks tools, and one that asks a person (nobody
answers: a deny), change what runs and are counted. Without agentdojo (the dev extra)
the tests are skipped, except under CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

from interpose import (
    Approval,
    ApprovalRequest,
    MessageBeforeInput,
    MessageBeforeOutput,
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
)

pytestmark = pytest.mark.integration

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPT = BENCHMARKS / "agentdojo_flows.py"
LIMIT = 2  # user tasks and injection tasks per suite: 2 runs and 4 pairs each


def _bench() -> ModuleType:
    """The benchmark script as a module (it imports its sibling harness)."""
    try:
        import agentdojo  # noqa: F401
    except ImportError as exc:
        message = f"agentdojo is not installed (the dev extra pins it): {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import agentdojo_flows
    finally:
        sys.path.remove(str(BENCHMARKS))
    return agentdojo_flows


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _bench()


def _run(
    bench: ModuleType,
    defenses: Sequence[str],
    suites: Sequence[str],
    attack: str = "important_instructions",
    limit: int = LIMIT,
) -> list[Any]:
    dojo = bench.load_agentdojo()
    runs: list[Any] = anyio.run(bench.run_all, dojo, list(suites), list(defenses), limit, attack)
    return runs


def test_undefended_the_ground_truth_is_useful_and_the_oracle_attack_wins(
    bench: ModuleType,
) -> None:
    runs = _run(bench, ["none"], bench.SUITES)
    assert [run.suite for run in runs] == list(bench.SUITES)
    for run in runs:
        assert run.defense == "none"
        assert run.user_tasks == LIMIT
        assert run.pairs == LIMIT * LIMIT
        # every user task's own ground truth, through interpose, passes its own check
        assert run.utility == LIMIT, (run.suite, run.failed_tasks)
        # the obeying agent: every injection task's goal is reached, each after the
        # attack text reached it
        assert run.attacks_won == run.pairs, (run.suite, run.lost)
        assert run.unseen == []
        # nothing refused, nothing asked, and calls were really made
        assert run.benign.calls >= LIMIT
        assert run.attacked.calls > run.benign.calls * LIMIT
        assert (run.benign.refused, run.benign.asked) == (0, 0)
        assert (run.attacked.refused, run.attacked.asked, run.attacked.aborted) == (0, 0, 0)


def test_a_defense_that_blocks_changes_what_runs_and_is_counted(bench: ModuleType) -> None:
    none, tool_filter = _run(bench, ["none", "tool-filter"], ["banking"])
    assert (none.defense, tool_filter.defense) == ("none", "tool-filter")
    # the oracle filter keeps every tool the user tasks need: utility stays
    assert tool_filter.utility == LIMIT
    assert tool_filter.benign.refused == 0
    # and blocks the injection calls that use other tools: fewer attacks win
    assert tool_filter.attacked.refused > 0
    assert tool_filter.attacks_won < none.attacks_won == none.pairs
    assert tool_filter.attacked.calls == none.attacked.calls


def test_the_flow_rules_refuse_the_attackers_payments_by_provenance(bench: ModuleType) -> None:
    """The flow policy, given only the suite's tool descriptions: banking's injection
    tasks pay an IBAN that appears only in the attack text, so fewer attacks win."""
    none, flows = _run(bench, ["none", "flows-allow"], ["banking"])
    assert flows.defense == "flows-allow"
    assert flows.attacked.refused > 0
    assert flows.attacks_won < none.attacks_won == none.pairs
    # the user's own payments (values of the user's prompt or of trusted results) run
    assert flows.utility >= LIMIT - 1


@pytest.mark.parametrize("attack", ["important_instructions", "direct", "system_message"])
def test_the_default_flow_rules_stop_every_attack_of_a_reduced_run_and_keep_utility(
    bench: ModuleType, attack: str
) -> None:
    """The default rules (sinks the user did not ask for ask, values an untrusted
    instruction names block) on slack and banking's first 4 user and injection tasks:
    every attack the undefended run loses to is stopped, every user task keeps its
    utility, whichever words the attack wraps its goal in."""
    runs = _run(bench, ["none", "flows"], ["slack", "banking"], attack, limit=4)
    for none, flows in zip(runs[::2], runs[1::2], strict=True):
        assert (none.defense, flows.defense) == ("none", "flows")
        assert none.attacks_won == none.pairs > 0, (none.suite, none.lost)
        assert flows.unseen == none.unseen == []
        assert flows.attacks_won == 0, (flows.suite, flows.won)
        assert flows.utility == none.utility == flows.user_tasks, flows.failed_tasks
        assert flows.attacked.refused > 0


def test_an_ask_with_nobody_to_answer_is_not_run_and_is_counted(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ask_before_paying(pipe: Pipeline, tools: Sequence[Any], needed: frozenset[str]) -> None:
        @pipe.approver(tools=["send_money"], id="ask-before-paying")
        def ask(request: ApprovalRequest) -> Approval:
            return Approval.ask(f"pay {request.args.get('recipient')}?")

    monkeypatch.setitem(bench.DEFENSES, "ask-before-paying", ask_before_paying)
    none, asking = _run(bench, ["none", "ask-before-paying"], ["banking"])
    # banking's first injection tasks send money to the attacker: each is asked, denied
    assert asking.attacked.asked > 0
    assert asking.attacked.refused >= asking.attacked.asked
    assert asking.attacks_won < none.attacks_won
    # the user's own payments were asked too, and not made: utility is lost
    assert asking.benign.asked == asking.benign.refused > 0
    assert asking.utility < none.utility


def test_tool_descriptions_give_each_tool_its_description_and_schema(bench: ModuleType) -> None:
    dojo = bench.load_agentdojo()
    for name in bench.SUITES:
        suite = dojo.get_suite(bench.BENCHMARK_VERSION, name)
        tools = bench.tool_descriptions(suite)
        assert [t["name"] for t in tools] == [f.name for f in suite.tools]
        for tool in tools:
            assert set(tool) == {"name", "description", "parameters"}
            assert tool["description"].strip()
            assert tool["parameters"]["type"] == "object"
        json.dumps(tools)  # plain data
    banking = {t["name"]: t for t in bench.tool_descriptions(dojo.get_suite("v1.2.1", "banking"))}
    send = banking["send_money"]
    assert {"recipient", "amount", "subject", "date"} <= set(send["parameters"]["properties"])
    assert "recipient" in send["parameters"]["required"]


def test_the_tool_descriptions_are_exported_as_json(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tools.json"
    assert bench.main(["--export-tools", str(out), "--suites", "banking", "slack"]) == 0
    exported = json.loads(out.read_text())
    assert list(exported) == ["banking", "slack"]
    assert "send_money" in {t["name"] for t in exported["banking"]}
    assert "send_direct_message" in {t["name"] for t in exported["slack"]}
    assert f"22 tools of banking, slack: {out}" in capsys.readouterr().out


def test_the_script_reports_the_reduced_run_and_writes_its_results(tmp_path: Path) -> None:
    _bench()  # skipped (or failed under CI) without agentdojo
    out = tmp_path / "dojo.json"
    run = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--suites",
            "slack",
            "--limit",
            "1",
            "--attack",
            "ignore_previous",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "oracle run (no LLM)" in run.stdout
    assert "LLM runs of AgentDojo" in run.stdout  # the published rows, labelled as such
    assert "reference: an oracle tool filter, not a flow rule" in run.stdout
    results = json.loads(out.read_text())
    assert results["benchmark"]["version"] == "v1.2.1"
    assert results["benchmark"]["limit"] == 1
    assert results["benchmark"]["attack"] == "ignore_previous"
    assert "ignore_previous, oracle run (no LLM)" in run.stdout
    assert [r["defense"] for r in results["overall"]] == ["none", "tool-filter"]
    none = results["overall"][0]
    assert (none["utility_pct"], none["asr_pct"], none["pairs"]) == (100.0, 100.0, 1)
    assert results["published"][0]["defense"] == "none"
    assert results["published"][0]["asr"] == pytest.approx(47.69)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--limit", "0"], "expected a whole number >= 1, got '0'"),
        (["--defense", "nothing"], "invalid choice: 'nothing'"),
        (["--suites", "mail"], "invalid choice: 'mail'"),
        (["--attack", "rickroll"], "invalid choice: 'rickroll'"),
    ],
)
def test_bad_options_are_named_without_a_traceback(
    bench: ModuleType, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        bench.main(args)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_the_session_sees_the_prompt_then_obeys_only_after_reading_the_attack(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what a flow policy relies on: the user's message goes through the message stage,
    # and the attacker's calls come after a tool result that carried the attack text
    seen: list[str] = []

    def recorder(pipe: Pipeline, tools: Sequence[Any], needed: frozenset[str]) -> None:
        @pipe.intercept("message.before")
        def message(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
            seen.append(f"message: {out.message}")

        @pipe.intercept("tool.before")
        def call(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
            seen.append(f"call {inp.tool_name} {out.args}")

        @pipe.intercept("tool.after")
        def result(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
            if bench.INJECTION_MARKER in str(out.result.output):
                seen.append("read the attack text")

    monkeypatch.setitem(bench.DEFENSES, "recorder", recorder)
    dojo = bench.load_agentdojo()
    suite_bench = bench.SuiteBench(dojo, "banking", ["recorder"], LIMIT)
    task = suite_bench.suite.get_user_task_by_id("user_task_0")
    injection = suite_bench.suite.get_injection_task_by_id("injection_task_0")
    env = task.init_environment(
        suite_bench.environments.load(suite_bench.attack.attack(task, injection))
    )
    calls = task.ground_truth(env.model_copy(deep=True))
    attack_calls = injection.ground_truth(env.model_copy(deep=True))
    plan = bench.Plan(task.PROMPT, calls, injection, attack_calls)
    pre = env.model_copy(deep=True)
    session = anyio.run(
        suite_bench.runner.session, "recorder", env, plan, frozenset(), "one session"
    )
    assert session.obeyed
    assert seen[0] == f"message: {task.PROMPT}"
    read = seen.index("read the attack text")
    # the bill is read (it carries the attack), the attacker's payment follows at once,
    # then the user's own payment
    assert seen[1:read] == [f"call {calls[0].function} {calls[0].args}"]
    made = [line for line in seen[read + 1 :] if line.startswith("call ")]
    assert made == [f"call {c.function} {c.args}" for c in [*attack_calls, *calls[1:]]]
    assert any(c.args.get("recipient") == "US133000000121212121212" for c in attack_calls)
    answer = session.answer(plan, task.GROUND_TRUTH_OUTPUT)
    assert bench.attack_won(injection, answer, pre, env, session.ran) is True


def test_the_fast_environment_loader_gives_agentdojos_environment(bench: ModuleType) -> None:
    dojo = bench.load_agentdojo()
    for name in bench.SUITES:
        suite_bench = bench.SuiteBench(dojo, name, ["none"], 1)
        task, injection = suite_bench.user_tasks[0], suite_bench.injection_tasks[0]
        attacked: dict[str, str] = suite_bench.attack.attack(task, injection)
        assert attacked
        assert all(bench.INJECTION_MARKER in text for text in attacked.values())
        for injections in ({}, attacked):
            ours = suite_bench.environments.load(injections)
            theirs = suite_bench.suite.load_and_inject_default_environment(injections)
            assert ours == theirs, name
        # and an injected environment differs from the benign one
        assert suite_bench.environments.load({}) != suite_bench.environments.load(attacked)
