"""Windows paths as the Windows rules judge them: :func:`resolve` (variables, ``~``,
provider prefixes, ``..``; lower-case, ``/``-separated), :func:`critical` (what a
recursive delete must not reach), :func:`system_file`, :func:`startup` (a write there
runs at logon) and :func:`secret` (a credential file).

The user's profile is ``c:/users/user`` (:data:`WIN_HOME`), fixed like :data:`.model.HOME`;
every ``c:/users/*`` profile is judged alike.  A POSIX path (PowerShell on Linux or macOS)
is judged by the POSIX rules of :mod:`.paths`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping

from ..security_audit import match_sensitive
from .model import HOME
from .paths import critical as posix_critical

WIN_HOME = "c:/users/user"

_BUILTIN_VARS: dict[str, str] = {
    "home": WIN_HOME,
    "env:userprofile": WIN_HOME,
    "env:homepath": "/users/user",
    "env:home": WIN_HOME,
    "env:systemroot": "c:/windows",
    "env:windir": "c:/windows",
    "env:systemdrive": "c:",
    "env:homedrive": "c:",
    "env:programfiles": "c:/program files",
    "env:programfiles(x86)": "c:/program files (x86)",
    "env:programw6432": "c:/program files",
    "env:programdata": "c:/programdata",
    "env:allusersprofile": "c:/programdata",
    "env:appdata": WIN_HOME + "/appdata/roaming",
    "env:localappdata": WIN_HOME + "/appdata/local",
    "env:temp": WIN_HOME + "/appdata/local/temp",
    "env:tmp": WIN_HOME + "/appdata/local/temp",
    "env:public": "c:/users/public",
    "env:onedrive": WIN_HOME + "/onedrive",
    "pshome": "c:/windows/system32/windowspowershell/v1.0",
    "profile": WIN_HOME + "/documents/powershell/microsoft.powershell_profile.ps1",
}
"""What PowerShell's ``$name``/``$env:NAME`` and cmd's ``%NAME%`` hold (names lower-case;
cmd's ``%X%`` is looked up as ``env:x``)."""

_VAR = re.compile(
    r"\$\{(?P<braced>[^}]+)\}|\$(?P<ps>(?:env:)?[A-Za-z_][\w]*(?:\(x86\))?)|%(?P<cmd>[A-Za-z_][\w()]*)%|!(?P<bang>[A-Za-z_]\w*)!"
)
_PROVIDER = re.compile(r"^(?:microsoft\.powershell\.core\\)?filesystem::", re.IGNORECASE)
_DRIVE = re.compile(r"^[a-z]:")
_UNKNOWN_DRIVE = re.compile(r"^(?:%~?\w+%?|\$[\w:]+|\$\{[^}]+\}):/?$")


def expand(text: str, values: Mapping[str, str]) -> str:
    """``text`` with the variables known in ``values`` (then the built-in ones) replaced;
    unknown ones stay as written."""
    if "$" not in text and "%" not in text and "!" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        name = (match["braced"] or match["ps"] or "").lower()
        if match["cmd"] or match["bang"]:
            name = "env:" + (match["cmd"] or match["bang"]).lower()
        found = values.get(name, _BUILTIN_VARS.get(name))
        if found is None and name.startswith("env:"):
            found = values.get(name[4:])  # cmd's set X=... is %X% and $env:X
        return match[0] if found is None else found

    return _VAR.sub(one, text)


def resolve(text: str, values: Mapping[str, str], cwd: str | None = None) -> str:
    """The path ``text`` names, lower-case with ``/`` separators: variables expanded,
    ``~`` the profile, provider and ``\\\\?\\`` prefixes dropped, ``.``/``..`` folded, a
    relative path joined to ``cwd`` when it is known."""
    path = expand(text.strip(), values).replace("\\", "/").lower()
    path = _PROVIDER.sub("", path)
    if path.startswith(("//?/", "//./")):
        path = path[4:]
    if path == "~" or path.startswith("~/"):
        path = WIN_HOME + path[1:]
    if _DRIVE.match(path):
        drive, rest = path[:2], path[2:]
        if rest and not rest.startswith("/"):  # c:x: relative to the drive's location
            if cwd is not None and cwd.startswith(drive):
                return resolve(cwd + "/" + rest, {}, None)
            rest = "/" + rest
        norm = posixpath.normpath(rest or "/")
        return drive + ("/" if norm in ("/", "//") else norm.replace("//", "/"))
    if path.startswith("//"):
        return "//" + posixpath.normpath(path[2:]).lstrip("/")
    if path.startswith("/"):
        return posixpath.normpath(path) if path != "/" else "/"
    if cwd is not None and path:
        return resolve(cwd + "/" + path, {}, None)
    return posixpath.normpath(path) if path else path


_HOME_FOLDERS = frozenset(
    {
        "documents",
        "desktop",
        "downloads",
        "pictures",
        "music",
        "videos",
        "appdata",
        "onedrive",
        "favorites",
        "contacts",
        "saved games",
        "source",
    }
)
_SYSTEM_TOPS = frozenset(
    {"windows", "program files", "program files (x86)", "programdata", "users", "boot"}
)


def _home_rest(parts: list[str]) -> str | None:
    """The part of a profile path below the profile (``c:/users/x/a/b`` -> ``a/b``)."""
    if len(parts) >= 3 and _DRIVE.match(parts[0]) and parts[1] == "users":
        return "/".join(parts[3:])
    return None


def critical(path: str) -> str | None:
    """Describe ``path`` (resolved) if deleting it recursively wrecks the machine or the
    user, or None."""
    if path.startswith("/") and not path.startswith("//"):
        return posix_critical(path)
    if path in (".", "..") or all(p == ".." for p in path.split("/")):
        return "the working directory" if path == "." else "a parent of the working directory"
    if path.startswith("//"):
        parts = [p for p in path[2:].split("/") if p]
        if len(parts) <= 1 or (len(parts) == 2 and parts[1].endswith("$")):
            return "a network share's root"
        return None
    if _UNKNOWN_DRIVE.match(path):
        return "the root of a drive named at run time"
    if not _DRIVE.match(path):
        return None
    parts = [p for p in path.split("/") if p]
    if len(parts) == 1:
        return f"the root of drive {parts[0].upper()}"
    top = parts[1]
    if len(parts) == 2:
        return "a Windows system directory" if top in _SYSTEM_TOPS else "a top-level directory"
    if top == "windows":
        return None if parts[2:3] == ["temp"] else "a Windows system directory"
    if top in ("program files", "program files (x86)", "programdata") and len(parts) == 3:
        return None
    rest = _home_rest(parts)
    if rest is None:
        return None
    if rest == "":
        return "a home directory"
    sub = rest.split("/")
    if len(sub) == 1 and sub[0] in _HOME_FOLDERS:
        return "a folder of the home directory"
    if sub[0] == "appdata" and len(sub) == 2:
        return "a folder of the home directory"
    found = posix_critical(HOME + "/" + rest)
    return found if found not in (None, "a home directory") else None


def system_file(path: str) -> bool:
    """Whether ``path`` (resolved) is a file of Windows itself (deleting one breaks it)."""
    parts = path.split("/")
    if not _DRIVE.match(path) or len(parts) < 2:
        return False
    if parts[1] == "windows":
        return len(parts) > 2 and parts[2] != "temp"
    return len(parts) == 2 and parts[1] in ("bootmgr", "pagefile.sys", "hiberfil.sys")


_STARTUP = re.compile(
    r"/start menu/programs/startup(?:/|$)|^shell:(?:common )?startup"
    r"|/(?:windows)?powershell/(?:[\w.]*_)?profile\.ps1$"
)


def startup(path: str) -> bool:
    """Whether a file written at ``path`` (resolved) runs at logon: the Startup folders
    and PowerShell profiles."""
    return _STARTUP.search(path) is not None


_WIN_SECRETS = re.compile(
    r"/appdata/(?:local|roaming)/(?:[^/]+/)*(?:login data|cookies|web data|logins\.json"
    r"|key[34]\.db|cookies\.sqlite)$"
    r"|/appdata/(?:local|roaming)/microsoft/(?:credentials|protect|vault)(?:/|$)"
    r"|/config/(?:sam|system|security)$|/ntds/ntds\.dit$|/ntds\.dit$"
    r"|/psreadline/consolehost_history\.txt$|/(?:panther|sysprep)/(?:unattend/)?unattend\.xml$"
)


def secret(path: str) -> str | None:
    """Describe the credential ``path`` (resolved) holds, or None: the profile's stores
    judged as the home directory's (``~/.ssh/id_rsa``...), browser login and cookie
    databases, Windows credential stores and registry hives."""
    if _WIN_SECRETS.search(path):
        return "a Windows credential store, browser login database or a file holding passwords"
    parts = path.split("/")
    rest = _home_rest(parts)
    if rest:
        found = match_sensitive(HOME + "/" + rest, home=HOME)
        if found is not None:
            return found.description
    if path.startswith(("/", "~")):
        found = match_sensitive(path, home=HOME)
        return None if found is None else found.description
    return None
