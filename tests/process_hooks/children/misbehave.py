"""A process hook that misbehaves on request: ``args["behave"]`` says how.

ok (or absent)  answer: before_tool responds "answered by <pid>", approve_tool allows
sleep           never answer (the child keeps serving other requests)
garbage         write a line that is not JSON
exit            write "crashing" to stderr and exit with code 3, without answering
flood           write a line of ``FLOOD`` bytes (default 200000)
wrong_id        answer with an id that was never sent
bad_type        answer ``{"args": "not a dict"}``
rpc_error       answer with a JSON-RPC error
deaf            never answer, and stop reading stdin (so that it fills up)
hold            do not answer until a later ``release`` request
release         answer the held requests first, then this one
spawn           start a grandchild that sleeps, holding this child's stdin, stdout and
                stderr, append its pid to the file ``$PIDS``, then answer
orphan          like spawn, but exit with code 3 instead of answering
bad_utf8        answer with a reason that is not valid UTF-8 (byte 0xff)
bad_utf8_error  answer with a JSON-RPC error whose message is not valid UTF-8

With ``BROKEN_HELLO`` set, the handshake reply has the wrong protocol_version; with
``DEAF`` set, it stops reading its stdin once it has answered the handshake.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any


def write_line(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def reply(id: Any, result: Any) -> None:
    write_line(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}))


def messages() -> Iterator[dict[str, Any]]:
    for line in sys.stdin:
        if line.strip():
            message: dict[str, Any] = json.loads(line)
            yield message


def write_bytes(data: bytes) -> None:
    sys.stdout.buffer.write(data + b"\n")
    sys.stdout.flush()


def spawn_grandchild() -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["PIDS"], "a") as pids:
        pids.write(f"{sleeper.pid}\n")


def ok(method: str) -> dict[str, Any]:
    if method == "hook.approve_tool":
        return {"allow": True}
    answer = {"for_llm": f"answered by {os.getpid()}"}
    return {"decision": {"action": "respond"}, "hook_result": answer}


def main() -> None:
    held: list[tuple[Any, str]] = []
    for message in messages():
        id, method = message.get("id"), message.get("method", "")
        if method == "hook.hello":
            version = 2 if os.environ.get("BROKEN_HELLO") else 1
            reply(id, {"name": "misbehave", "protocol_version": version})
            if os.environ.get("DEAF"):
                time.sleep(3600)
            continue
        if id is None:
            continue
        behave = message.get("params", {}).get("args", {}).get("behave", "ok")
        if behave == "sleep":
            continue
        if behave == "deaf":
            time.sleep(3600)
        if behave == "garbage":
            write_line("this is not json")
        elif behave == "exit":
            print("crashing", file=sys.stderr, flush=True)
            os._exit(3)
        elif behave == "flood":
            write_line("x" * int(os.environ.get("FLOOD", "200000")))
        elif behave == "wrong_id":
            reply(id + 1000, ok(method))
        elif behave == "bad_type":
            reply(id, {"args": "not a dict"})
        elif behave == "rpc_error":
            error = {"code": -32000, "message": "database unavailable"}
            write_line(json.dumps({"jsonrpc": "2.0", "id": id, "error": error}))
        elif behave in ("spawn", "orphan"):
            spawn_grandchild()
            if behave == "orphan":
                os._exit(3)
            reply(id, ok(method))
        elif behave == "bad_utf8":
            reason = b'{"action": "deny_tool", "reason": "caf\xff"}'
            write_bytes(b'{"jsonrpc": "2.0", "id": %d, "result": {"decision": %s}}' % (id, reason))
        elif behave == "bad_utf8_error":
            broken = b'{"code": -32000, "message": "caf\xff"}'
            write_bytes(b'{"jsonrpc": "2.0", "id": %d, "error": %s}' % (id, broken))
        elif behave == "hold":
            held.append((id, method))
        elif behave == "release":
            for held_id, held_method in held:
                reply(held_id, ok(held_method))
            held.clear()
            reply(id, ok(method))
        else:
            reply(id, ok(method))


if __name__ == "__main__":
    main()
