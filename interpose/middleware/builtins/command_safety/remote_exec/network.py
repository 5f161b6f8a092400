"""Rule ``reverse-shell`` for network tools: ``nc``/``ncat``/``netcat`` running a
program, ``socat`` joining a network address to ``EXEC:``/``SYSTEM:``."""

from __future__ import annotations

from ..invocation import Invocation
from ..model import Finding
from ..options import word_set
from ..run import Run

_NC_ARG = "psSwiqxXIOTVMmgG"
_NC_LONG = word_set(
    "exec sh-exec lua-exec listen keep-open verbose udp wait source-port source ssl proxy "
    "output hex-dump send-only recv-only allow deny chat broker nodns crlf idle-timeout"
)
_NC_EXEC = frozenset({"exec", "sh-exec", "lua-exec"})
_SOCAT_NET = ("tcp", "udp", "openssl", "ssl", "sctp", "socks", "proxy", "dccp", "udplite")
_SOCAT_EXEC = ("exec:", "system:", "exec,", "system,")


def rule_netcat(inv: Invocation, run: Run) -> Finding | None:
    for word in inv.args:
        t = word.text
        if t.startswith("--"):
            name = t[2:].partition("=")[0]
            matches = [o for o in _NC_LONG if o.startswith(name)] if name else []
            full = name if name in _NC_LONG else matches[0] if len(matches) == 1 else ""
            if full in _NC_EXEC:
                return _reverse_shell(inv, t)
        elif len(t) > 1 and t[0] == "-":
            for ch in t[1:]:
                if ch in "ec":
                    return _reverse_shell(inv, t)
                if ch in _NC_ARG:
                    break
    return None


def _reverse_shell(inv: Invocation, flag: str) -> Finding:
    return Finding(
        "reverse-shell",
        flag,
        f"{inv.shown} {flag} hands a program (a shell) to a network peer (token {flag!r})",
    )


def rule_socat(inv: Invocation, run: Run) -> Finding | None:
    addresses = [w.text.lower() for w in inv.args if not w.text.startswith("-")]
    runs = next((a for a in addresses if a.startswith(_SOCAT_EXEC)), None)
    if runs is not None and any(a.startswith(_SOCAT_NET) for a in addresses):
        return _reverse_shell(inv, runs)
    return None
