"""macOS persistence and protection (rules by command name, judged on the bash side).

- ``macos-persistence``: ``launchctl load``/``bootstrap``/``enable``/``submit`` (a launch
  agent or daemon started and kept), ``defaults write`` of a login or logout hook
  (``com.apple.loginwindow LoginHook``) or of a plist in a LaunchAgents/LaunchDaemons
  folder, ``plutil``/``PlistBuddy`` edits there, an AppleScript ``make login item``.
  Writing a plist into ``~/Library/LaunchAgents``, ``/Library/LaunchAgents`` or
  ``/Library/LaunchDaemons`` by any writer is rule ``persistence`` (:mod:`.filesystem`).
- ``macos-protection``: ``csrutil disable``, ``spctl --master-disable``, ``nvram`` writes
  of boot and security variables (``boot-args``, ``csr-active-config``, ``-c``),
  ``tmutil delete``/``disable`` and snapshot deletion, ``fdesetup disable``, the
  application firewall turned off.
- ``macos-accounts``: ``dscl`` giving a user ``UniqueID 0``, admin or wheel membership, a
  password or deleting a user; ``sysadminctl`` and ``dseditgroup`` doing the same.
- ``osascript -e '... do shell script "..."'`` (and JXA's ``doShellScript``): the shell
  text is judged by every rule, ``with administrator privileges`` or not.

Keychain reads (``security dump-keychain``, ``find-generic-password -w``) are rule
``sensitive-read`` (:mod:`.secrets`); erasing disks (``diskutil eraseDisk``...) is rule
``disk`` (:mod:`.disk`).
"""

from __future__ import annotations

import re

from ..security_audit import resolve_path
from ..shell import Word
from .invocation import Invocation
from .model import HOME, Finding
from .paths import persistence
from .run import Rule, Run

PERSISTENCE = "macos-persistence"
PROTECTION = "macos-protection"
ACCOUNTS = "macos-accounts"


def _texts(inv: Invocation) -> list[str]:
    return [w.text for w in inv.args]


def _launchctl(inv: Invocation, run: Run) -> Finding | None:
    args = _texts(inv)
    if not args:
        return None
    verb = args[0].lower()
    if verb in ("load", "bootstrap", "enable", "submit"):
        return Finding(
            PERSISTENCE,
            verb,
            f"launchctl {verb} starts a launch agent or daemon that runs again at login or boot",
        )
    if verb == "setenv" and any(a.upper().startswith("DYLD_") for a in args[1:2]):
        return Finding(
            PERSISTENCE,
            args[1],
            "launchctl setenv DYLD_* injects a library into every program launched",
        )
    if verb in ("asuser", "bsexec") and len(args) > 2:
        return run.argv([Word(a, quoted=True) for a in args[2:]], f"launchctl {verb}")
    return None


_HOOKS = re.compile(r"^(?:loginhook|logouthook|autolaunchedapplicationdictionary)$", re.IGNORECASE)


def _plist_path(text: str) -> str:
    return resolve_path(text if text.endswith(".plist") else text + ".plist", home=HOME)


def _defaults(inv: Invocation, run: Run) -> Finding | None:
    args = [a for a in _texts(inv) if a not in ("-currentHost",) and not a.startswith("-host")]
    if len(args) < 2 or args[0].lower() != "write":
        return None
    domain = args[1]
    if "loginwindow" in domain.lower() and any(_HOOKS.match(a) for a in args[2:3]):
        return Finding(
            PERSISTENCE, args[2], f"defaults write {domain} {args[2]} runs a script at every login"
        )
    if ("/" in domain or domain.startswith("~")) and persistence(_plist_path(domain)):
        return Finding(
            PERSISTENCE, domain, f"defaults write {domain} writes a launch agent or daemon"
        )
    if (
        domain.lower().endswith("com.apple.alf")
        and [a.lower() for a in args[2:3]] == ["globalstate"]
        and args[-1] == "0"
    ):
        return Finding(
            PROTECTION,
            domain,
            "defaults write com.apple.alf globalstate 0 turns the firewall off",
        )
    return None


def _plist_editor(inv: Invocation, run: Run) -> Finding | None:
    for text in _texts(inv):
        if text.endswith(".plist") and persistence(resolve_path(text, home=HOME)):
            if inv.name == "plutil" and any(a in ("-p", "-lint", "-help") for a in _texts(inv)):
                return None
            if inv.name.lower() == "plistbuddy" and all(
                re.match(r"^\s*print\b", a, re.IGNORECASE) for a in _texts(inv)[1:-1:2]
            ):
                return None
            return Finding(
                PERSISTENCE, text, f"{inv.shown} edits {text!r}, a launch agent or daemon"
            )
    return None


def _csrutil(inv: Invocation, run: Run) -> Finding | None:
    args = [a.lower() for a in _texts(inv)]
    if "disable" in args:
        return Finding(
            PROTECTION, "disable", "csrutil disable turns System Integrity Protection off"
        )
    return None


def _spctl(inv: Invocation, run: Run) -> Finding | None:
    for a in _texts(inv):
        if a.lower() in ("--master-disable", "--global-disable", "--disable"):
            return Finding(PROTECTION, a, f"spctl {a} turns Gatekeeper off")
    return None


_NVRAM_GUARDED = frozenset(
    {"boot-args", "csr-active-config", "security-mode", "recovery-boot-mode"}
)
"""Firmware variables that turn protection off or change how the system boots (others,
``StartupMute``, ``SystemAudioVolume``, are everyday settings)."""


def _nvram(inv: Invocation, run: Run) -> Finding | None:
    for a in _texts(inv):
        name = a.split("=", 1)[0].lower()
        if (
            a in ("-c", "-f")
            or ("=" in a and name in _NVRAM_GUARDED)
            or (a == "-d" and any(t.lower() in _NVRAM_GUARDED for t in _texts(inv)))
        ):
            return Finding(
                PROTECTION, a, f"nvram {a} changes how the Mac boots or its security settings"
            )
    return None


_TMUTIL_VERBS = frozenset(
    {"delete", "disable", "disablelocal", "deletelocalsnapshots", "thinlocalsnapshots"}
    | {"removedestination"}
)


def _tmutil(inv: Invocation, run: Run) -> Finding | None:
    args = _texts(inv)
    verb = args[0].lower() if args else ""
    if verb in _TMUTIL_VERBS:
        return Finding(PROTECTION, verb, f"tmutil {verb} deletes or turns off Time Machine backups")
    return None


def _fdesetup(inv: Invocation, run: Run) -> Finding | None:
    if any(a.lower() == "disable" for a in _texts(inv)):
        return Finding(
            PROTECTION, "disable", "fdesetup disable turns FileVault disk encryption off"
        )
    return None


def _pfctl(inv: Invocation, run: Run) -> Finding | None:
    if "-d" in _texts(inv):
        return Finding(PROTECTION, "-d", "pfctl -d turns the packet filter (firewall) off")
    return None


def _firewall(inv: Invocation, run: Run) -> Finding | None:
    args = [a.lower() for a in _texts(inv)]
    for i, a in enumerate(args):
        if a == "--setglobalstate" and args[i + 1 : i + 2] == ["off"]:
            return Finding(
                PROTECTION, a, "socketfilterfw --setglobalstate off turns the firewall off"
            )
    return None


def _dscl(inv: Invocation, run: Run) -> Finding | None:
    args = _texts(inv)
    low = [a.lower() for a in args]
    verbs = [
        a
        for a in low
        if a.startswith("-") and a not in ("-plist", "-u", "-p", "-raw", "-url", "-q")
    ]
    if not verbs:
        return None
    verb = verbs[0]
    line = " ".join(low)
    if verb == "-passwd":
        return Finding(ACCOUNTS, verb, "dscl -passwd changes a user's password")
    if verb in ("-create", "-append", "-merge"):
        if re.search(r"\buniqueid\s+0\b|\bprimarygroupid\s+0\b", line):
            return Finding(ACCOUNTS, "UniqueID 0", "dscl gives an account root's user or group id")
        if re.search(r"/groups/(?:admin|wheel)\b.*\bgroupmembership\b", line):
            return Finding(ACCOUNTS, "admin", "dscl adds a user to the admin or wheel group")
    if verb == "-delete" and "/users/" in line:
        return Finding(ACCOUNTS, verb, "dscl -delete removes a user account")
    return None


def _sysadminctl(inv: Invocation, run: Run) -> Finding | None:
    low = [a.lower() for a in _texts(inv)]
    if ("-adduser" in low and "-admin" in low) or any(
        a in ("-resetpasswordfor", "-deleteuser", "-secureTokenOn".lower()) for a in low
    ):
        return Finding(
            ACCOUNTS,
            "sysadminctl",
            "sysadminctl creates an admin, resets a password or deletes a user",
        )
    return None


def _dseditgroup(inv: Invocation, run: Run) -> Finding | None:
    low = [a.lower() for a in _texts(inv)]
    if "edit" in low and "-a" in low and ("admin" in low or "wheel" in low):
        return Finding(ACCOUNTS, "admin", "dseditgroup adds a user to the admin or wheel group")
    return None


_SHELL_SCRIPT = re.compile(r"do\s+(?:shell\s+)?script\s+\"((?:[^\"\\]|\\.)*)\"", re.IGNORECASE)
"""``do shell script "..."``, and Terminal's ``do script "..."`` (typed into a shell)."""
_JXA_SHELL = re.compile(r"doShellScript\s*\(\s*(['\"])((?:(?!\1)[^\\]|\\.)*)\1")
_LOGIN_ITEM = re.compile(r"\bmake\s+(?:new\s+)?login\s+item\b", re.IGNORECASE)


def _osascript(inv: Invocation, run: Run) -> Finding | None:
    args = _texts(inv)
    program = "\n".join(args[i + 1] for i, a in enumerate(args[:-1]) if a == "-e")
    if _LOGIN_ITEM.search(program):
        return Finding(
            PERSISTENCE, "login item", "osascript makes a login item (a program run at every login)"
        )
    scripts = [m[1] for m in _SHELL_SCRIPT.finditer(program)]
    scripts += [m[2] for m in _JXA_SHELL.finditer(program)]
    for script in scripts:
        text = re.sub(r"\\(.)", r"\1", script)
        found = run.nested(text, "osascript's do shell script")
        if found is not None:
            return found
    return None


RULES: dict[str, tuple[Rule, ...]] = {
    "launchctl": (_launchctl,),
    "defaults": (_defaults,),
    "plutil": (_plist_editor,),
    "plistbuddy": (_plist_editor,),
    "csrutil": (_csrutil,),
    "spctl": (_spctl,),
    "nvram": (_nvram,),
    "tmutil": (_tmutil,),
    "fdesetup": (_fdesetup,),
    "socketfilterfw": (_firewall,),
    "pfctl": (_pfctl,),
    "dscl": (_dscl,),
    "sysadminctl": (_sysadminctl,),
    "dseditgroup": (_dseditgroup,),
    "osascript": (_osascript,),
}
