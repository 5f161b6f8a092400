"""One command as it will run (:class:`Invocation`): canonical name, arguments,
environment, redirections and the command as seen at each wrapper level."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..shell import Redirect, Word
from .options import Opts, Parsed, parse_opts
from .paths import show, words_snippet


@dataclass(slots=True)
class Invocation:
    """One command as it will run: canonical name, arguments, environment, redirects."""

    name: str
    args: list[Word]
    env: dict[str, str] = field(default_factory=dict)
    redirects: tuple[Redirect, ...] = ()
    layers: list[list[Word]] = field(default_factory=list)
    dynamic: str = ""  # the command name as written, when only run time knows it ($CMD)
    # where ``read`` takes its input: the commands piped into it, the loop's redirections
    stdin: tuple[Invocation | None, ...] = ()
    loop_input: tuple[Redirect, ...] = ()
    # grammar id -> (grammar, args read with it): see options(); not copied by replace()
    parsed: dict[int, tuple[Opts, Parsed]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def options(self, spec: Opts) -> Parsed:
        """``args`` read with the grammar ``spec`` (:func:`.options.parse_opts`), once: the
        rules of one command often read it with the same grammar (``rm``: the deletion and
        the git-hook rules).  The result is shared: read it, do not change it."""
        known = self.parsed.get(id(spec))
        if known is None or known[0] is not spec:
            known = self.parsed[id(spec)] = (spec, parse_opts(self.args, spec))
        return known[1]

    @property
    def shown(self) -> str:
        """The command as spelled (``mkfs.ext4``, ``python3``), for messages."""
        return self.layers[-1][0].text.rsplit("/", 1)[-1] if self.layers else self.name

    def texts(self) -> list[str]:
        """Normalized text of every wrapper level, for ``extra_deny``/``allow`` regexes."""
        out = []
        for layer in self.layers or [[Word(self.name), *self.args]]:
            head = layer[0].text.rsplit("/", 1)[-1]
            out.append(" ".join([head, *(show(w.text) for w in layer[1:])]))
        return out

    def first_match(self, patterns: Sequence[re.Pattern[str]]) -> str | None:
        """The first of ``patterns`` (``extra_deny``, ``allow``) that some text of
        :meth:`texts` matches, or None."""
        texts = self.texts()
        for pattern in patterns:
            if any(pattern.search(text) for text in texts):
                return pattern.pattern
        return None

    def snippet(self) -> str:
        return words_snippet([Word(self.name), *self.args])


def verb_of(inv: Invocation, parsed: Parsed) -> str:
    return " ".join([inv.shown, *(w.text for w in parsed.options)])
