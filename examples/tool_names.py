"""Tool names: normalization, groups, aliases, matchers and their validation.

Tool names are normalized (trimmed, lower-cased, aliases resolved) before matching.  A
matcher is a regex (``re.search`` on the normalized name), a compiled pattern, a
``group:*`` name or a list of names and groups.  A matcher that matches no known or
registered tool is refused at registration, with the list of valid names.
"""

from __future__ import annotations

import re
from typing import Any

import anyio

from interpose import (
    KNOWN_TOOL_NAMES,
    TOOL_ALIASES,
    TOOL_GROUPS,
    Pipeline,
    RegistrationError,
    ToolBeforeInput,
    ToolBeforeOutput,
    normalize_tool_name,
)


def noop(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    """An interceptor that does nothing; only its matcher matters here."""


def run(args: dict[str, Any]) -> str:
    """The tool: returns a fixed output."""
    return "done"


async def main() -> None:
    print("normalize:", normalize_tool_name(" Bash "), normalize_tool_name("Apply-Patch"))
    print("aliases:", TOOL_ALIASES)
    print("group:runtime =", sorted(TOOL_GROUPS["group:runtime"]))
    print("known tools:", len(KNOWN_TOOL_NAMES))

    pipe = Pipeline(builtins=False)
    pipe.intercept("tool.before", tools=r"^exec$", id="regex")(noop)
    pipe.intercept("tool.before", tools=r"^bash$", id="alias-regex")(noop)  # aliases match too
    pipe.intercept("tool.before", tools=re.compile(r"^web_"), id="compiled")(noop)
    pipe.intercept("tool.before", tools="group:fs", id="group")(noop)
    pipe.intercept("tool.before", tools=["bash", "group:memory"], id="list")(noop)
    pipe.intercept("tool.before", id="every-tool")(noop)  # no matcher: every tool
    for tool in ("BASH", "web_fetch", "apply-patch", "memory_get", "tts"):
        ids = [reg.id for reg in pipe.registry.get("tool.before", tool=tool)]
        print(f"{tool:>12} -> {ids}")

    # a matcher that can never match is refused, and says what would have been valid
    try:
        pipe.intercept("tool.before", tools="^shell$", id="typo")(noop)
    except RegistrationError as exc:
        message = str(exc)
        print("refused:", message[: message.index("valid tool names")].rstrip("; "))
        print("  the message goes on:", message[message.index("valid tool names") :][:60], "...")

    # application tools extend the known set; then matchers may name them
    print("register_tool:", pipe.register_tool("Deploy"))
    pipe.intercept("tool.before", tools="^deploy$", id="deploy-gate")(noop)
    result = await pipe.call_tool("deploy", {}, call=run)
    ids = [reg.id for reg in pipe.registry.get("tool.before", tool="deploy")]
    print("deploy:", result.status, ids)


if __name__ == "__main__":
    anyio.run(main)
