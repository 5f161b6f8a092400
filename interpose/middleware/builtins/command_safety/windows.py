"""Windows: PowerShell and cmd command text judged by the rules of :mod:`.windows_rules`
(:func:`judge_text`), and the bash side of the family (:data:`RULES`): ``powershell
-Command``/``-EncodedCommand``, ``pwsh -c`` and ``cmd /c``/``/k`` are runners whose text
is read in their dialect; Windows programs called from bash (``reg``, ``schtasks``,
``certutil``...) are judged by the same rules.

Within one text the analysis follows variables (``$x = 'C:\\'``, ``set X=...``,
``$env:USERPROFILE``, ``%USERPROFILE%``), the working location (``Set-Location``,
``cd``), files downloaded earlier and then run, aliases (``rm``, ``iwr``, ``iex``...) and
runners: ``iex``/``Invoke-Expression`` of a string, ``& { }``, ``Start-Process``, cmd's
``start``/``call``/``if``/``for ... do``, ``wmic process call create``, ``wsl``/``bash``
(judged by the bash rules).  A bash command never reaches this module unless it names
``powershell``, ``pwsh``, ``cmd`` or a Windows program: it pays nothing for it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence

from ..shell import SUBST, Word
from .invocation import Invocation
from .model import MAX_DEPTH, Finding
from .powershell import PsCommand, PsSyntaxError, PsWord, read
from .programs import DOWNLOADERS
from .run import PipelineRule, Rule, Run
from .text import pipe_stream
from .windows_defense import RULES as DEFENSE_RULES
from .windows_paths import expand, resolve, startup, system_file
from .windows_rules import (
    DESTRUCTION,
    PERSISTENCE,
    RCE,
    WinCommand,
    delete_target,
    read_secret,
)
from .windows_rules import GENERIC as WIN_GENERIC
from .windows_rules import RULES as BASE_RULES

WIN_RULES = {**BASE_RULES, **DEFENSE_RULES}
"""Every Windows rule by folded command name."""

PS_ALIASES: dict[str, str] = {
    **dict.fromkeys(("rm", "del", "ri", "rmdir", "rd", "erase"), "remove-item"),
    **dict.fromkeys(("iwr", "curl", "wget"), "invoke-webrequest"),
    "irm": "invoke-restmethod",
    "iex": "invoke-expression",
    **dict.fromkeys(("saps", "start"), "start-process"),
    **dict.fromkeys(("gc", "cat", "type"), "get-content"),
    "ac": "add-content",
    **dict.fromkeys(("cp", "copy", "cpi"), "copy-item"),
    **dict.fromkeys(("mv", "move", "mi"), "move-item"),
    **dict.fromkeys(("ren", "rni"), "rename-item"),
    "ni": "new-item",
    "si": "set-item",
    "sp": "set-itemproperty",
    **dict.fromkeys(("cd", "chdir", "sl"), "set-location"),
    **dict.fromkeys(("pushd",), "push-location"),
    **dict.fromkeys(("ls", "dir", "gci"), "get-childitem"),
    "icm": "invoke-command",
    "spsv": "stop-service",
    "sls": "select-string",
}
"""PowerShell's aliases of the cmdlets the rules judge (lower-case)."""

SHELLS = frozenset({"powershell", "pwsh", "powershell_ise"})
_GCI_VALUED = frozenset({"-depth", "-attributes"})  # Get-ChildItem options with values
_CMD_BUILTINS = frozenset({"set", "cd", "chdir", "pushd", "call", "if", "for", "start"})
_DOWNLOAD = re.compile(
    r"download(?:string|data|file)|invoke-webrequest|invoke-restmethod|\biwr\b|\birm\b"
    r"|net\.webclient|start-bitstransfer|xmlhttp|winhttp|\bcurl\b|\bwget\b|https?://",
    re.IGNORECASE,
)
_DOWNLOADERS = frozenset(
    {"invoke-webrequest", "invoke-restmethod", "curl", "wget", "start-bitstransfer"}
)
_SAVED_AS = re.compile(
    r"downloadfile\s*\(\s*['\"][^'\"]*['\"]\s*,\s*['\"]([^'\"]+)['\"]", re.IGNORECASE
)
_SETS = re.compile(
    r"\$\{?((?:env:)?\w+)\}?\s*[-+*/]?=(?!=)|\(\s*\$(\w+)\s+in\b|\[\w+\]\s*\$(\w+)"
    r"|\bfor\s+(?:/\w\s+)*%%?(\w)\b|\bset\s+\"?(\w+)=",
    re.IGNORECASE,
)
"""Where a text sets a variable: assignments (a parameter's default value included),
``foreach ($x in``, typed variables, cmd's ``for %i`` and ``set X=``."""
_JOIN_PATH = re.compile(
    r"^\s*join-path\s+(?:-path\s+)?(\S+)\s+(?:-childpath\s+)?(\S+)\s*$", re.IGNORECASE
)
_DOTNET = re.compile(
    r"\[(?:system\.)?io\.(directory|file)\]::(delete|readall\w*|copy|openread|readlines)"
    r"\(\s*(['\"])(.+?)\3\s*(,\s*\$true)?",
    re.IGNORECASE,
)
_BUILTIN_TEMP = "$env:TEMP\\tmp.tmp"  # what New-TemporaryFile and GetTempPath() give
_SB_CREATE = re.compile(
    r"\[scriptblock\]::create\(\s*(['\"])(.*?)\1\s*\)", re.IGNORECASE | re.DOTALL
)
_WHOLE_NAME = re.compile(r"^\$[\w:{}]+$")  # & $cmd: a command named by a variable
_LITERAL = re.compile(r"^\s*(['\"])([\w.\\/:-]+)\1\s*$")  # &('Remove-Item')
_ASSIGN = re.compile(r"^\$\{?((?:env:)?[\w()]+)\}?\s*=(.*)$", re.DOTALL)
# powershell.exe / pwsh options that take a value (lower-case, unambiguous prefixes apply)
_PS_VALUED = ("executionpolicy", "windowstyle", "configurationname", "outputformat",
              "inputformat", "psconsolefile", "version", "workingdirectory", "settingsfile",
              "custompipename", "ep", "wd", "ex", "w", "o", "if", "v")  # fmt: skip


def _ps_option(name: str) -> str:
    """What a ``powershell.exe`` option is: ``command``, ``encoded``, ``file``, ``valued``
    or ``switch``."""
    if name in ("c", "command") or (len(name) >= 3 and "command".startswith(name)):
        return "command"
    if name in ("e", "ec", "en") or (len(name) >= 3 and "encodedcommand".startswith(name)):
        return "encoded"
    if name in ("f", "file") or (len(name) >= 2 and "file".startswith(name)):
        return "file"
    if name in _PS_VALUED or any(v.startswith(name) and len(name) >= 2 for v in _PS_VALUED[:10]):
        return "valued"
    return "switch"


def shell_text(name: str, args: Sequence[str]) -> tuple[str, str, str] | None:
    """The (dialect, text, kind) a ``powershell``/``pwsh``/``cmd`` argv runs: kind ``text``
    (text to judge), ``encoded`` (base64 UTF-16LE), ``file`` (a script on disk) or None."""
    if name == "cmd":
        for i, arg in enumerate(args):
            low = arg.lower().lstrip("/")
            if arg.startswith("/") and low in ("c", "k", "r"):
                text = " ".join(args[i + 1 :])
                return ("cmd", text, "text")
            if (
                arg.startswith("/")
                and low[:1] in ("c", "k")
                and len(low) > 1
                and not low[1].isalpha()
            ):
                return ("cmd", arg[2:] + " " + " ".join(args[i + 1 :]), "text")
        return None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-":
            return None  # the script comes on stdin: judged by the pipeline rule
        if arg[:1] in ("-", "/") and len(arg) > 1:
            name_, _, inline = arg[1:].lstrip("-").lower().partition(":")
            kind = _ps_option(name_)
            if kind == "command":
                rest = args[i + 1 :]
                return None if rest[:1] == ["-"] else ("powershell", " ".join(rest), "text")
            if kind == "encoded":
                return (
                    "powershell",
                    inline or (args[i + 1] if i + 1 < len(args) else ""),
                    "encoded",
                )
            if kind == "file":
                return ("powershell", args[i + 1] if i + 1 < len(args) else "", "file")
            if kind == "valued" and not inline:
                i += 1
        else:
            if arg.lower().endswith(".ps1"):
                return ("powershell", arg, "file")
            return ("powershell", " ".join(args[i:]), "text")
        i += 1
    return None


def _decode(text: str) -> str | None:
    try:
        return base64.b64decode(
            text.strip() + "=" * (-len(text.strip()) % 4), validate=True
        ).decode("utf-16-le")
    except (binascii.Error, ValueError):
        return None


class WinRun:
    """One analysis of Windows command text: variables, location, downloads."""

    __slots__ = ("assigned", "cwd", "downloaded", "fetched", "run", "values")

    def __init__(self, run: Run) -> None:
        self.run = run
        self.values: dict[str, str] = {}
        self.cwd: str | None = None
        self.fetched: set[str] = set()  # variables holding downloaded text
        self.downloaded: set[str] = set()  # file names written by a download
        self.assigned: set[str] = set()  # variables the text sets somewhere (loops included)

    def judge(self, text: str, dialect: str, origin: str) -> Finding | None:
        """Judge ``text`` as ``dialect`` (``"powershell"`` or ``"cmd"``) code."""
        run = self.run
        if run.depth >= MAX_DEPTH:
            return Finding(
                "unparseable", text[:40], f"{origin} nests shells more than {MAX_DEPTH} levels deep"
            )
        run.budget.size(len(text))
        run.budget.step()
        run.budget.open()
        run.depth += 1
        try:
            self.assigned.update(
                name.lower() for groups in _SETS.findall(text) for name in groups if name
            )
            try:
                script = read(text.replace("\x00", ""), dialect)
            except PsSyntaxError as exc:
                fragment = text[exc.offset : exc.offset + 24] or text[-24:]
                return Finding(
                    "unparseable",
                    fragment,
                    f"{origin} cannot be parsed as {dialect} ({exc.detail} at offset "
                    f"{exc.offset}); a command that cannot be analyzed is not run",
                )
            for stages in script.pipelines:
                found = self.pipeline(stages, dialect)
                if found is not None:
                    return found
            for inner in script.nested:
                found = self.judge(inner, "powershell", f"a group in {origin}")
                if found is not None:
                    return found
            return None
        finally:
            run.depth -= 1
            run.budget.leave()

    # -- pipelines and commands -----------------------------------------------------------

    def pipeline(self, stages: Sequence[PsCommand], dialect: str) -> Finding | None:
        piped: tuple[str, ...] = ()
        fed = ""  # literal text the previous stage writes
        downloads = False
        for stage in stages:
            self.run.budget.step()
            words = self._head(stage.words, dialect)
            name = self._name(words[0], dialect) if words else ""
            if downloads and name in (*SHELLS, "invoke-expression", "cmd", "bash", "sh"):
                return Finding(RCE, name, f"a download is piped into {name}, which runs it as code")
            if fed and name in (*SHELLS, "cmd", "invoke-expression"):
                found = self.judge(
                    fed, "cmd" if name == "cmd" else "powershell", f"the text piped into {name}"
                )
                if found is not None:
                    return found
            if (
                fed
                and name == "diskpart"
                and re.search(r"\b(?:clean|format|delete)\b", fed, re.IGNORECASE)
            ):
                return Finding(
                    DESTRUCTION,
                    "diskpart",
                    "the script piped into diskpart cleans, formats or deletes",
                )
            found = self.command(stage, dialect, piped)
            if found is not None:
                return found
            downloads = name in _DOWNLOADERS or (
                bool(words) and any(_DOWNLOAD.search(g) for g in words[0].inner)
            )
            fed = self._fed(words, name, dialect)
            piped = self._listed(words, name)
        return None

    def _head(self, words: Sequence[PsWord], dialect: str) -> list[PsWord]:
        out = list(words)
        if dialect == "cmd" and out:
            first = out[0].text.lstrip("@")
            if "/" in first and not first.startswith("/") and first.split("/", 1)[0].isalpha():
                name, rest = first.split("/", 1)
                out[:1] = [PsWord(name), PsWord("/" + rest)]
            elif first != out[0].text:
                out[0] = PsWord(first, out[0].quoted)
        while out and dialect == "powershell" and out[0].text in ("&", ".") and not out[0].quoted:
            out = out[1:]
        return [w for w in out if w.text]

    def _name(self, word: PsWord, dialect: str) -> str:
        text = expand(word.text, self.values).replace("\\", "/").rsplit("/", 1)[-1].lower()
        for suffix in (".exe", ".com"):
            text = text.removesuffix(suffix)
        return PS_ALIASES.get(text, text) if dialect == "powershell" else text

    def _fed(self, words: Sequence[PsWord], name: str, dialect: str) -> str:
        if name in ("echo", "write-output", "write-host") and words:
            return " ".join(w.text for w in words[1:])
        if (
            len(words) == 1
            and words[0].quoted
            and words[0].group is None
            and dialect == "powershell"
        ):
            return words[0].text
        return ""

    def _listed(self, words: Sequence[PsWord], name: str) -> tuple[str, ...]:
        """What a ``Get-ChildItem`` stage hands on: its paths (the working directory by
        default); nothing when ``-Filter``/``-Include``/``-Exclude`` keep only some."""
        if name != "get-childitem":
            return ()
        flags = [w.text.lower() for w in words[1:] if w.text.startswith("-")]
        if any(f.startswith(("-fi", "-inc", "-ex")) for f in flags):
            return ()
        values = _GCI_VALUED
        paths = [
            w.text
            for i, w in enumerate(words[1:], 1)
            if not w.text.startswith("-") and words[i - 1].text.lower() not in values
        ]
        return tuple(paths) or (".",)

    def command(self, stage: PsCommand, dialect: str, piped: tuple[str, ...]) -> Finding | None:
        for target in stage.redirects:
            path = resolve(target, self.values, self.cwd)
            if startup(path):
                return Finding(
                    PERSISTENCE, target, f"a redirection writes {target!r}, which runs at logon"
                )
            if system_file(path) and not path.endswith("/drivers/etc/hosts"):
                return Finding(
                    DESTRUCTION,
                    target,
                    f"a redirection overwrites {target!r}, a file of Windows itself",
                )
        words = self._head(stage.words, dialect)
        if not words:
            return None
        if dialect == "powershell":
            for word in words:
                if "::" in word.raw:
                    found = self._dotnet(word.raw)
                    if found is not None:
                        return found
        head = words[0]
        called = dialect == "powershell" and stage.words[0].text in ("&", ".")
        if called and (head.inner or _WHOLE_NAME.match(head.text)):
            literal = _LITERAL.match(head.group or "")
            if literal is None:
                return self._stand_in(head, words[1:])
            head = PsWord(literal[2], True)
        elif head.inner and head.raw[:1] in "($@[":
            return self._expression(head)
        if dialect == "powershell" and head.text.startswith("$"):
            return self._assign(words)
        name = self._name(head, dialect)
        args = words[1:]
        if dialect == "cmd" and name in _CMD_BUILTINS:
            return self._cmd_builtin(name, args)
        if any(w.text[:1] == "@" and not w.quoted for w in args):
            args = self._splat(args)
        texts = [self._value(w) for w in args]
        cmd = WinCommand(
            name, head.text, args, texts, self.values, self.cwd, piped, frozenset(self.assigned)
        )
        if self.run.deny or self.run.allow:
            line = " ".join([cmd.shown, *cmd.texts])
            if any(p.search(line) for p in self.run.allow):
                return None
            found = self._denied(line)
            if found is not None:
                return found
        if (
            name in self.downloaded
            or head.text.lower().replace("\\", "/").lstrip("./") in self.downloaded
        ):
            return Finding(
                RCE, head.text, f"{head.text} runs a file downloaded earlier in the command"
            )
        found = self._runner(cmd)
        if found is not None:
            return found
        for rule in (*WIN_RULES.get(name, ()), *WIN_GENERIC):
            found = rule(cmd)
            if found is not None:
                return found
        self._note(cmd)
        return None

    def _splat(self, args: Sequence[PsWord]) -> list[PsWord]:
        """``@p`` where ``$p = @{Path='C:\\'; Recurse=$true}``: the parameters it holds."""
        out: list[PsWord] = []
        for word in args:
            table = self.values.get(word.text[1:].lower()) if word.text[:1] == "@" else None
            table = self.values.get("@" + word.text[1:].lower()) if table is None else None
            if table is None or word.quoted:
                out.append(word)
                continue
            for entry in re.split(r"[;\n]", table):
                key, sep, value = entry.partition("=")
                if sep and key.strip():  # -Name:value, as bind() reads an inline value
                    text = "-" + key.strip().strip("'\"") + ":" + value.strip().strip("'\"")
                    out.append(PsWord(text))
        return out

    def _value(self, word: PsWord) -> str:
        """A word's value: variables expanded, ``(Join-Path A B)`` joined."""
        if word.kind == "(" and word.group and (join := _JOIN_PATH.match(word.group)):
            return expand(join[1].strip("'\""), self.values) + "\\" + join[2].strip("'\"")
        return expand(word.text, self.values)

    def _dotnet(self, raw: str) -> Finding | None:
        """.NET calls in an expression: ``[IO.Directory]::Delete(path, $true)``,
        ``[IO.File]::ReadAllText(path)``, ``[scriptblock]::Create('text')`` (judged)."""
        for _, text in _SB_CREATE.findall(raw):
            found = self.judge(text, "powershell", "[scriptblock]::Create's text")
            if found is not None:
                return found
        for kind, method, _, path, recursive in _DOTNET.findall(raw):
            cmd = WinCommand(f"[io.{kind.lower()}]::{method.lower()}", f"[IO.{kind}]::{method}",
                             [], [path], self.values, self.cwd)  # fmt: skip
            if method.lower() == "delete":
                found = delete_target(cmd, cmd.shown, expand(path, self.values), bool(recursive))
            else:
                cmd.name = "get-content"
                found = read_secret(cmd)
            if found is not None:
                return found
        return None

    def _denied(self, line: str) -> Finding | None:
        """The ``extra_deny`` regex ``line`` (the command's text) matches, as a finding."""
        for pattern in self.run.deny:
            if pattern.search(line):
                return Finding(
                    "extra-deny",
                    line[:80],
                    f"{line[:80]!r} matches extra_deny pattern {pattern.pattern!r}",
                )
        return None

    def _stand_in(self, head: PsWord, args: Sequence[PsWord]) -> Finding | None:
        """``& $cmd ...``: a command named at run time, judged as each command whose
        arguments would be refused (``Remove-Item``, a shell)."""
        for name in ("remove-item", "powershell"):
            found = self.command(PsCommand((PsWord(name), *args)), "powershell", ())
            if found is not None:
                shown = head.raw or head.text
                return Finding(
                    found.rule,
                    shown,
                    f"{shown} names its command at run time; as {name} it would be refused "
                    f"({found.message})",
                )
        return None

    def _expression(self, head: PsWord) -> Finding | None:
        """An expression statement (``(New-Object Net.WebClient).DownloadFile(...)``)."""
        text = head.raw
        if "[scriptblock]::create" in text.lower() and _DOWNLOAD.search(text):
            return Finding(RCE, text[:40], "a script block is made from downloaded text and run")
        if saved := _SAVED_AS.search(text):
            self._downloaded(saved[1])
        return None

    def _assign(self, words: Sequence[PsWord]) -> Finding | None:
        head = words[0]
        match = _ASSIGN.match(head.text)
        if match is not None:
            name, rest = match[1].lower(), match[2]
            value = [PsWord(rest, head.quoted)] if rest else list(words[1:])
        elif len(words) > 1 and words[1].text.startswith("=") and not words[1].quoted:
            name = head.text.lstrip("${").rstrip("}").lower()
            rest = words[1].text[1:]
            value = ([PsWord(rest)] if rest else []) + list(words[2:])
        else:
            return None  # $x.Method(...) and the like: its groups are judged as scripts
        self.values.pop(name, None)
        self.fetched.discard(name)
        if not value:
            return None
        first = value[0]
        if len(value) == 1 and first.raw.startswith("@{") and first.group is not None:
            self.values["@" + name] = first.group  # a hashtable: splatted as parameters
            return None
        group = first.group or ""
        if _DOWNLOAD.search(group) or (
            not first.quoted
            and first.group is None
            and self._name(first, "powershell") in _DOWNLOADERS
        ):
            self.fetched.add(name)
        elif (known := self._computed(value)) is not None:
            self.values[name] = known
        else:
            self.assigned.discard(name)  # a value known only at run time
            if not first.quoted and first.group is None and not first.text.startswith("$"):
                return self.command(PsCommand(tuple(value)), "powershell", ())
        return None

    def _computed(self, value: Sequence[PsWord]) -> str | None:
        """The value of an assignment's right side when the guard can tell: literals and
        variables joined by ``+``, ``Join-Path A B``, a temporary file or directory."""
        first = value[0]
        low = first.raw.lower()
        if low.startswith(("new-temporaryfile", "[io.path]::gettemp", "[system.io.path]::gettemp")):
            return _BUILTIN_TEMP
        if low == "join-path" and len(value) == 3:
            return self._value(
                PsWord("", group=f"Join-Path {value[1].raw} {value[2].raw}", kind="(")
            )
        if len(value) == 1 and first.kind == "(" and _JOIN_PATH.match(first.group or ""):
            return self._value(first)
        literal = all(
            (w.text == "+" and not w.quoted)
            if i % 2
            else (
                w.group is None
                and SUBST not in w.text
                and (w.quoted or w.text.startswith("$") or w.text.isdigit())
            )
            for i, w in enumerate(value)
        )
        if not literal or not len(value) % 2:
            return None
        return "".join(expand(w.text, self.values) for w in value[::2])

    def _cmd_builtin(self, name: str, args: Sequence[PsWord]) -> Finding | None:
        """cmd's own statements (:data:`_CMD_BUILTINS`)."""
        if name == "set" and args:
            text = " ".join(w.text for w in args)
            if not text.startswith("/") and "=" in text:
                key, _, value = text.partition("=")
                self.values["env:" + key.strip().lower()] = expand(value, self.values)
            return None
        if name in ("cd", "chdir", "pushd"):
            target = [w.text for w in args if w.text.lower() != "/d"]
            if target:
                self.cwd = resolve(" ".join(target), self.values, self.cwd)
            return None
        if name == "call":
            return self.command(PsCommand(tuple(args)), "cmd", ())
        if name == "if":
            rest = list(args)
            while rest and rest[0].text.lower() in ("/i", "not"):
                rest = rest[1:]
            skip = 2 if rest and rest[0].text.lower() in ("exist", "errorlevel", "defined") else 1
            if rest and skip == 1 and "==" not in rest[0].text and len(rest) > 2:
                skip = 3
            return self.command(PsCommand(tuple(rest[skip:])), "cmd", ())
        if name == "for":
            texts = [w.text.lower() for w in args]
            if "do" in texts:
                return self.command(PsCommand(tuple(args[texts.index("do") + 1 :])), "cmd", ())
            return None
        if name == "start":
            rest = list(args)
            if rest and rest[0].quoted:
                rest = rest[1:]  # the window title
            while rest and rest[0].text.startswith("/"):
                rest = rest[1:]
            return self.command(PsCommand(tuple(rest)), "cmd", ()) if rest else None
        return None

    def _runner(self, cmd: WinCommand) -> Finding | None:
        name, texts = cmd.name, cmd.texts
        if name in SHELLS or name == "cmd":
            return self.shell(
                name if name == "cmd" else "powershell", texts, f"{cmd.shown}'s command"
            )
        if name == "invoke-expression":
            return self._iex(cmd)
        if name == "start-process":
            return self._start(cmd)
        if name in ("wsl", "bash", "sh"):
            return self._bash(cmd)
        if name == "wmic":
            low = [t.lower() for t in texts]
            if "process" in low and "create" in low:
                rest = texts[low.index("create") + 1 :]
                return self.judge(" ".join(rest), "cmd", "wmic process call create")
        if name == "invoke-command":
            return next((self._expression(w) for w in cmd.args if w.inner), None)
        return None

    def shell(self, name: str, texts: Sequence[str], origin: str) -> Finding | None:
        """Judge what ``powershell``/``pwsh``/``cmd`` with ``texts`` runs."""
        found = shell_text("cmd" if name == "cmd" else "powershell", list(texts))
        if found is None:
            return None
        dialect, text, kind = found
        if kind == "file":
            path = text.lower().replace("\\", "/").lstrip("./")
            if path in self.downloaded or path.rsplit("/", 1)[-1] in self.downloaded:
                return Finding(
                    RCE, text, f"{origin} runs {text!r}, downloaded earlier in the command"
                )
            return None
        if kind == "encoded":
            decoded = _decode(text)
            if decoded is None:
                return Finding(
                    "unparseable",
                    text[:24],
                    f"{origin}: the encoded command is not base64 of UTF-16LE text",
                )
            return self.judge(decoded, "powershell", f"{origin} (decoded)")
        return self.judge(text, dialect, origin)

    def _iex(self, cmd: WinCommand) -> Finding | None:
        for word, text in zip(cmd.args, cmd.texts, strict=True):
            if text.startswith("-") and not word.quoted:
                continue
            if word.inner:
                if _DOWNLOAD.search(word.raw) or any(
                    f"${v}" in word.raw.lower() for v in self.fetched
                ):
                    return Finding(
                        RCE, word.raw[:40], "Invoke-Expression runs downloaded text as code"
                    )
                return Finding(
                    RCE, word.raw[:40], "Invoke-Expression runs text known only at run time"
                )
            name = text[1:].lower().strip("{}") if text.startswith("$") else ""
            if name in self.fetched:
                return Finding(
                    RCE, text, f"Invoke-Expression runs {text}, downloaded text, as code"
                )
            if text.startswith("$") and text == word.text and name not in self.values:
                return Finding(
                    RCE, text, f"Invoke-Expression runs {text}, text known only at run time"
                )
            if SUBST in text:
                return Finding(RCE, text[:40], "Invoke-Expression runs text known only at run time")
            return self.judge(text, "powershell", "Invoke-Expression's text")
        return None

    def _start(self, cmd: WinCommand) -> Finding | None:
        texts = [
            t for t in cmd.texts if not t.lower().startswith(("-wait", "-nonewwindow", "-passthru"))
        ]
        low = [t.lower() for t in texts]
        file = ""
        rest: list[str] = []
        for i, t in enumerate(low):
            if t.startswith(("-f", "-filep")):
                file = texts[i + 1] if i + 1 < len(texts) else ""
            elif t.startswith(("-arg", "-a")):
                rest = texts[i + 1 :]
                rest = rest[
                    : next((j for j, r in enumerate(rest) if j and r.startswith("-")), len(rest))
                ]
            elif t.startswith("-v"):  # -Verb RunAs
                continue
        positional = [
            t
            for i, t in enumerate(texts)
            if not t.startswith("-") and (i == 0 or not texts[i - 1].startswith("-"))
        ]
        file = file or (positional[0] if positional else "")
        rest = " ".join(rest or positional[1:]).split()
        target = self._name(PsWord(file), "powershell")
        if (
            target in self.downloaded
            or file.lower().replace("\\", "/").lstrip("./") in self.downloaded
        ):
            return Finding(
                RCE, file, f"Start-Process runs {file!r}, downloaded earlier in the command"
            )
        if target in SHELLS or target == "cmd":
            return self.shell(target, rest, f"Start-Process {file}")
        return None

    def _bash(self, cmd: WinCommand) -> Finding | None:
        texts = list(cmd.texts)
        if cmd.name == "wsl":
            while texts and texts[0].startswith("-"):
                flag = texts.pop(0)
                if flag in ("-d", "--distribution", "-u", "--user", "--cd") and texts:
                    texts.pop(0)
                if flag in ("-e", "--exec", "--"):
                    break
            return self.run.nested(" ".join(texts), "wsl's command") if texts else None
        return self.run.argv([Word(cmd.name), *(Word(t, quoted=True) for t in texts)], cmd.shown)

    def _note(self, cmd: WinCommand) -> None:
        """Remember what ``cmd`` leaves behind: the location, downloaded files."""
        if cmd.name in ("set-location", "push-location") and cmd.texts:
            target = [t for t in cmd.texts if not t.startswith("-")]
            if target:
                self.cwd = resolve(target[0], self.values, self.cwd)
        low = [t.lower() for t in cmd.texts]
        out = ""
        if cmd.name in _DOWNLOADERS:
            for i, t in enumerate(low):
                if (t.startswith(("-o", "-destination"))) and i + 1 < len(low):
                    out = low[i + 1]
        elif cmd.name in ("certutil", "bitsadmin") and any("://" in t for t in low):
            out = low[-1]
        for word in cmd.args:
            if saved := _SAVED_AS.search(word.raw):
                out = saved[1]
        if out:
            self._downloaded(out)

    def _downloaded(self, written: str) -> None:
        path = expand(written, self.values).lower().replace("\\", "/").lstrip("./")
        name = path.rsplit("/", 1)[-1]
        self.downloaded.update({path, name, name.removesuffix(".exe")})


def judge_text(run: Run, text: str, dialect: str) -> Finding | None:
    """Judge ``text`` as ``dialect`` code (the guard's entry for a PowerShell or cmd tool)."""
    return WinRun(run).judge(text, dialect, "the command")


# -- the bash side --------------------------------------------------------------------------


def _bash_shell(inv: Invocation, run: Run) -> Finding | None:
    texts = [w.text.replace("//", "/", 1) if w.text.startswith("//") else w.text for w in inv.args]
    name = "cmd" if inv.name == "cmd" else "powershell"
    return WinRun(run).shell(name, texts, f"{inv.shown}'s command")


def _bash_program(inv: Invocation, run: Run) -> Finding | None:
    texts = [w.text for w in inv.args]
    cmd = WinCommand(inv.name, inv.shown, [PsWord(t) for t in texts], texts)
    for rule in WIN_RULES.get(inv.name, ()):
        found = rule(cmd)
        if found is not None:
            return found
    return None


_NATIVE = (
    *("reg", "schtasks", "vssadmin", "wmic", "wbadmin", "bcdedit", "cipher", "fsutil"),
    *("takeown", "icacls"),
    *("diskpart", "netsh", "wevtutil", "auditpol", "certutil", "bitsadmin", "mshta"),
    *("rundll32", "regsvr32", "msiexec", "mimikatz", "procdump", "ntdsutil", "format"),
)
"""Windows programs judged when a bash line (Git Bash, WSL calling ``.exe``) names them."""

_BASH_SHELLS = frozenset({*SHELLS, "cmd"})

RULES: dict[str, tuple[Rule, ...]] = {
    **dict.fromkeys(_BASH_SHELLS, (_bash_shell,)),
    **dict.fromkeys(_NATIVE, (_bash_program,)),
}


def _reads_stdin(inv: Invocation) -> bool:
    """Whether ``powershell``/``pwsh``/``cmd`` takes its commands from stdin (``-``,
    ``-Command -``, or no command at all)."""
    texts = [w.text for w in inv.args]
    name = "cmd" if inv.name == "cmd" else "powershell"
    return shell_text(name, texts) is None and not any(t.lower().startswith("-f") for t in texts)


def _piped_into_shell(stages: Sequence[Sequence[Invocation | None]], run: Run) -> Finding | None:
    """A download piped into ``powershell -``/``pwsh``/``cmd`` (``windows-rce``); text the
    guard can compute piped into one is judged as that language."""
    for k, stage in enumerate(stages[1:], 1):  # the cheapest loop: every pipeline runs it
        for inv in stage:
            if inv is not None and inv.name in _BASH_SHELLS and _reads_stdin(inv):
                return _judge_piped(stages[:k], inv, run)
    return None


def _judge_piped(
    upstream: Sequence[Sequence[Invocation | None]], inv: Invocation, run: Run
) -> Finding | None:
    for stage in upstream:
        for up in stage:
            if up is not None and up.name in DOWNLOADERS:
                return Finding(
                    RCE, up.shown, f"a download is piped into {inv.shown}, which runs it"
                )
    stream = pipe_stream(upstream)
    dialect = "cmd" if inv.name == "cmd" else "powershell"
    for reading in stream.readings if stream.complete else ():
        found = WinRun(run).judge(
            reading.decode("utf-8", "replace"), dialect, f"the text piped into {inv.shown}"
        )
        if found is not None:
            return found
    return None


PIPELINES: tuple[PipelineRule, ...] = (_piped_into_shell,)
