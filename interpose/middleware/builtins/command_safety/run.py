"""One analysis: :class:`Run` (variables, working directory, recursion into shells,
``xargs``/``find -exec`` fan-out) applying a :class:`RuleTable`.

What substitutions output is computed by its base :class:`.substitutions.SubstitutionOutputs`;
what a write or a read reaches (redirections included) is judged by :mod:`.reach`.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from types import MappingProxyType

from ..security_audit import resolve_path
from ..shell import (
    SUBST,
    FunctionDef,
    Script,
    ShellLimitError,
    ShellSyntaxError,
    SimpleCommand,
    Word,
)
from ..shell import expansions as shell_expansions
from ..shell import parse as parse_shell
from .arithmetic import reevaluated
from .budget import Budget, TooComplex
from .expansion import PARAM, braces, expand, split_ifs, uses_variable
from .fanout import emitted, xargs_call
from .find import find_plan
from .invocation import Invocation
from .model import DEFERRED, HOME, MAX_DEPTH, Finding
from .options import GLOB_CHARS
from .paths import (
    critical,
    cwd_like,
    display,
    glob_risk,
    host_path,
    show,
    unknown_risk,
    words_snippet,
)
from .programs import downloader, dynamic_name
from .reach import check_redirects
from .substitutions import SubstitutionOutputs
from .text import command_feeds, input_lines, loop_input, pipe_stream
from .wrappers import canon, unwrap

Rule = Callable[["Invocation", "Run"], "Finding | None"]
"""A rule judges one command as it will run; it returns a :class:`Finding` to refuse it."""
PipelineRule = Callable[[Sequence[Sequence["Invocation | None"]], "Run"], "Finding | None"]
"""A rule over a pipeline's stages (each stage: the commands of one ``|`` segment)."""
FunctionRule = Callable[[FunctionDef], "Finding | None"]
"""A rule over a shell function definition."""


@dataclass(frozen=True, slots=True)
class RuleTable:
    """The rules an analysis applies, assembled once from the rule-family modules.

    The shell model (this module and the modules it imports) never imports a family: the package
    builds the table and hands it to each :class:`Run`, so families can import the model
    freely and adding a rule touches only its family.
    """

    # the rules a command name (after unwrapping) runs: its own, then the generic ones
    by_name: Mapping[str, tuple[Rule, ...]]
    generic: tuple[Rule, ...] = ()  # rules that consult their own tables for every command
    pipelines: tuple[PipelineRule, ...] = ()
    functions: tuple[FunctionRule, ...] = ()
    stand_ins: tuple[str, ...] = ()  # what a command named at run time is judged as

    def rules(self, name: str) -> tuple[Rule, ...]:
        """The rules of command ``name``, then the generic ones."""
        return self.by_name.get(name, self.generic)


NO_DECISIONS: Mapping[str, str] = MappingProxyType({})

_IFS_SPLIT = re.compile(r"[ \t\n]+")  # bash splits on $IFS: space, tab, newline
_VAR_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


class Run(SubstitutionOutputs):
    """State of one analysis: variables, working directory, recursion depth."""

    __slots__ = (
        "aliases",
        "allow",
        "asked",
        "budget",
        "calls",
        "choices",
        "cwd",
        "decisions",
        "deny",
        "depth",
        "inside",
        "listings",
        "made",
        "mounts",
        "paths",
        "resolved",
        "table",
        "vars",
    )

    def __init__(
        self,
        table: RuleTable,
        deny: Sequence[re.Pattern[str]],
        allow: Sequence[re.Pattern[str]],
        budget: Budget,
        decisions: Mapping[str, str] = NO_DECISIONS,
    ) -> None:
        self.table = table
        self.decisions = decisions  # rule id -> "ask" or "off" (see .decisions)
        self.asked: Finding | None = None  # the first finding whose rule asks
        self.budget = budget  # charged as the analysis goes; raises TooComplex past it
        self.deny = deny
        self.allow = allow
        self.depth = 0
        self.vars: dict[str, str] = {}
        self.cwd: str | None = None
        self.inside = ""  # in program text handed to a shell: where it came from
        # created when first needed: most commands have no substitution
        self.made: dict[str, tuple[str, str]] | None = None  # X=$(curl ...): X -> (rule, by)
        self.outputs = None  # id(script) -> output (see SubstitutionOutputs)
        self.paths: dict[str, str] | None = None  # resolved paths, while probing stand-ins
        self.resolved: dict[str, str] = {}  # text -> resolve_path(text), see path()
        # control flow (see "values that vary"): created when first needed
        self.choices: dict[str, tuple[str | None, ...]] | None = None  # for d in a b: d -> a, b
        self.aliases: dict[str, str] | None = None  # alias x='rm -rf': x -> "rm -rf"
        self.calls: dict[str, list[list[str]]] | None = None  # f a b: f -> [[a, b]]
        # for v in $(cmd), cmd | while read v: v -> the script whose output lines v takes
        self.listings: dict[str, Script] | None = None
        self.mounts: tuple[tuple[str, str], ...] = ()  # container path -> host path (bind mounts)

    @property
    def probing(self) -> bool:
        """Whether a command named at run time is being judged as a stand-in (``$X -rf /``
        as ``rm``): rules that refuse an *unknown target* must not fire then, or every
        ``"$PYTHON" -m venv "$DIR"`` would be refused as ``mkfs $DIR``."""
        return self.paths is not None

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
        if self.depth >= MAX_DEPTH:
            return Finding(
                "unparseable",
                show(text[:40]),
                f"{origin} nests shells more than {MAX_DEPTH} levels deep",
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
        if self.depth >= MAX_DEPTH:
            return Finding("unparseable", words_snippet(words), f"{origin} nests too deeply")
        self.budget.open()
        self.depth += 1
        try:
            return self.script(Script((SimpleCommand(tuple(words)),)))
        finally:
            self.depth -= 1
            self.budget.leave()

    # -- traversal ----------------------------------------------------------------------------

    def script(self, script: Script) -> Finding | None:
        feeds = command_feeds(script)
        invs: list[Invocation | None] = []
        defined = {fn.name for fn in script.functions} if script.functions else ()
        for index, cmd in enumerate(script.commands):
            found = self._substitutions(cmd)
            if found is not None:
                return found
            if self.aliases and cmd.words:
                cmd, found = self._alias(cmd)
                if found is not None:
                    return found
            upstream = [invs[i] for i in feeds[index]] if index in feeds else []
            prepared = self._prepare(cmd, upstream)
            invs.append(prepared[0] if prepared else None)
            for inv in prepared:
                if inv.name == "read":  # its input: a pipe, its own or the loop's redirect
                    inv.stdin = tuple(upstream)
                    inv.loop_input = loop_input(script, index)
                elif inv.name in defined and not inv.dynamic:
                    self.calls = self.calls or {}
                    self.calls.setdefault(inv.name, []).append([tilde(w) for w in inv.args])
            if not prepared:
                found = self.settle(check_redirects(cmd.redirects, self))
            for inv in prepared:
                found = found or self.invocation(inv)
            if found is not None:
                return found
        for pipeline in script.pipelines:
            stages = [[invs[i] for i in stage] for stage in pipeline.stages]
            for pipeline_rule in self.table.pipelines:
                found = self.settle(pipeline_rule(stages, self))
                if found is not None:
                    return found
        for fn in script.functions:
            for function_rule in self.table.functions:
                found = self.settle(function_rule(fn))
                if found is not None:
                    return found
            found = self._function_body(fn)
            if found is not None:
                return found
        return None

    def _function_body(self, fn: FunctionDef) -> Finding | None:
        """Judge ``fn``'s body once per call seen in this script, with the call's
        arguments as ``$1``, ``$@``...; never called here: with unknown arguments."""
        calls: list[list[str] | None] = list((self.calls or {}).get(fn.name, ()))
        for args in calls or [None]:
            self.budget.step()
            with self.positional(args):
                found = self._inner(fn.body)
            if found is not None:
                return found
        return None

    @contextmanager
    def positional(self, args: Sequence[str] | None, zero: str | None = None) -> Iterator[None]:
        """``$1``... ``$@`` are ``args`` (None: unknown), ``$0`` is ``zero``, inside the
        block."""
        saved = {name: self.vars.pop(name) for name in _POSITIONAL if name in self.vars}
        choices = self.choices
        if choices:
            self.choices = {k: v for k, v in choices.items() if k not in _POSITIONAL}
        if args is not None:
            for k, arg in enumerate(args[:9], start=1):
                self.vars[str(k)] = arg
            self.vars["@"] = self.vars["*"] = " ".join(args)
            self.vars["#"] = str(len(args))
        if zero is not None:
            self.vars["0"] = zero
        try:
            yield
        finally:
            for name in _POSITIONAL:
                self.vars.pop(name, None)
            self.vars.update(saved)
            self.choices = choices

    def bind(self, name: str, values: Sequence[str | None]) -> None:
        """``name`` takes each of ``values`` in turn (a loop variable, lines ``read``
        reads); None is a value the guard does not know.  Commands that use ``name`` are
        judged once per value, every value: a literal list is cheap, and skipping its
        tail would let a secret or ``/`` hide in place 17.  The budget bounds the work
        (each judged command is an expansion step), so a list too long to judge is
        refused as too complex, never cut short."""
        self.budget.step()
        self.vars.pop(name, None)
        if self.choices:
            self.choices.pop(name, None)
        if self.listings:
            self.listings.pop(name, None)
        distinct = tuple(dict.fromkeys(values))
        if len(distinct) == 1:
            if distinct[0] is not None:
                self.vars[name] = distinct[0]
            return
        self.choices = self.choices or {}
        self.choices[name] = distinct

    def define_alias(self, name: str, value: str) -> None:
        self.aliases = self.aliases or {}
        self.aliases[name] = value

    def _alias(self, cmd: SimpleCommand) -> tuple[SimpleCommand, Finding | None]:
        """Expand an alias in command position (``alias x='rm -rf'; x /``): judged as if
        aliases were on (``shopt -s expand_aliases``, interactive shells, zsh)."""
        assert self.aliases is not None
        seen: set[str] = set()
        while (
            not cmd.words[0].quoted
            and (name := cmd.words[0].text) in self.aliases
            and name not in seen
        ):
            seen.add(name)
            try:
                body = parse_shell(self.aliases[name], self.budget)
            except ShellLimitError as exc:
                raise TooComplex.from_parse(exc) from None
            except ShellSyntaxError:
                break
            last = body.commands[-1] if body.commands else None
            if len(body.commands) > 1 or body.pipelines or body.functions:
                found = self.nested(self.aliases[name], f"alias {name!r}")
                if found is not None:
                    return cmd, found
            if last is None or not last.words:
                break
            cmd = replace(
                cmd,
                words=(*last.words, *cmd.words[1:]),
                assignments=(*last.assignments, *cmd.assignments),
                redirects=(*last.redirects, *cmd.redirects),
            )
        return cmd, None

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
        for code in reevaluated(words, self.expand_text, self.vars.get):
            found = self.expanded(code, "text bash expands again (arithmetic, a prompt)")
            if found is not None:
                return found
        return None

    def expanded(self, text: str | None, origin: str) -> Finding | None:
        """Judge the substitutions of ``text`` expanded as in double quotes (None: text
        the guard does not know, refused): :mod:`.arithmetic`, ``PS4``.  Text that does
        not parse runs nothing (bash stops at the syntax error)."""
        if text is None:
            return Finding("dynamic-code", "@P", f"{origin} is known only at run time")
        try:
            subs = shell_expansions(text, self.budget).subs
        except ShellLimitError as exc:
            raise TooComplex.from_parse(exc) from None
        except ShellSyntaxError:
            return None
        return next(filter(None, map(self._inner, subs)), None)

    def _prepare(
        self, cmd: SimpleCommand, upstream: Sequence[Invocation | None]
    ) -> list[Invocation]:
        if self.choices and cmd.words:
            # redirection targets vary with the loop too (for f in ...; do echo x >> $f)
            texts = " ".join(w.text for w in (*cmd.words, *(r.target for r in cmd.redirects)))
            names = [n for n in self.choices if "$" in texts and uses_variable(texts, n)]
            if names:
                return self._fan_out(cmd, upstream, names)
        return self._prepare_one(cmd, upstream)

    def _fan_out(
        self, cmd: SimpleCommand, upstream: Sequence[Invocation | None], names: list[str]
    ) -> list[Invocation]:
        """One invocation per combination of the values of ``names`` (see :meth:`bind`);
        each is an expansion step (:meth:`_prepare_one`) and each after the first makes
        the command's words again, so the budget bounds the product of nested loops."""
        assert self.choices is not None
        combos = itertools.product(*(self.choices[n] for n in names))
        saved = {n: self.vars.get(n) for n in names}
        out: list[Invocation] = []
        try:
            for count, combo in enumerate(combos):
                self.budget.made_words(len(cmd.words) if count else 0)
                for name, value in zip(names, combo, strict=True):
                    if value is None:
                        self.vars.pop(name, None)
                    else:
                        self.vars[name] = value
                out += self._prepare_one(cmd, upstream)
        finally:
            for name, old in saved.items():
                if old is None:
                    self.vars.pop(name, None)
                else:
                    self.vars[name] = old
        return out

    def _prepare_one(
        self, cmd: SimpleCommand, upstream: Sequence[Invocation | None]
    ) -> list[Invocation]:
        self.budget.step()
        for assignment in cmd.assignments:
            self.assign(assignment, persistent=not cmd.words)
        if not cmd.words:
            return []
        words = self.expand_words(cmd.words)
        if not words:
            return []
        unwrapped = unwrap(words)
        if unwrapped is None:
            return []
        env = unwrapped.env  # env/sudo NAME=value words win over the command line's own
        if cmd.assignments:
            env = {**dict(_assignment_pairs(cmd.assignments)), **env}
        redirects = cmd.redirects
        if self.choices and any("$" in r.target.text for r in redirects):
            # bound now: a loop's value is gone by the time the invocation is judged
            redirects = tuple(
                replace(r, target=replace(r.target, text=self.expand_text(r.target.text)))
                for r in redirects
            )
        inv = Invocation(unwrapped.name, unwrapped.args, env, redirects, unwrapped.layers)
        head = unwrapped.layers[-1][0].text
        if ("$" in head or SUBST in head) and dynamic_name(head):
            inv.dynamic = head
        if not unwrapped.via_xargs:
            return [inv]
        values = emitted(upstream, self.budget)
        marker = unwrapped.xargs_replace
        if marker is not None:  # xargs -I: one argument per input line
            values = input_lines(pipe_stream([upstream])) or values
            if marker in head:  # xargs -I{} {} ...: the input names the command
                inv.dynamic = head
        if not values:  # input the guard cannot know (base64 -d x | xargs sh -c)
            values = [Word(SUBST)]
        if marker is None:
            return [replace(inv, args=[*inv.args, *values])]
        self.budget.made_words(len(values) * (len(inv.args) + 1))
        return [xargs_call(inv, marker, value) for value in values]

    def invocation(self, inv: Invocation) -> Finding | None:
        if self.allow and inv.first_match(self.allow) is not None:
            return None
        if self.deny:
            pattern = inv.first_match(self.deny)
            if pattern is not None:
                return Finding(
                    "extra-deny",
                    inv.snippet(),
                    f"{inv.snippet()!r} matches extra_deny pattern {pattern!r}",
                )
        found = self.settle(check_redirects(inv.redirects, self)) if inv.redirects else None
        if found is not None:
            return found
        if inv.dynamic:
            return self._dynamic_command(inv)
        return self.judge(inv)

    def judge(self, inv: Invocation) -> Finding | None:
        """The rules of ``inv``'s command name, then the generic ones."""
        for rule in self.table.rules(inv.name):
            found = rule(inv, self)
            if found is not None and (found := self.settle(found)) is not None:
                return found
        return None

    def settle(self, found: Finding | None) -> Finding | None:
        """``found`` when its rule blocks; None when it asks (the first such finding is
        kept in ``asked``: a later blocking one still wins) or is off, so the analysis
        goes on."""
        if found is None or not self.decisions:
            return found
        decision = self.decisions.get(found.rule)
        if decision is None:
            return found
        if decision == "ask" and self.asked is None:
            self.asked = found
        return None

    def _made_by(self, subs: Sequence[Script]) -> tuple[str, str] | None:
        """(rule, command) when one of ``subs`` downloads its output or makes it in a
        way the guard cannot follow (``$(curl ...)``, ``$(base64 -d f)``)."""
        for script in subs:
            source = downloader(script)
            if source is not None:
                return "rce", source
            hidden = self.substitution(script).hidden
            if hidden:
                return "dynamic-code", hidden
        return None

    def _dynamic_command(self, inv: Invocation) -> Finding | None:
        """A command whose name only run time knows (``$CMD -rf /``, ``$(cat f) x``).

        In program text handed to a shell it is refused outright.  On the command line
        itself it is judged as each command of :data:`STAND_INS` in turn, and refused
        when one of them would be: ``"$EDITOR" notes.txt`` passes, ``$X -rf /`` does not.
        """
        shown = show(inv.dynamic)
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
                self.budget.made_words(len(inv.args))  # each probe judges them all again
                probe = Invocation(stand_in, inv.args, inv.env, (), [[Word(stand_in), *inv.args]])
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
        if value.startswith("(") and value.endswith(")") and word.quoted:  # a=(x y): array
            self.vars.pop(name, None)
            elements = [self.expand_text(e) for e in value[1:-1].split()]
            if any(SUBST in e for e in elements):
                self.vars.pop(name + "[]", None)
            else:
                self.vars[name + "[]"] = " ".join(elements)
            return
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
        if self.choices:
            self.choices.pop(name, None)
        if self.listings:
            self.listings.pop(name, None)
        if value.strip() == SUBST and len(word.subs) == 1:  # V=$(cmd): cmd's lines
            self.listings = self.listings or {}
            self.listings[name] = word.subs[0]
        if SUBST in value:
            self.vars.pop(name, None)
        else:  # B="$ROOT/build" keeps what is known: a later "$B/x" is below "build"
            self.vars[name] = value

    def expand_text(self, text: str) -> str:
        """``text`` with the variables the guard knows expanded (``${X%...}``, defaults
        and the other parameter expansions included; ``$PWD`` is the working
        directory); unknown ones stay as written."""
        if "$" not in text:
            return text
        if "[" in text and "${" in text:  # ${a[@]}, ${a[0]} of a known array
            text = _ARRAY_REF.sub(self._element, text)

        def lookup(name: str) -> str | None:
            value = self.vars.get(name)
            if value is None and name == "PWD":
                return self.cwd or "."
            if value is None and name == "HOME":
                return HOME
            return value

        def sub(m: re.Match[str]) -> str:
            if m.group(3) == "HOME" or (m.group(1) == "HOME" and not m.group(2)):
                return self.vars.get("HOME", m.group(0))  # resolve_path reads $HOME
            return expand(m, lookup, self.expand_text)

        out = PARAM.sub(sub, text)
        if out != text:  # x="$x$x" doubles its value each time: count what is made
            self.budget.made_text(len(out))
        return out

    def _element(self, m: re.Match[str]) -> str:
        elements = self.vars.get(m.group(1) + "[]")
        if elements is None:
            return m.group(0)
        index = m.group(2)
        if index in ("@", "*"):
            return elements
        parts = elements.split()
        k = int(index) if index.lstrip("-").isdigit() else None
        return parts[k] if k is not None and -len(parts) <= k < len(parts) else m.group(0)

    def expand_words(self, words: Sequence[Word]) -> list[Word]:
        """``words`` as the shell passes them: braces, variables, known substitution
        outputs and ``find`` paths expanded, unquoted expansions split into words."""
        for word in words:  # most commands: nothing to expand
            if word.subs or "$" in word.text or "{" in word.text:
                break
        else:
            return list(words)
        if any("{" in w.text and "," in w.text and not w.quoted for w in words):
            words = self._braces(words)
        out: list[Word] = []
        for word in words:
            text = self.expand_text(word.text)
            if text != word.text and _ALL_WORDS.fullmatch(word.text):  # "$@": one word each
                out.extend(replace(word, text=arg) for arg in text.split())
                continue
            if text == SUBST and len(word.subs) == 1 and not word.process:
                listed = self.listed(word.subs[0])  # $(find . -name x): the paths found
                if listed is not None:
                    self.budget.made_words(len(listed))
                    out.extend(listed)
                    continue
            if (
                word.subs
                and not word.process  # <(...) is a file name, not the output
                and SUBST in text
                and (spliced := self.spliced(word, text)) is not None
            ):
                # $(echo rm): the output is known, so the word is too (and already judged)
                glob = word.glob or (not word.quoted and GLOB_CHARS.search(spliced) is not None)
                word, text = replace(word, subs=(), glob=glob), spliced
            if text == word.text:
                out.append(word)
            elif word.quoted:
                out.append(replace(word, text=text))
            else:  # unquoted expansion: the shell splits it into words (default $IFS)
                ifs = self.vars.get("IFS")  # IFS=,; c=rm,-rf,/; $c: split on ","
                fields = _IFS_SPLIT.split(text) if ifs is None else split_ifs(text, ifs)
                parts = [part for part in fields if part]
                self.budget.made_words(len(parts))
                out.extend(replace(word, text=part) for part in parts)
        return out

    def _braces(self, words: Sequence[Word]) -> list[Word]:
        """Brace expansion of the unquoted words (:func:`.expansion.braces`)."""
        out: list[Word] = []
        for word in words:
            texts = braces(word.text) if not word.quoted and not word.subs else None
            if texts is None:
                out.append(word)
                continue
            self.budget.made_words(len(texts))
            out.extend(replace(word, text=t, tilde=t.startswith("~")) for t in texts)
        return out

    def listed(self, script: Script) -> list[Word] | None:
        """The paths ``script`` prints when it is a ``find`` (filtered by ``grep``,
        ``sort``, ``head``...): what ``{}`` would stand for; None for other scripts."""
        if script.functions or not script.commands or len(script.pipelines) > 1:
            return None
        first = script.commands[0].words
        if not first or canon(first[0].text) != "find":
            return None
        others = script.commands[1:]
        if any(not c.words or canon(c.words[0].text) not in _FILTERS for c in others):
            return None
        return find_plan(self.expand_words(first[1:])).entries() or None

    def path(self, word: Word) -> str:
        text = self.expand_text(word.text)
        if text.startswith("~") and not word.tilde:
            text = "./" + text  # a quoted '~' is a file literally named ~
        elif text.startswith(("~+", "~-")) and text[2:3] in ("", "/"):
            text = ("$PWD" if text[1] == "+" else "$OLDPWD") + text[2:]
            text = self.expand_text(text)
        # once per text: rules share words (rm: deletion, git hooks), probes judge them 14 times
        memo = self.resolved if self.paths is None else self.paths
        path = memo.get(text)
        if path is None:
            path = memo[text] = resolve_path(text, home=HOME)
        if self.cwd is not None and not path.startswith("/"):
            path = posixpath.normpath(posixpath.join(self.cwd, path))
        if self.mounts and path.startswith("/"):
            path = host_path(path, self.mounts)
        return path

    def inside_container(
        self,
        argv: Sequence[Word],
        origin: str,
        mounts: Sequence[tuple[str, str]] = (),
        workdir: str | None = None,
    ) -> Finding | None:
        """Analyze a command run inside a container (``docker run``/``exec``, ``kubectl
        exec``) with the same rules as on the host: a container is a machine too, and its
        paths under a bind mount (``mounts``: container path -> host path) are the host's.
        ``workdir`` is its working directory (``-w``), an absolute container path."""
        outer = self.mounts, self.cwd
        self.mounts = tuple(sorted(mounts, key=lambda m: -len(m[0])))
        self.cwd = workdir if workdir is not None and workdir.startswith("/") else None
        try:
            return self.argv(argv, origin)
        finally:
            self.mounts, self.cwd = outer

    def doomed(
        self, word: Word, *, recursive: bool, cwd_counts: bool = True, unknown: bool = False
    ) -> tuple[str, str] | None:
        """(path, why) when removing ``word`` would destroy something critical; with
        ``unknown``, also when the target is known only at run time in a way that could
        reach something critical (see :func:`unknown_risk`)."""
        path = self.path(word)
        # a trap action's "$tmp" takes its value later; /$x, $HOME/$x are judged as ever
        unknown = unknown and not (self.inside == DEFERRED and path[:1] == "$")
        if unknown and (why := unknown_risk(path)) is not None:
            if SUBST in word.text or word.text == SUBST:
                why += " (its value is not computed)"
            return show(display(path)), why + "; refused as unknown"
        if word.glob:
            why = glob_risk(path, recursive=recursive, cwd_counts=cwd_counts)
            if why is not None:
                return display(path), why
        if not recursive or (not cwd_counts and cwd_like(path)):
            return None
        why = critical(path)
        return None if why is None else (display(path), why)


_ARRAY_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\[([^\]]*)\]\}")
_ALL_WORDS = re.compile(r"\$@|\$\{@(?::[^}]*)?\}|\$\{[A-Za-z_][A-Za-z0-9_]*\[@\]\}")
"""``"$@"`` and ``"${a[@]}"``: one word per element even when quoted."""
_FILTERS = frozenset({"grep", "sort", "head", "tail", "uniq", "cat"})
"""Commands that pass on a subset of the lines they read (``find ... | grep x``)."""
_POSITIONAL = ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "@", "*", "#")


def tilde(word: Word) -> str:
    """A word's text with a leading ``~`` expanded, as ``$HOME`` (for values)."""
    return "$HOME" + word.text[1:] if word.tilde and word.text[1:2] in ("", "/") else word.text


def _assignment_pairs(words: Iterable[Word]) -> Iterable[tuple[str, str]]:
    for word in words:
        name, _, value = word.text.partition("=")
        yield name.rstrip("+"), value


def allowed(run: Run, *invs: Invocation) -> bool:
    return bool(run.allow) and any(inv.first_match(run.allow) for inv in invs)


STAND_INS = ("rm", "find", "chmod", "dd", "mkfs", "sh", "cat", "tee", "nc", "git", "docker")
"""What a command name known only at run time is judged as (see ``_dynamic_command``).
Others are covered by these: ``mv`` and ``chown`` of critical paths by ``rm -r`` and
``tee``, ``fdisk`` by ``mkfs``."""
