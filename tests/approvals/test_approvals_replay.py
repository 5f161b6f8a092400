"""``interpose replay`` knows approvals: a recorded call that a standing grant allowed
is replayed as allowed by that grant (named, with who granted it), and a call a person
decided is answered as the person did, not asked anew (a replay asks no one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from approval_helpers import LIMIT

from interpose.approvals import GrantSpec, MemoryApprovalStore
from interpose.config import pipeline_from_file
from interpose.observers.audit import AuditLog
from interpose.replay import replay_files

CONFIG = """
[permissions]
ask = ["Bash(git push:*)"]

[approvals]
store = "memory"
"""

# (session, call id, command, what the person does: (action, keywords) or None: no ask)
SESSION: list[tuple[str, str, str, tuple[str, dict[str, Any]] | None]] = [
    ("s1", "c1", "git push origin a", ("approve", {"grant": GrantSpec(match="rule")})),
    ("s1", "c2", "git push origin b", None),  # the grant allows it
    ("s2", "c3", "git push origin c", ("deny", {"reason": "not today"})),
    ("s2", "c4", "git push --force origin d", ("edit", {"args": {"command": "git push origin d"}})),
    ("s2", "c5", "ls", None),
]


async def record(config: Path, log_path: Path) -> None:
    pipe = pipeline_from_file(config)
    handler: Any = pipe.human_approval
    store: MemoryApprovalStore = handler.store
    log = AuditLog(log_path)
    log.attach(pipe, record_args=True)

    async def person() -> None:
        answers = {call_id: what for _, call_id, _, what in SESSION if what is not None}
        async for change in store.changes("0"):
            request = change.request
            if change.kind == "request_created" and request is not None:
                action, kw = answers.pop(request.tool_call_id)
                who = "bob" if action == "deny" else "alice"
                await store.decide(request.id, action, approver=who, **kw)  # type: ignore[arg-type]
                if not answers:
                    return

    with anyio.fail_after(LIMIT):
        async with pipe, anyio.create_task_group() as tg:
            tg.start_soon(person)
            for session, call_id, command, _ in SESSION:
                async with pipe.turn(agent_id="coder", session_key=session) as turn:
                    await turn.call_tool(
                        "exec", {"command": command}, call=lambda a: "ok", call_id=call_id
                    )
    log.close()


async def test_replayed_asks_are_answered_as_recorded(tmp_path: Path) -> None:
    config = tmp_path / "interpose.toml"
    config.write_text(CONFIG)
    log = tmp_path / "audit.jsonl"
    await record(config, log)
    report = await replay_files([log], config, every=True)
    rows = {d.call.event.tool_call_id: d for d in report.diffs}
    assert set(rows) == {"c1", "c2", "c3", "c4", "c5"}
    assert report.changed == []  # nothing asked anew, nothing newly blocked
    assert rows["c1"].asked == "recorded decision: approved by alice"
    assert rows["c2"].asked.startswith("grant grt_")
    assert rows["c2"].asked.endswith("(granted by alice)")
    assert rows["c2"].new.status == "ok"
    assert rows["c3"].asked == "recorded decision: denied by bob"
    assert (rows["c3"].recorded.status, rows["c3"].new.status) == ("denied", "denied")
    assert rows["c3"].new.reason == "not today"
    assert rows["c4"].asked == "recorded decision: edited by alice"
    assert rows["c4"].new.status == "ok"
    assert rows["c5"].asked == ""
    assert report.answered == 4
    assert "4 asks answered as recorded" in report.summary()


def test_the_cli_names_the_grant_and_a_new_ask_is_denied(tmp_path: Path) -> None:
    config = tmp_path / "interpose.toml"
    config.write_text(CONFIG)
    log = tmp_path / "audit.jsonl"
    anyio.run(record, config, log)
    proc = subprocess.run(
        [sys.executable, "-m", "interpose", "replay", str(log), "--config", str(config), "--all"],
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [c2] = [line for line in proc.stdout.splitlines() if " c2 " in line]
    assert "ok (grant grt_" in c2
    assert "(granted by alice))" in c2
    assert "unchanged" in c2
    # a stricter rule asks where the recorded run did not: a new ask, denied
    stricter = tmp_path / "stricter.toml"
    stricter.write_text(
        CONFIG.replace('ask = ["Bash(git push:*)"]', 'ask = ["Bash(git push:*)", "Bash(ls)"]')
    )
    report = anyio.run(replay_files, [log], stricter)
    [c5] = report.changed
    assert c5.call.event.tool_call_id == "c5"
    assert c5.change == "allowed -> blocked"
    assert "a replay asks no one" in c5.new.reason
