"""The Windows rules that guard the machine's defences and accounts (:data:`RULES`):
Defender preferences and exclusions, the firewall, the execution policy, security
services, audit policy, Windows features (rule ``windows-defense``), and accounts made,
enabled, given a password or made administrators (rule ``windows-persistence``); the
rest of the Windows rules are :mod:`.windows_rules`'s."""

from __future__ import annotations

import re

from .model import Finding
from .windows_paths import critical
from .windows_rules import (
    CREDENTIALS,
    DEFENSE,
    FALSE,
    PERSISTENCE,
    Params,
    WinCommand,
    WinRule,
    bind,
)

_DEFENSE_SERVICES = frozenset(
    {
        "windefend",
        "sense",
        "wscsvc",
        "mpssvc",
        "wdnissvc",
        "eventlog",
        "securityhealthservice",
        "bfe",
    }
)
_MP_ALIASES = frozenset({"drtm", "dbm", "dioavp", "dscrptsc", "dbaf", "dips", "darchsc", "dcfsc"})
_RISKY_EXT = frozenset({"exe", "dll", "ps1", "bat", "cmd", "vbs", "js", "hta", "scr", "msi", "lnk"})
_SHELLS = frozenset(
    {"powershell", "pwsh", "cmd", "wscript", "cscript", "mshta", "rundll32", "regsvr32"}
)


def _mp_preference(cmd: WinCommand) -> Finding | None:
    texts = cmd.texts
    for i, text in enumerate(texts):
        if not text.startswith("-"):
            continue
        name, _, inline = text[1:].lower().partition(":")
        value = inline or (texts[i + 1].lower() if i + 1 < len(texts) else "$true")
        if value.startswith("-"):
            value = "$true"
        if (name.startswith("dis") or name in _MP_ALIASES) and value not in FALSE:
            return Finding(DEFENSE, text, f"{cmd.shown} {text} turns Defender protection off")
        if name.startswith(("mapsr", "puap", "enablecon", "enablenet")) and value in (
            "0",
            "disabled",
        ):
            return Finding(
                DEFENSE, text, f"{cmd.shown} {text} {value} turns Defender protection off"
            )
        if name.startswith("submitsam") and value in ("2", "neversend"):
            return Finding(
                DEFENSE, text, f"{cmd.shown} {text} {value} turns Defender protection off"
            )
        if name.startswith("exclusion"):
            found = _exclusion(cmd, name, [v for v in texts[i + 1 :] if not v.startswith("-")][:8])
            if found is not None:
                return found
    return None


def _exclusion(cmd: WinCommand, name: str, values: list[str]) -> Finding | None:
    for value in values:
        low = value.lower().lstrip("*.")
        if (name.startswith("exclusionp") and "process" in name) or name.startswith("exclusionpr"):
            risky = low.rsplit("\\", 1)[-1].removesuffix(".exe") in _SHELLS
        elif name.startswith("exclusione"):
            risky = low in _RISKY_EXT
        else:
            path = cmd.path(value)
            risky = critical(path) is not None or "/temp" in path or path.endswith("/downloads")
        if risky:
            return Finding(
                DEFENSE, value, f"{cmd.shown} -{name} {value!r} exempts it from Defender scans"
            )
    return None


_EXECUTION_POLICY = Params(
    {"executionpolicy": True, "scope": True, "force": False}, ("executionpolicy", "scope")
)


def _execution_policy(cmd: WinCommand) -> Finding | None:
    b = bind(cmd, _EXECUTION_POLICY)
    policy = " ".join(b.get("executionpolicy", [])).lower()
    scope = " ".join(b.get("scope", ["localmachine"])).lower()
    if policy in ("unrestricted", "bypass") and scope != "process":
        return Finding(
            DEFENSE,
            policy,
            f"Set-ExecutionPolicy {policy} lets every script run for scope {scope} "
            f"(use -Scope Process)",
        )
    return None


def _service_change(cmd: WinCommand) -> Finding | None:
    low = cmd.lower()
    named = [
        t for t in low if t in _DEFENSE_SERVICES or t.removeprefix("/name:") in _DEFENSE_SERVICES
    ]
    if not named:
        return None
    if cmd.name in ("stop-service", "spsv", "remove-service") or any(
        t in ("stop", "delete", "disabled", "config", "pause") for t in low
    ):
        return Finding(
            DEFENSE, named[0], f"{cmd.shown} stops or disables {named[0]}, a security service"
        )
    return None


def _net(cmd: WinCommand) -> Finding | None:
    """``net user X /add``, a password set, ``net localgroup administrators X /add``: an
    account planted or taken over; then the service rule (``net stop WinDefend``)."""
    low = cmd.lower()
    if low[:1] == ["user"] and len(low) >= 3 and not low[2].startswith("/"):
        return Finding(
            PERSISTENCE, cmd.texts[1], f"net user {cmd.texts[1]} sets an account's password"
        )
    if low[:1] == ["user"] and ("/add" in low or "/active:yes" in low):
        return Finding(
            PERSISTENCE, " ".join(cmd.texts[:2]), "net user creates or enables an account"
        )
    if low[:1] == ["localgroup"] and len(low) > 2 and low[1] in _ADMIN_GROUPS and "/add" in low:
        return Finding(PERSISTENCE, low[1], f"net localgroup {low[1]} /add makes an administrator")
    return _service_change(cmd)


_ADMIN_GROUPS = frozenset({"administrators", "administrateurs", "remote desktop users"})


def _local_user(cmd: WinCommand) -> Finding | None:
    """``New-LocalUser``, ``Set-LocalUser -Password``, ``Enable-LocalUser``, and
    ``Add-LocalGroupMember -Group Administrators``."""
    low = cmd.lower()
    if cmd.name == "add-localgroupmember" and not any(g in low for g in _ADMIN_GROUPS):
        return None
    if cmd.name == "set-localuser" and not any(t.startswith("/pa") for t in low):
        return None
    return Finding(PERSISTENCE, cmd.shown, f"{cmd.shown} creates, enables or empowers an account")


def _sc(cmd: WinCommand) -> Finding | None:
    low = cmd.lower()
    verbs = [t for t in low if not t.startswith("\\\\")][:1]
    if (verbs and verbs[0] in ("create",)) or (
        verbs and verbs[0] == "config" and any(t.startswith("binpath") for t in low)
    ):
        return Finding(
            PERSISTENCE, cmd.shown, f"{cmd.shown} {verbs[0]} installs a service that runs at boot"
        )
    return _service_change(cmd)


def _netsh(cmd: WinCommand) -> Finding | None:
    low = cmd.lower()
    text = " ".join(low)
    if re.search(
        r"\badvfirewall set \w+ state off\b|\bfirewall set opmode (?:mode=)?disable", text
    ):
        return Finding(DEFENSE, text[:60], "netsh turns the Windows firewall off")
    if "wlan" in low and "key=clear" in low:
        return Finding(CREDENTIALS, "key=clear", "netsh wlan ... key=clear prints Wi-Fi passwords")
    if re.search(r"\badd helper\b", text):
        return Finding(
            PERSISTENCE, "add helper", "netsh add helper loads a DLL every time netsh runs"
        )
    return None


def _firewall_profile(cmd: WinCommand) -> Finding | None:
    for i, t in enumerate(cmd.texts):
        name, _, inline = t.lower().partition(":")
        value = inline or (cmd.texts[i + 1].lower() if i + 1 < len(cmd.texts) else "")
        if name.startswith("-en") and value in ("false", "$false", "0"):
            return Finding(DEFENSE, t, f"{cmd.shown} -Enabled {value} turns the firewall off")
    return None


def _auditpol(cmd: WinCommand) -> Finding | None:
    low = cmd.lower()
    if any(t in ("/clear", "/remove") for t in low) or any(t.endswith(":disable") for t in low):
        return Finding(DEFENSE, cmd.shown, "auditpol turns security auditing off")
    return None


def _feature(cmd: WinCommand) -> Finding | None:
    if any("defender" in t for t in cmd.lower()):
        return Finding(DEFENSE, cmd.shown, f"{cmd.shown} removes Windows Defender")
    return None


RULES: dict[str, tuple[WinRule, ...]] = {
    "set-mppreference": (_mp_preference,),
    "add-mppreference": (_mp_preference,),
    "netsh": (_netsh,),
    "set-netfirewallprofile": (_firewall_profile,),
    "set-executionpolicy": (_execution_policy,),
    "stop-service": (_service_change,),
    "set-service": (_service_change,),
    "net": (_net,),
    "auditpol": (_auditpol,),
    "uninstall-windowsfeature": (_feature,),
    "remove-windowsfeature": (_feature,),
    "disable-windowsoptionalfeature": (_feature,),
    "sc": (_sc,),
    "new-localuser": (_local_user,),
    "set-localuser": (_local_user,),
    "enable-localuser": (_local_user,),
    "add-localgroupmember": (_local_user,),
}
"""Rules by folded command name (merged with :data:`.windows_rules.RULES`)."""
