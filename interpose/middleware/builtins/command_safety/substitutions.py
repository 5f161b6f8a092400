"""What substitutions output, as far as the guard can tell: ``$(pwd)``, ``$(mktemp)``,
``$(dirname x)``, ``$(echo ...)``/``$(printf ...)`` pipelines (through :mod:`.text`), spliced
into the words that hold them.

:class:`SubstitutionOutputs` is a part of the analysis (:class:`.run.Run` derives from
it): it keeps the outputs already computed and reads the run's variables and paths
through the two methods the analysis provides.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from ..shell import SUBST, Script, Word
from .budget import Budget
from .invocation import Invocation
from .options import opts, parse_opts
from .text import LOCAL, STREAM_NAMES, Stream, command_output, pipe_stream, setup_code
from .wrappers import canon, unwrap

__all__ = ["SubstitutionOutputs"]

_MKTEMP = opts("p", "directory dry-run quiet suffix", "tmpdir suffix", {"p": "tmpdir"})


class SubstitutionOutputs:
    """The outputs of substitutions in one analysis (a base of :class:`.run.Run`)."""

    __slots__ = ("outputs",)

    outputs: dict[int, tuple[Script, Stream]] | None  # id(script) -> output; None: none yet

    # the analysis's state and the two services of the analysis this part relies on
    budget: Budget
    cwd: str | None

    def expand_words(self, words: Sequence[Word]) -> list[Word]:
        """The words as the shell passes them (see :meth:`.run.Run.expand_words`)."""
        raise NotImplementedError

    def path(self, word: Word) -> str:
        """The path a word names (see :meth:`.run.Run.path`)."""
        raise NotImplementedError

    def substitution(self, script: Script) -> Stream:
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

    def _evaluate(self, script: Script) -> Stream:
        known = self._known_output(script)
        if known is not None:
            return Stream((known.encode() + b"\n",))
        if not any(  # $(git describe), $(date +%s): local output, nothing to compute
            cmd.words and canon(cmd.words[0].text) in STREAM_NAMES for cmd in script.commands
        ):
            return LOCAL
        invs: list[Invocation | None] = []
        for cmd in script.commands:
            words = self.expand_words(cmd.words) if cmd.words else []
            unwrapped = unwrap(words) if words else None
            if unwrapped is None:
                invs.append(None)
                continue
            # a command named at run time ($CMD) keeps its unknown name: local output
            invs.append(Invocation(unwrapped.name, unwrapped.args, {}, cmd.redirects))
        if script.functions:
            return LOCAL
        pipeline = script.pipelines[0] if len(script.pipelines) == 1 else None
        if pipeline is not None and sum(map(len, pipeline.stages)) == len(invs):
            return pipe_stream([[invs[i] for i in stage] for stage in pipeline.stages])
        return pipe_stream([invs])  # one command, or a list of them: their outputs in turn

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
            out += (command_output(stream.readings[0]), part)
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
                values = [command_output(r) for r in stream.readings]
            elif not stream.hidden and setup_code(sub):
                values = [":"]  # the null command stands for setup code the guard trusts
            texts = [head + value + part for head in texts for value in values]
        return texts

    def _known_output(self, script: Script) -> str | None:
        """What ``$(pwd)`` and ``$(mktemp ...)`` print: the working directory, a new
        name in the temporary directory (or in the template's directory)."""
        if len(script.commands) != 1 or not script.commands[0].words:
            return None
        words = script.commands[0].words
        name = canon(words[0].text)
        if name == "pwd":
            return self.cwd or "."
        if name in ("dirname", "basename", "realpath", "readlink"):
            return self._path_output(name, self.expand_words(words[1:]))
        if name != "mktemp":
            return None
        parsed = parse_opts(words[1:], _MKTEMP)
        template = parsed.operands[-1].text if parsed.operands else "tmp.XXXXXXXXXX"
        where = parsed.value("--tmpdir", "-p")
        if where is not None:
            return where.text.rstrip("/") + "/" + template
        if parsed.has("-t") or not parsed.operands:
            return "/tmp/" + template
        return template  # in the working directory, or where the template says

    def _path_output(self, name: str, args: Sequence[Word]) -> str | None:
        """``dirname``/``basename``/``realpath``/``readlink -f`` of one known path."""
        operands = [w for w in args if not w.text.startswith("-")]
        if len(operands) != 1 or "$" in operands[0].text or SUBST in operands[0].text:
            return None
        if name == "readlink" and not any(w.text in ("-f", "-m", "-e") for w in args):
            return None
        text = operands[0].text
        if name == "basename":
            return posixpath.basename(text.rstrip("/")) or "/"
        if name == "dirname":  # "." stands for the working directory: its parent is ".."
            return ".." if text == "." else posixpath.dirname(text.rstrip("/")) or "."
        return self.path(operands[0])  # realpath, readlink -f: normalized (links unknown)
