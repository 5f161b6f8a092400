"""The Windows rules, one function per program or cmdlet (:data:`RULES`), judging a
:class:`WinCommand`: a command of PowerShell or cmd (or a Windows program called from
bash) with its name folded (aliases, ``.exe``, case) and its arguments' variables
expanded.  Cmdlet parameters are bound as PowerShell binds them (:func:`bind`: any case,
unambiguous prefixes, ``-Name:value``, positions).

Rule ids: ``windows-destruction``, ``windows-rce``, ``windows-persistence``,
``windows-defense``, ``windows-credentials``; the defence and account rules live in
:mod:`.windows_defense`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .model import Finding
from .powershell import PsWord
from .windows_paths import critical, resolve, secret, startup, system_file

DESTRUCTION = "windows-destruction"
RCE = "windows-rce"
PERSISTENCE = "windows-persistence"
DEFENSE = "windows-defense"
CREDENTIALS = "windows-credentials"


@dataclass(slots=True)
class WinCommand:
    """One command as it will run: ``name`` folded (``remove-item``, ``reg``), ``shown``
    as written, ``args`` with ``texts`` (their values, variables expanded)."""

    name: str
    shown: str
    args: Sequence[PsWord]
    texts: list[str]
    values: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    piped: tuple[str, ...] = ()  # paths handed on by an upstream Get-ChildItem
    assigned: frozenset[str] = frozenset()  # variables the text itself sets (lower-case)

    def path(self, text: str) -> str:
        return resolve(text, self.values, self.cwd)

    def lower(self) -> list[str]:
        """The arguments lower-case, ``-x`` switches of Windows programs written ``/x``."""
        return [("/" + t[1:] if t.startswith("-") else t).lower() for t in self.texts]


WinRule = Callable[[WinCommand], "Finding | None"]

_COMMON = {
    "erroraction": True,
    "ea": True,
    "warningaction": True,
    "wa": True,
    "informationaction": True,
    "errorvariable": True,
    "outvariable": True,
    "outbuffer": True,
    "pipelinevariable": True,
    "verbose": False,
    "debug": False,
    "whatif": False,
    "confirm": False,
    "progressaction": True,
}
FALSE = frozenset({"$false", "false", "0", "$null"})
"""How PowerShell spells a switch or value turned off."""


@dataclass(frozen=True, slots=True)
class Params:
    """A cmdlet's parameters (name -> takes a value) and those bound by position."""

    names: Mapping[str, bool]
    positional: tuple[str, ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)

    def match(self, written: str) -> list[str]:
        """The parameters ``-written`` names: exact, an alias, or every one it prefixes
        (PowerShell refuses an ambiguous prefix; naming them all is the cautious reading)."""
        every = {**_COMMON, **self.names}
        if written in every:
            return [written]
        if written in self.aliases:
            return [self.aliases[written]]
        return [n for n in every if n.startswith(written)]


def bind(cmd: WinCommand, params: Params) -> dict[str, list[str]]:
    """Bind ``cmd``'s arguments: parameter -> values (``["$true"]`` for a switch);
    unbound positional values under ``""``."""
    bound: dict[str, list[str]] = {}
    position = 0
    texts, args = cmd.texts, cmd.args
    i = 0
    while i < len(texts):
        text, word = texts[i], args[i]
        if text.startswith("-") and len(text) > 1 and not word.quoted and text[1] != "-":
            name, _, inline = text[1:].partition(":")
            names = params.match(name.lower())
            every = {**_COMMON, **params.names}
            takes = any(every.get(n, False) for n in names)
            if inline:
                value = inline
            elif takes and i + 1 < len(texts):
                i += 1
                value = texts[i]
            else:
                value = "$true"
            for n in names:
                bound.setdefault(n, []).append(value)
        else:
            if position < len(params.positional):
                bound.setdefault(params.positional[position], []).append(text)
                position += 1
            else:
                bound.setdefault("", []).append(text)
        i += 1
    return bound


def on(bound: Mapping[str, list[str]], name: str) -> bool:
    """Whether switch ``name`` is set (``-Recurse``, not ``-Recurse:$false``)."""
    return any(v.lower() not in FALSE for v in bound.get(name, ()))


def _glob_parent(path: str) -> tuple[str, bool]:
    """``path`` with a trailing glob component cut off, and whether one was."""
    head, _, last = path.rstrip("/").rpartition("/")
    if re.search(r"[*?\[]", last):
        return (head + "/" if head.endswith(":") else head) or ".", True
    return path, False


def _sample(path: str) -> str:
    """``path`` with glob characters in inner components read as a plain name."""
    parts = path.split("/")
    return "/".join(["x" if re.search(r"[*?\[]", p) else p for p in parts[:-1]] + parts[-1:])


_WHOLE_VAR = re.compile(
    r"^(?:\$\{?([\w:]+)\}?(?:\.\w+|\[[^\]]*\])*|[%!](\w+)[%!]|%%?~?[a-z]*[0-9*]|%%?([a-z])|\x00)$",
    re.IGNORECASE,
)
_PIPELINE_VARS = frozenset({"_", "psitem"})


def unknown(cmd: WinCommand, target: str) -> bool:
    """Whether ``target`` (expanded) is wholly a value known only at run time that the
    text itself does not set: a variable from outside, a script argument, a group."""
    match = _WHOLE_VAR.match(target.strip())
    if match is None:
        return False
    name = (match[1] or match[2] or match[3] or "").lower()
    return not (
        name in _PIPELINE_VARS or name in cmd.assigned or name.removeprefix("env:") in cmd.assigned
    )


def delete_target(cmd: WinCommand, verb: str, target: str, recursive: bool) -> Finding | None:
    """Judge deleting ``target`` (as written)."""
    if target.lower().startswith(("hklm", "hkcu", "hkey_", "registry::", "hku", "hkcr")):
        return _registry_delete(verb, target, recursive)
    if recursive and unknown(cmd, target):
        shown = target.replace("\x00", "(...)")
        return Finding(
            DESTRUCTION,
            shown,
            f"{verb} targets {shown!r}, known only at run time; a recursive delete of an "
            f"unknown target is not run",
        )
    path = _sample(cmd.path(target))
    parent, globbed = _glob_parent(path)
    if globbed and parent in (".", ""):  # in the working directory: only "everything" is
        if recursive and path.rsplit("/", 1)[-1] in ("*", "*.*"):
            return Finding(DESTRUCTION, target, f"{verb} targets {target!r}, the working directory")
        return None
    what = critical(parent if globbed else path)
    if what is not None and (recursive or globbed):
        shown = f"everything in {what}" if globbed else what
        return Finding(DESTRUCTION, target, f"{verb} targets {target!r}, {shown}")
    if system_file(path):
        return Finding(DESTRUCTION, target, f"{verb} deletes {target!r}, a file of Windows itself")
    return None


_HIVE = re.compile(r"^(?:registry::)?(hklm|hkcu|hku|hkcr|hkey_[a-z_]+):?$")


def _registry_delete(verb: str, key: str, recursive: bool) -> Finding | None:
    parts = [p for p in key.lower().replace("/", "\\").split("\\") if p]
    if parts and _HIVE.match(parts[0]) and len(parts) <= 2 + ("currentcontrolset" in parts):
        return Finding(
            DESTRUCTION, key, f"{verb} deletes the registry key {key!r} and all below it"
        )
    return None


# -- destruction ---------------------------------------------------------------------------

_REMOVE_ITEM = Params(
    {"path": True, "literalpath": True, "recurse": False, "force": False, "filter": True,
     "include": True, "exclude": True, "credential": True, "stream": True},
    ("path",),
    {"lp": "literalpath", "pspath": "literalpath"},
)  # fmt: skip


def _remove_item(cmd: WinCommand) -> Finding | None:
    b = bind(cmd, _REMOVE_ITEM)
    if on(b, "whatif"):
        return None
    targets = b.get("path", []) + b.get("literalpath", []) + b.get("", [])
    recursive = on(b, "recurse")
    verb = f"{cmd.shown}{' -Recurse' if recursive else ''}"
    if not targets and cmd.piped:
        targets, recursive = [p.rstrip("/") + "/*" for p in cmd.piped], True
    for target in targets:
        found = delete_target(cmd, verb, target, recursive)
        if found is not None:
            return found
    return None


_MOVE_ITEM = Params(
    {"path": True, "literalpath": True, "destination": True, "newname": True, "force": False},
    ("path", "destination"),
)


_ABSOLUTE = re.compile(r"^(?:[a-z]:|/)")


def _move_item(cmd: WinCommand) -> Finding | None:
    """``Move-Item``/``Rename-Item`` of a critical directory takes it away as a delete does."""
    b = bind(cmd, _MOVE_ITEM)
    for target in b.get("path", []) + b.get("literalpath", []):
        if not _ABSOLUTE.match(cmd.path(target)):
            continue  # moving files of the working directory away is everyday work
        found = delete_target(cmd, f"{cmd.shown} (moves it away)", target, True)
        if found is not None:
            return found
    return None


def _cmd_move(cmd: WinCommand) -> Finding | None:
    operands = [t for t in cmd.texts if not t.startswith("/")]
    for target in operands[:-1]:
        if not _ABSOLUTE.match(cmd.path(target)):
            continue
        found = delete_target(cmd, f"{cmd.shown} (moves it away)", target, True)
        if found is not None:
            return found
    return None


def _robocopy(cmd: WinCommand) -> Finding | None:
    """``robocopy SRC DST /MIR`` (or ``/PURGE``) deletes what ``DST`` has that ``SRC``
    lacks: a mirror onto a critical directory empties it."""
    low = cmd.lower()
    operands = [t for t in cmd.texts if not t.startswith("/")]
    if len(operands) >= 2 and any(t in ("/mir", "/purge") for t in low):
        return delete_target(cmd, f"{cmd.shown} /MIR", operands[1], True)
    return None


def _cmd_delete(recursive_switch: str) -> WinRule:
    def rule(cmd: WinCommand) -> Finding | None:
        low = cmd.lower()
        switches = {s for t in low if t.startswith("/") for s in t[1:].split("/") if s}
        recursive = recursive_switch in switches
        verb = cmd.shown + (f" /{recursive_switch}" if recursive else "")
        for text in cmd.texts:
            if (text.startswith("/") and len(text) <= 3) or text.startswith("/a"):
                continue
            found = delete_target(cmd, verb, text, recursive)
            if found is not None:
                return found
        return None

    return rule


def _format(cmd: WinCommand) -> Finding | None:
    for t in cmd.lower():
        if re.fullmatch(r"[a-z]:\\?", t):
            return Finding(DESTRUCTION, t, f"format {t} erases a drive")
    return None


def _always(rule: str, what: str) -> WinRule:
    def judge(cmd: WinCommand) -> Finding | None:
        if any(t in ("/?", "-?", "/help") for t in cmd.lower()) or "/?" in cmd.texts:
            return None
        return Finding(rule, cmd.shown, f"{cmd.shown} {what}")

    return judge


def _has(*groups: tuple[str, ...], rule: str, what: str) -> WinRule:
    """A rule refusing a command whose arguments hold one word of each group (a word
    counts when it equals or starts a group's entry followed by ``:``/``=``)."""

    def judge(cmd: WinCommand) -> Finding | None:
        low = cmd.lower()
        for group in groups:
            if not any(t == g or t.startswith((g + ":", g + "=")) for t in low for g in group):
                return None
        return Finding(rule, " ".join(cmd.texts[:3]), f"{cmd.shown} {what}")

    return judge


def _bcdedit(cmd: WinCommand) -> Finding | None:
    low = cmd.lower()
    changing = {"/set", "/delete", "/deletevalue", "/create", "/import", "/copy", "/default",
                "/bootsequence", "/displayorder", "/store", "/sysstore"}  # fmt: skip
    if any(t in changing for t in low):
        return Finding(DESTRUCTION, cmd.shown, "bcdedit changes the boot configuration")
    return None


def _reg(cmd: WinCommand) -> Finding | None:
    low = cmd.lower()
    if not low:
        return None
    verb, key = low[0].lstrip("/"), (low[1] if len(low) > 1 else "")
    if verb in ("save", "export") and re.search(
        r"^hk(?:lm|ey_local_machine)\\+(sam|system|security)\b", key
    ):
        return Finding(
            CREDENTIALS, cmd.texts[1], f"reg {verb} copies the {key} hive (password hashes)"
        )
    if verb == "delete":
        return _registry_delete("reg delete", cmd.texts[1] if len(cmd.texts) > 1 else "", True)
    if verb == "add":
        names = [low[i + 1] for i, t in enumerate(low[:-1]) if t == "/v"]
        return registry_write("reg add", key, names, cmd.texts[1])
    return None


_RUN_KEYS = re.compile(
    r"\\(?:wow6432node\\)?microsoft\\windows\\currentversion\\(?:run|runonce|runonceex|runservices"
    r"|runservicesonce|policies\\explorer\\run|explorer\\(?:user )?shell folders)(?:\\|$)"
    r"|\\microsoft\\windows nt\\currentversion\\(?:winlogon|windows|image file execution options"
    r"|silentprocessexit)(?:\\|$)|\\control\\session manager(?:\\|$)|^hk(?:cu|ey_current_user)"
    r"\\environment$|\\currentcontrolset\\services\\|\\classes\\[^\\]+\\shell\\open\\command"
    r"|\\microsoft\\command processor$"
)
_DEFENSE_KEYS = re.compile(
    r"\\windows defender(?:\\|$)|\\microsoft\\windows\\currentversion\\policies\\system$"
    r"|\\control\\terminal server$"
)
_DEFENSE_VALUES = frozenset({"enablelua", "consentpromptbehavioradmin", "fdenytsconnections"})


def registry_write(verb: str, key: str, names: Sequence[str], token: str) -> Finding | None:
    """Judge a write of registry ``key`` (lower-case, ``\\``-separated): a Run key and the
    like plant code run at logon; Defender and UAC policies turn protection off."""
    key = key.replace("/", "\\").replace(":", "")
    key = re.sub(r"^registry\\+", "", key)
    if _DEFENSE_KEYS.search(key) and (
        "windows defender" in key or any(n in _DEFENSE_VALUES for n in names)
    ):
        return Finding(
            DEFENSE, token, f"{verb} {token!r} turns off Defender or UAC, or opens remote desktop"
        )
    if _RUN_KEYS.search(key):
        return Finding(
            PERSISTENCE,
            token,
            f"{verb} writes {token!r}, a registry key that runs programs at logon or boot",
        )
    return None


_ITEM_PROPERTY = Params(
    {"path": True, "literalpath": True, "name": True, "value": True, "propertytype": True,
     "type": True, "force": False, "itemtype": True},
    ("path", "name", "value"),
)  # fmt: skip


def _item_write(cmd: WinCommand) -> Finding | None:
    b = bind(cmd, _ITEM_PROPERTY)
    for target in b.get("path", []) + b.get("literalpath", []):
        low = target.lower().replace("/", "\\")
        if low.startswith(("hk", "registry::")):
            found = registry_write(cmd.shown, low, [n.lower() for n in b.get("name", [])], target)
            if found is not None:
                return found
        elif startup(cmd.path(target)):
            return Finding(
                PERSISTENCE, target, f"{cmd.shown} writes {target!r}, which runs at logon"
            )
    return None


def _ownership(cmd: WinCommand) -> Finding | None:
    """``takeown /r``, ``icacls ... /t`` (or ``/reset``, ``/grant``) over a critical
    directory: Windows' own files change hands, which breaks it like a delete."""
    low = cmd.lower()
    if not any(t in ("/r", "/t") for t in low):
        return None
    for i, text in enumerate(cmd.texts):
        if (
            text.startswith("/")
            or (i and low[i - 1] in ("/d", "/s", "/u", "/p"))
            or ":" in text[2:]
        ):
            continue
        path = _sample(cmd.path(text))
        parent, globbed = _glob_parent(path)
        what = critical(parent if globbed else path)
        if what is not None and what not in ("the working directory",):
            return Finding(
                DESTRUCTION,
                text,
                f"{cmd.shown} changes the owner or permissions of {text!r}, {what}, recursively",
            )
    return None


# -- remote code, downloads ----------------------------------------------------------------

_URL = re.compile(r"^(?:https?|ftp)://", re.IGNORECASE)


def _url_arg(rule: str, what: str, switches: tuple[str, ...] = ()) -> WinRule:
    def judge(cmd: WinCommand) -> Finding | None:
        low = cmd.lower()
        if switches and not any(t.split(":", 1)[0] in switches for t in low):
            return None
        for t in cmd.texts:
            bare = t.split(":", 1)[1] if t.lower().startswith("/i:") else t
            if _URL.match(bare) or bare.lower().startswith(("javascript:", "vbscript:", "about:")):
                return Finding(rule, t, f"{cmd.shown} {what} ({t!r})")
        return None

    return judge


def _rundll32(cmd: WinCommand) -> Finding | None:
    text = " ".join(cmd.lower())
    if "javascript:" in text or "vbscript:" in text:
        return Finding(RCE, cmd.shown, "rundll32 runs script text (javascript:/vbscript:)")
    if "comsvcs" in text and "minidump" in text:
        return Finding(
            CREDENTIALS,
            cmd.shown,
            "rundll32 comsvcs.dll MiniDump dumps a process's memory (lsass: passwords)",
        )
    return None


def _regsvr32(cmd: WinCommand) -> Finding | None:
    if (
        any(t.startswith("/i:") and ("://" in t or "scrobj" in t) for t in cmd.lower())
        or "scrobj.dll" in cmd.lower()
    ):
        return Finding(
            RCE, cmd.shown, "regsvr32 /i: runs a remote or script component (scrobj.dll)"
        )
    return None


# -- credentials ---------------------------------------------------------------------------


def _dumper(cmd: WinCommand) -> Finding | None:
    if any("lsass" in t for t in cmd.lower()) or cmd.name in (
        "out-minidump",
        "mimikatz",
        "invoke-mimikatz",
    ):
        return Finding(CREDENTIALS, cmd.shown, f"{cmd.shown} dumps credentials (lsass memory)")
    return None


READERS = frozenset(
    {"get-content", "type", "more", "select-string", "findstr", "format-hex", "copy-item", "copy",
     "xcopy", "robocopy", "move-item", "move", "compress-archive", "certutil", "invoke-webrequest",
     "invoke-restmethod", "curl", "import-clixml", "esentutl", "scp", "tar"}
)  # fmt: skip
"""Commands that read the files named in their arguments (a credential file read by one
is refused)."""


def read_secret(cmd: WinCommand) -> Finding | None:
    """Refuse a reader of a credential file (:func:`.windows_paths.secret`)."""
    if cmd.name not in READERS:
        return None
    for text in cmd.texts:
        if text.startswith("-") or (text.startswith("/") and "/" not in text[1:]):
            continue  # a parameter or a cmd switch (a POSIX path has more than one /)
        found = secret(cmd.path(text.lstrip("@")))
        if found is not None:
            return Finding(CREDENTIALS, text, f"{cmd.shown} reads {text!r}, {found}")
    return None


WRITERS = frozenset(
    {"copy-item", "move-item", "set-content", "add-content", "out-file", "new-item", "copy",
     "move", "xcopy", "robocopy", "mklink", "invoke-webrequest", "invoke-restmethod", "certutil",
     "bitsadmin", "curl", "expand-archive", "tee-object", "new-itemproperty", "set-item",
     "set-itemproperty", "export-clixml", "start-bitstransfer"}
)  # fmt: skip


def write_startup(cmd: WinCommand) -> Finding | None:
    """Refuse a writer whose arguments name a Startup folder or a PowerShell profile."""
    if cmd.name not in WRITERS:
        return None
    for text in cmd.texts:
        if startup(cmd.path(text)):
            return Finding(PERSISTENCE, text, f"{cmd.shown} writes {text!r}, which runs at logon")
    return None


_WMI_PERSIST = re.compile(
    r"__eventfilter|commandlineeventconsumer|activescripteventconsumer|__filtertoconsumerbinding"
)


def wmi_subscription(cmd: WinCommand) -> Finding | None:
    """Refuse creating a WMI event subscription (runs a command when an event fires)."""
    if cmd.name.startswith(("get-", "remove-")) or "get" in cmd.lower()[:1]:
        return None
    if any(_WMI_PERSIST.search(t) for t in cmd.lower()):
        return Finding(
            PERSISTENCE,
            cmd.shown,
            f"{cmd.shown} creates a WMI event subscription (runs code on an event)",
        )
    return None


RULES: dict[str, tuple[WinRule, ...]] = {
    "remove-item": (_remove_item,),
    "rd": (_cmd_delete("s"),),
    "rmdir": (_cmd_delete("s"),),
    "del": (_cmd_delete("s"),),
    "erase": (_cmd_delete("s"),),
    "format": (_format,),
    "move-item": (_move_item,),
    "rename-item": (_move_item,),
    "move": (_cmd_move,),
    "ren": (_cmd_move,),
    "rename": (_cmd_move,),
    "robocopy": (_robocopy,),
    "format-volume": (_always(DESTRUCTION, "erases a volume"),),
    "clear-disk": (_always(DESTRUCTION, "erases a disk"),),
    "remove-partition": (_always(DESTRUCTION, "deletes a partition"),),
    "initialize-disk": (_always(DESTRUCTION, "re-initializes a disk"),),
    "diskpart": (
        _has(("/s",), rule=DESTRUCTION, what="runs a partitioning script the guard cannot read"),
    ),
    "vssadmin": (
        _has(
            ("delete",),
            ("shadows",),
            rule=DESTRUCTION,
            what="deletes the volume shadow copies (backups)",
        ),
        _has(
            ("resize",),
            ("shadowstorage",),
            rule=DESTRUCTION,
            what="shrinks shadow storage, deleting shadow copies",
        ),
    ),
    "wmic": (
        _has(
            ("shadowcopy",), ("delete",), rule=DESTRUCTION, what="deletes the volume shadow copies"
        ),
    ),
    "wbadmin": (_has(("delete",), rule=DESTRUCTION, what="deletes backups"),),
    "bcdedit": (_bcdedit,),
    "cipher": (_has(("/w",), rule=DESTRUCTION, what="/w overwrites the free space of a drive"),),
    "fsutil": (
        _has(("usn",), ("deletejournal",), rule=DESTRUCTION, what="deletes the change journal"),
    ),
    "reg": (_reg,),
    "new-itemproperty": (_item_write,),
    "set-itemproperty": (_item_write,),
    "new-item": (_item_write,),
    "set-item": (_item_write,),
    "schtasks": (_has(("/create", "/change"), rule=PERSISTENCE, what="creates a scheduled task"),),
    "register-scheduledtask": (_always(PERSISTENCE, "registers a scheduled task"),),
    "set-scheduledtask": (_always(PERSISTENCE, "changes a scheduled task"),),
    "new-service": (_always(PERSISTENCE, "installs a service that runs at boot"),),
    "wevtutil": (_has(("cl", "clear-log"), rule=DEFENSE, what="clears an event log"),),
    "clear-eventlog": (_always(DEFENSE, "clears an event log"),),
    "remove-eventlog": (_always(DEFENSE, "deletes an event log"),),
    "takeown": (_ownership,),
    "icacls": (_ownership,),
    "certutil": (
        _url_arg(
            RCE,
            "downloads a file (a download tool abused to fetch code)",
            ("/urlcache", "/verifyctl"),
        ),
    ),
    "bitsadmin": (
        _has(
            ("/transfer", "/addfile", "/setnotifycmdline"),
            rule=RCE,
            what="downloads or runs a file in the background",
        ),
    ),
    "mshta": (_url_arg(RCE, "runs a remote or inline script"),),
    "rundll32": (_rundll32,),
    "regsvr32": (_regsvr32,),
    "msiexec": (_url_arg(RCE, "installs a package from the network", ("/i", "/package")),),
    "mimikatz": (_dumper,),
    "invoke-mimikatz": (_dumper,),
    "out-minidump": (_dumper,),
    "procdump": (_dumper,),
    "ntdsutil": (
        _has(("ifm",), rule=CREDENTIALS, what="copies the domain's password database (ntds.dit)"),
    ),
}
"""Rules by folded command name (see :data:`.windows.PS_ALIASES`)."""

GENERIC: tuple[WinRule, ...] = (read_secret, write_startup, wmi_subscription)
"""Rules every command goes through."""
