"""One analysis: :class:`_Run` (variables, working directory, recursion into shells,
``xargs``/``find -exec`` fan-out) applying a :class:`RuleTable`, and the judgement of what a
write or a read reaches (redirections included).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..security_audit import match_sensitive, match_sensitive_glob, resolve_path
from ..shell import (
    SUBST,
    FunctionDef,
    Redirect,
    Script,
    ShellLimitError,
    ShellSyntaxError,
    SimpleCommand,
    Word,
)
from ..shell import parse as parse_shell
from .budget import Budget, TooComplex
from .model import (
    _GLOB_CHARS,
    _MAX_DEPTH,
    _MAX_FANOUT,
    _NET_DEVICES,
    _SYSTEM_FILES,
    HOME,
    Finding,
    _canon,
    _critical,
    _cwd_like,
    _display,
    _downloader,
    _dynamic_name,
    _find_plan,
    _glob_risk,
    _Invocation,
    _is_device,
    _persistence,
    _show,
    _snippet,
    _unwrap,
)
from .text import _LOCAL, _STREAM_NAMES, _command_output, _lines, _setup_code, _Stream, _stream

Rule = Callable[["_Invocation", "_Run"], "Finding | None"]
"""A rule judges one command as it will run; it returns a :class:`Finding` to refuse it."""
PipelineRule = Callable[[Sequence[Sequence["_Invocation | None"]], "_Run"], "Finding | None"]
"""A rule over a pipeline's stages (each stage: the commands of one ``|`` segment)."""
FunctionRule = Callable[[FunctionDef], "Finding | None"]
"""A rule over a shell function definition."""


@dataclass(frozen=True, slots=True)
class RuleTable:
    """The rules an analysis applies, assembled once from the rule-family modules.

    The shell model (this module and :mod:`.model`) never imports a family: the package
    builds the table and hands it to each :class:`_Run`, so families can import the model
    freely and adding a rule touches only its family.
    """

    by_name: Mapping[str, tuple[Rule, ...]]  # rules of one command name (after unwrapping)
    generic: tuple[Rule, ...] = ()  # rules that consult their own tables for every command
    pipelines: tuple[PipelineRule, ...] = ()
    functions: tuple[FunctionRule, ...] = ()
    stand_ins: tuple[str, ...] = ()  # what a command named at run time is judged as

    def rules(self, name: str) -> Iterable[Rule]:
        """The rules of command ``name``, then the generic ones."""
        yield from self.by_name.get(name, ())
        yield from self.generic


_IFS_SPLIT = re.compile(r"[ \t\n]+")  # bash splits on $IFS: space, tab, newline
_VAR_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


class _Run:
    """State of one analysis: variables, working directory, recursion depth."""

    __slots__ = (
        "allow",
        "budget",
        "cwd",
        "deny",
        "depth",
        "inside",
        "made",
        "mounts",
        "outputs",
        "paths",
        "table",
        "vars",
    )

    def __init__(
        self,
        table: RuleTable,
        deny: Sequence[re.Pattern[str]],
        allow: Sequence[re.Pattern[str]],
        budget: Budget,
    ) -> None:
        self.table = table
        self.budget = budget  # charged as the analysis goes; raises TooComplex past it
        self.deny = deny
        self.allow = allow
        self.depth = 0
        self.vars: dict[str, str] = {}
        self.cwd: str | None = None
        self.inside = ""  # in program text handed to a shell: where it came from
        # created when first needed: most commands have no substitution
        self.made: dict[str, tuple[str, str]] | None = None  # X=$(curl ...): X -> (rule, by)
        self.outputs: dict[int, tuple[Script, _Stream]] | None = None  # id(script) -> output
        self.paths: dict[str, str] | None = None  # resolved paths, while probing stand-ins
        self.mounts: tuple[tuple[str, str], ...] = ()  # container path -> host path (bind mounts)

    # -- entry points -----------------------------------------------------------------------

    def source(self, text: str, origin: str, *, lenient: bool = False) -> Finding | None:
        try:
            script = parse_shell(text, self.budget)
        except ShellLimitError as exc:  # even when lenient: out of budget is never "fine"
            raise TooComplex.from_parse(exc) from None
        except ShellSyntaxError as exc:
            if lenient:
                return None
            fragment = text[exc.offset : exc.offset + 24] or text[-24:]
            return Finding(
                "unparseable",
                fragment,
                f"{origin} cannot be parsed ({exc.detail} at offset {exc.offset}, near "
                f"{fragment!r}); a command that cannot be analyzed is not run",
            )
        return self.script(script)

    def nested(self, text: str, origin: str, *, lenient: bool = False) -> Finding | None:
        """Analyze a script handed to another shell (``bash -c``, ``eval``, ...)."""
        if self.depth >= _MAX_DEPTH:
            return Finding(
                "unparseable",
                _show(text[:40]),
                f"{origin} nests shells more than {_MAX_DEPTH} levels deep",
            )
        self.budget.step()
        self.budget.open()
        self.depth += 1
        outer, self.inside = self.inside, origin
        try:
            return self.source(text, origin, lenient=lenient)
        finally:
            self.depth -= 1
            self.budget.leave()
            self.inside = outer

    def argv(self, words: Sequence[Word], origin: str) -> Finding | None:
        """Analyze an argument vector run without a shell (``find -exec``, ``xargs``)."""
        if not words:
            return None
        if self.depth >= _MAX_DEPTH:
            return Finding("unparseable", _snippet(words), f"{origin} nests too deeply")
        self.budget.open()
        self.depth += 1
        try:
            return self.script(Script((SimpleCommand(tuple(words)),)))
        finally:
            self.depth -= 1
            self.budget.leave()

    # -- traversal ----------------------------------------------------------------------------

    def script(self, script: Script) -> Finding | None:
        feeds = _feeds(script)
        invs: list[_Invocation | None] = []
        for index, cmd in enumerate(script.commands):
            found = self._substitutions(cmd)
            if found is not None:
                return found
            upstream = [invs[i] for i in feeds.get(index, ())]
            prepared = self._prepare(cmd, upstream)
            invs.append(prepared[0] if prepared else None)
            if not prepared:
                found = _check_redirects(cmd.redirects, self)
            for inv in prepared:
                found = found or self.invocation(inv)
            if found is not None:
                return found
        for pipeline in script.pipelines:
            stages = [[invs[i] for i in stage] for stage in pipeline.stages]
            for pipeline_rule in self.table.pipelines:
                found = pipeline_rule(stages, self)
                if found is not None:
                    return found
        for fn in script.functions:
            for function_rule in self.table.functions:
                found = function_rule(fn)
                if found is not None:
                    return found
            found = self._inner(fn.body)
            if found is not None:
                return found
        return None

    def _inner(self, script: Script) -> Finding | None:
        """Judge a script nested in the one being judged (a substitution, a body): one
        level deeper, so the Python stack stays bounded by the depth budget."""
        self.budget.open()
        try:
            return self.script(script)
        finally:
            self.budget.leave()

    def _substitutions(self, cmd: SimpleCommand) -> Finding | None:
        words: list[Word] = [*cmd.words, *cmd.assignments]
        for r in cmd.redirects:
            words.append(r.target)
            if r.heredoc is not None:
                words.append(r.heredoc)
        for word in words:
            for sub in word.subs:
                found = self._inner(sub)
                if found is not None:
                    return found
        return None

    def _prepare(
        self, cmd: SimpleCommand, upstream: Sequence[_Invocation | None]
    ) -> list[_Invocation]:
        self.budget.step()
        for assignment in cmd.assignments:
            self.assign(assignment, persistent=not cmd.words)
        if not cmd.words:
            return []
        words = self._expand(cmd.words)
        if not words:
            return []
        unwrapped = _unwrap(words)
        if unwrapped is None:
            return []
        env = dict(_assignment_pairs(cmd.assignments))
        env.update(unwrapped.env)
        inv = _Invocation(unwrapped.name, unwrapped.args, env, cmd.redirects, unwrapped.layers)
        head = unwrapped.layers[-1][0].text
        if ("$" in head or SUBST in head) and _dynamic_name(head):
            inv.dynamic = head
        if not unwrapped.via_xargs:
            return [inv]
        values = _emitted(upstream, self)
        marker = unwrapped.xargs_replace
        if marker is not None:  # xargs -I: one argument per input line
            values = _lines(_stream([upstream])) or values
            if marker in head:  # xargs -I{} {} ...: the input names the command
                inv.dynamic = head
        if not values:  # input the guard cannot know (base64 -d x | xargs sh -c)
            values = [Word(SUBST)]
        if marker is None:
            return [replace(inv, args=[*inv.args, *values])]
        fanned = values[:_MAX_FANOUT]
        self.budget.made_words(len(fanned) * (len(inv.args) + 1))
        return [_xargs_call(inv, marker, value) for value in fanned]

    def invocation(self, inv: _Invocation) -> Finding | None:
        if self.allow and _first_match(self.allow, inv) is not None:
            return None
        if self.deny:
            pattern = _first_match(self.deny, inv)
            if pattern is not None:
                return Finding(
                    "extra-deny",
                    inv.snippet(),
                    f"{inv.snippet()!r} matches extra_deny pattern {pattern!r}",
                )
        found = _check_redirects(inv.redirects, self)
        if found is not None:
            return found
        if inv.dynamic:
            return self._dynamic_command(inv)
        return self.judge(inv)

    def judge(self, inv: _Invocation) -> Finding | None:
        """The rules of ``inv``'s command name, then the generic ones."""
        for rule in self.table.rules(inv.name):
            found = rule(inv, self)
            if found is not None:
                return found
        return None

    def _made_by(self, subs: Sequence[Script]) -> tuple[str, str] | None:
        """(rule, command) when one of ``subs`` downloads its output or makes it in a
        way the guard cannot follow (``$(curl ...)``, ``$(base64 -d f)``)."""
        for script in subs:
            source = _downloader(script)
            if source is not None:
                return "rce", source
            hidden = self.substitution(script).hidden
            if hidden:
                return "dynamic-code", hidden
        return None

    def _dynamic_command(self, inv: _Invocation) -> Finding | None:
        """A command whose name only run time knows (``$CMD -rf /``, ``$(cat f) x``).

        In program text handed to a shell it is refused outright.  On the command line
        itself it is judged as each command of :data:`_STAND_INS` in turn, and refused
        when one of them would be: ``"$EDITOR" notes.txt`` passes, ``$X -rf /`` does not.
        """
        shown = _show(inv.dynamic)
        head = inv.layers[-1][0] if inv.layers else Word(inv.dynamic)
        made = self._made_by(head.subs)
        if made is None and self.made:
            names = (m.group(1) or m.group(2) for m in _VAR_REF.finditer(inv.dynamic))
            made = next((self.made[n] for n in names if n in self.made), None)
        if made is not None:  # $(curl ...) or X=$(curl ...); $X: the words are the command
            rule, source = made
            what = "downloaded by" if rule == "rce" else "made at run time by"
            return Finding(
                rule,
                source,
                f"the command {shown!r} runs words {what} {source!r}; the guard judges only "
                f"commands it can read",
            )
        if self.inside:
            return Finding(
                "dynamic-code",
                shown,
                f"{self.inside} names its command with {shown!r}, which is known only at "
                f"run time; program text handed to a shell must name its commands literally",
            )
        if not inv.args:  # "$@", $CMD: nothing any stand-in would refuse
            return None
        found, outer, self.paths = None, self.paths, self.paths or {}
        try:
            for stand_in in self.table.stand_ins:
                self.budget.step()
                probe = _Invocation(stand_in, inv.args, inv.env, (), [[Word(stand_in), *inv.args]])
                found = self.judge(probe)
                if found is not None:
                    return Finding(
                        "dynamic-code",
                        shown,
                        f"the command name {shown!r} is known only at run time, and its "
                        f"arguments would be refused if it were {stand_in}: {found.message}",
                    )
        finally:
            self.paths = outer
        return None

    # -- variables and paths --------------------------------------------------------------------

    def assign(self, word: Word, *, persistent: bool) -> None:
        name, _, value = word.text.partition("=")
        name = name.rstrip("+")
        if not persistent or "[" in name:
            return
        self.budget.step()
        value = self.expand_text(value)
        if self.made:
            self.made.pop(name, None)
        if self.outputs:  # outputs computed with the old value may differ now
            self.outputs.clear()
        if SUBST in value and word.subs:  # X=$(printf 'rm -rf /'): its output, when known
            spliced = self.spliced(word, value)
            if spliced is None:
                made = self._made_by(word.subs)
                if made is not None:
                    self.made = self.made or {}
                    self.made[name] = made
            value = spliced or value
        if value.startswith("~"):
            value = "$HOME" + value[1:]
        if SUBST in value or _VAR_REF.search(value.replace("$HOME", "").replace("${HOME}", "")):
            self.vars.pop(name, None)
        else:
            self.vars[name] = value

    def expand_text(self, text: str) -> str:
        if "$" not in text or not self.vars:
            return text

        def sub(m: re.Match[str]) -> str:
            name = m.group(1) or m.group(2)
            return self.vars.get(name, m.group(0))

        out = _VAR_REF.sub(sub, text)
        if out != text:  # x="$x$x" doubles its value each time: count what is made
            self.budget.made_text(len(out))
        return out

    def _expand(self, words: Sequence[Word]) -> list[Word]:
        out: list[Word] = []
        for word in words:
            text = self.expand_text(word.text)
            if (
                word.subs
                and not word.process  # <(...) is a file name, not the output
                and SUBST in text
                and (spliced := self.spliced(word, text)) is not None
            ):
                # $(echo rm): the output is known, so the word is too (and already judged)
                glob = word.glob or (not word.quoted and _GLOB_CHARS.search(spliced) is not None)
                word, text = replace(word, subs=(), glob=glob), spliced
            if text == word.text:
                out.append(word)
            elif word.quoted:
                out.append(replace(word, text=text))
            else:  # unquoted expansion: the shell splits it into words (default $IFS)
                parts = [part for part in _IFS_SPLIT.split(text) if part]
                self.budget.made_words(len(parts))
                out.extend(replace(word, text=part) for part in parts)
        return out

    # -- program text computed at run time ---------------------------------------------------

    def substitution(self, script: Script) -> _Stream:
        """What ``$(script)`` or ``<(script)`` outputs, as far as the guard can tell.

        The script itself has been judged already; this only evaluates its output.
        """
        if self.outputs is None:
            self.outputs = {}
        known = self.outputs.get(id(script))
        if known is not None and known[0] is script:  # holding it keeps its id unique
            return known[1]
        self.budget.step()
        self.budget.open()
        try:
            stream = self._evaluate(script)
        finally:
            self.budget.leave()
        self.budget.made_text(sum(map(len, stream.readings)))
        self.outputs[id(script)] = (script, stream)
        return stream

    def _evaluate(self, script: Script) -> _Stream:
        if not any(  # $(git describe), $(date +%s): local output, nothing to compute
            cmd.words and _canon(cmd.words[0].text) in _STREAM_NAMES for cmd in script.commands
        ):
            return _LOCAL
        invs: list[_Invocation | None] = []
        for cmd in script.commands:
            words = self._expand(cmd.words) if cmd.words else []
            unwrapped = _unwrap(words) if words else None
            if unwrapped is None:
                invs.append(None)
                continue
            # a command named at run time ($CMD) keeps its unknown name: local output
            invs.append(_Invocation(unwrapped.name, unwrapped.args, {}, cmd.redirects))
        if script.functions:
            return _LOCAL
        pipeline = script.pipelines[0] if len(script.pipelines) == 1 else None
        if pipeline is not None and sum(map(len, pipeline.stages)) == len(invs):
            return _stream([[invs[i] for i in stage] for stage in pipeline.stages])
        return _stream([invs])  # one command, or a list of them: their outputs in turn

    def spliced(self, word: Word, text: str) -> str | None:
        """``text`` (``word``'s, variables expanded) with each substitution replaced by
        its output, when every output is known and the same in every shell."""
        if text.count(SUBST) != len(word.subs):  # ${x:-$(...)} keeps its source text
            return None
        parts = text.split(SUBST)
        out = [parts[0]]
        for sub, part in zip(word.subs, parts[1:], strict=True):
            stream = self.substitution(sub)
            if not stream.complete or len(stream.readings) != 1:
                return None
            out += (_command_output(stream.readings[0]), part)
        return "".join(out)

    def readings(self, word: Word) -> list[str]:
        """The texts a program word may be once its substitutions have run: known outputs
        spliced in, setup code (``$(pyenv init -)``) as ``:``, anything else left as
        :data:`SUBST` for the parse of the program to place (data or a command name)."""
        texts = [word.text]
        if not word.subs or word.text.count(SUBST) != len(word.subs):
            return texts
        parts = word.text.split(SUBST)
        texts = [parts[0]]
        for sub, part in zip(word.subs, parts[1:], strict=True):
            stream = self.substitution(sub)
            values = [SUBST]
            if stream.complete:
                values = [_command_output(r) for r in stream.readings]
            elif not stream.hidden and _setup_code(sub):
                values = [":"]  # the null command stands for setup code the guard trusts
            texts = [head + value + part for head in texts for value in values]
        return texts

    def path(self, word: Word) -> str:
        text = self.expand_text(word.text)
        if text.startswith("~") and not word.tilde:
            text = "./" + text  # a quoted '~' is a file literally named ~
        if self.paths is None:
            path = resolve_path(text, home=HOME)
        else:  # probing stand-ins: the same words, judged 14 times
            path = self.paths.get(text) or self.paths.setdefault(
                text, resolve_path(text, home=HOME)
            )
        if self.cwd is not None and not path.startswith("/"):
            path = posixpath.normpath(posixpath.join(self.cwd, path))
        if self.mounts and path.startswith("/"):
            path = _host_path(path, self.mounts)
        return path

    def inside_container(
        self, argv: Sequence[Word], origin: str, mounts: Sequence[tuple[str, str]] = ()
    ) -> Finding | None:
        """Analyze a command run inside a container (``docker run``/``exec``, ``kubectl
        exec``) with the same rules as on the host: a container is a machine too, and its
        paths under a bind mount (``mounts``: container path -> host path) are the host's."""
        outer = self.mounts, self.cwd
        self.mounts = tuple(sorted(mounts, key=lambda m: -len(m[0])))
        self.cwd = None
        try:
            return self.argv(argv, origin)
        finally:
            self.mounts, self.cwd = outer

    def doomed(
        self, word: Word, *, recursive: bool, cwd_counts: bool = True
    ) -> tuple[str, str] | None:
        """(path, why) when removing ``word`` would destroy something critical."""
        path = self.path(word)
        if word.glob:
            why = _glob_risk(path, recursive=recursive, cwd_counts=cwd_counts)
            if why is not None:
                return _display(path), why
        if not recursive or (not cwd_counts and _cwd_like(path)):
            return None
        why = _critical(path)
        return None if why is None else (_display(path), why)


def _host_path(path: str, mounts: Sequence[tuple[str, str]]) -> str:
    """``path`` inside a container, as the host path a bind mount shows there."""
    for target, source in mounts:
        if path == target or path.startswith(target.rstrip("/") + "/"):
            rest = path[len(target) :].lstrip("/")
            return posixpath.join(source, rest) if rest else source
    return path


def _assignment_pairs(words: Iterable[Word]) -> Iterable[tuple[str, str]]:
    for word in words:
        name, _, value = word.text.partition("=")
        yield name.rstrip("+"), value


def _first_match(patterns: Sequence[re.Pattern[str]], inv: _Invocation) -> str | None:
    texts = inv.texts()
    for pattern in patterns:
        if any(pattern.search(text) for text in texts):
            return pattern.pattern
    return None


def _feeds(script: Script) -> dict[int, tuple[int, ...]]:
    """Command index -> indices of the commands whose stdout feeds its stdin."""
    feeds: dict[int, tuple[int, ...]] = {}
    for pipeline in script.pipelines:
        for previous, stage in zip(pipeline.stages, pipeline.stages[1:], strict=False):
            for index in stage:
                feeds[index] = previous
    return feeds


def _substitute(word: Word, marker: str, value: Word) -> Word:
    if word.text == marker:
        return value
    if marker not in word.text:
        return word
    return replace(word, text=word.text.replace(marker, value.text), glob=word.glob or value.glob)


def _judge_write(run: _Run, word: Word, what: str) -> Finding | None:
    path = run.path(word)
    token = _show(word.text)
    if path.startswith(_NET_DEVICES):
        return Finding("reverse-shell", word.text, f"{what} connects to {path!r} (token {token!r})")
    if _is_device(path):
        return Finding("disk", word.text, f"{what} writes to the device {path!r} (token {token!r})")
    if _SYSTEM_FILES.match(path.lower()):
        return Finding(
            "system-files",
            word.text,
            f"{what} writes the system file {path!r} (token {token!r})",
        )
    if _persistence(path):
        return Finding(
            "persistence",
            word.text,
            f"{what} writes {_display(path)!r}, which runs at login, at boot or on a "
            f"schedule or controls who may log in (token {token!r})",
        )
    return None


def _judge_read(
    run: _Run, word: Word, what: str, exempt: frozenset[str] = frozenset()
) -> Finding | None:
    if not word.text or SUBST in word.text:
        return None
    path = run.path(word)
    # a glob is judged by what it can match: ".e*" can match ".env", ".env.ex*" only templates
    judge = match_sensitive_glob if word.glob else match_sensitive
    found = judge(path, home=HOME)
    if found is None or found.rule in exempt:
        return None
    return Finding(
        "sensitive-read",
        word.text,
        f"{what} reads {_display(path)!r}: {found.rule} ({found.description}; "
        f"token {_show(word.text)!r})",
    )


_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_READ_OPS = frozenset({"<", "<>"})


def _check_redirects(redirects: Sequence[Redirect], run: _Run) -> Finding | None:
    for r in redirects:
        if r.op in ("<<", "<<-", "<<<"):
            continue
        target = r.target.text
        if r.op in (">&", "<&") and (target == "-" or target.rstrip("-").isdigit()):
            continue  # fd duplication, not a file
        what = f"redirection {r.op!r}"
        if r.op in _WRITE_OPS or run.path(r.target).startswith(_NET_DEVICES):
            found = _judge_write(run, r.target, what)
            if found is not None:
                return found
        if r.op in _READ_OPS:
            found = _judge_read(run, r.target, what)
            if found is not None:
                return found
    return None


def _allowed(run: _Run, *invs: _Invocation) -> bool:
    return bool(run.allow) and any(_first_match(run.allow, inv) for inv in invs)


def _emitted(upstream: Sequence[_Invocation | None], run: _Run) -> list[Word]:
    """Words an upstream command writes to a pipe, when they can be known (for xargs)."""
    values: list[Word] = []
    for inv in upstream:
        if inv is None:
            continue
        if inv.name == "echo":
            words = [w for w in inv.args if w.text not in ("-n", "-e", "-E")]
            values += [replace(w, text=part) for w in words for part in w.text.split()]
        elif inv.name == "printf" and len(inv.args) > 1:
            values += inv.args[1:]
        elif inv.name == "printf" and inv.args:
            values += [replace(inv.args[0], text=inv.args[0].text.replace("\\n", "").strip())]
        elif inv.name == "find":
            values += _find_plan(inv.args).entries()
    return values[: _MAX_FANOUT * 4]


_STAND_INS = ("rm", "find", "chmod", "dd", "mkfs", "sh", "cat", "tee", "nc", "git", "docker")
"""What a command name known only at run time is judged as (see ``_dynamic_command``).
Others are covered by these: ``mv`` and ``chown`` of critical paths by ``rm -r`` and
``tee``, ``fdisk`` by ``mkfs``."""


def _xargs_call(inv: _Invocation, marker: str, value: Word) -> _Invocation:
    """``xargs -I{} CMD {}`` for one input value (which may name the command itself)."""
    args = [_substitute(arg, marker, value) for arg in inv.args]
    if marker not in inv.dynamic:
        return replace(inv, args=args)
    head = _substitute(Word(inv.dynamic), marker, value).text
    return replace(
        inv,
        name=_canon(head),
        args=args,
        layers=[*inv.layers[:-1], [Word(head), *args]],
        dynamic=head if _dynamic_name(head) else "",
    )
