"""Rule family ``filesystem``: destruction of critical directories and writes to system files.

Rules (the rule id leads the block reason):

- ``fs-destruction``: recursive ``rm`` of ``/``, a top-level directory, a home directory,
  a system directory or its direct children, the working directory or its parents
  (``rm -rf .``, ``rm -rf *``, ``rm -rf ..``); broad globs (``/*``, ``~/*``, ``.*``) over
  those; ``find <such root> -delete`` or ``-exec rm -r``; ``mv`` of such a directory.
  A plain (non-recursive) ``rm *`` in the working directory is allowed: it only removes
  files the agent can see and is routine; ``rm`` of ``/etc/*``-like globs is not.  The
  contents of ``/tmp``, ``/var/tmp`` and ``/dev/shm`` may be cleared.  ``find`` without a
  name filter means "every entry below the root", so ``find /var/log -mtime +30 -delete``
  is refused (conservatively); ``-name``/``-path``/``-empty``/``-size``/``-newer``
  filters narrow it.
- ``system-files``: any write (redirection, ``tee``, ``cp``/``mv``/``install``/``ln``
  into, ``sed -i``, ``perl -i``, ``dd of=``, ``truncate``, ``curl -o``...) to
  ``/etc/passwd``, ``/etc/shadow``, ``/etc/gshadow``, ``/etc/group``, ``/etc/sudoers``,
  ``/etc/sudoers.d/*``.
"""

from __future__ import annotations

from ..shell import Word
from .model import Finding, _find_plan, _Invocation, _opts, _parse_opts, _show, _verb
from .operands import (
    _CP,
    _CURL,
    _INSTALL,
    _LN,
    _MV,
    _PERL,
    _RSYNC,
    _SCP,
    _SED,
    _SPONGE,
    _TEE,
    _TRUNCATE,
    _WGET,
    Extract,
    _copy_targets,
    _in_place,
    _keyed,
    _operands,
    _option_values,
)
from .run import Rule, _judge_write, _Run, _substitute

# -- findings helpers ---------------------------------------------------------------------------


def _destruction(verb: str, token: Word, hit: tuple[str, str]) -> Finding:
    path, why = hit
    return Finding(
        "fs-destruction",
        token.text,
        f"{verb} targets {path!r}, {why} (token {_show(token.text)!r})",
    )


# -- fs-destruction -----------------------------------------------------------------------------

_RM = _opts(
    long="force interactive one-file-system no-preserve-root preserve-root recursive dir "
    "verbose help version",
    alias={"r": "recursive", "R": "recursive", "f": "force", "d": "dir", "v": "verbose"},
)


def _rule_rm(inv: _Invocation, run: _Run) -> Finding | None:
    parsed = _parse_opts(inv.args, _RM)
    recursive = parsed.has("--recursive")
    for word in parsed.operands:
        hit = run.doomed(word, recursive=recursive, unknown=recursive)
        if hit is not None:
            return _destruction(_verb(inv, parsed), word, hit)
    return None


def _rule_mv(inv: _Invocation, run: _Run) -> Finding | None:
    parsed = _parse_opts(inv.args, _MV)
    sources = parsed.operands if parsed.has("--target-directory") else parsed.operands[:-1]
    for word in sources:
        hit = run.doomed(word, recursive=True, cwd_counts=False)
        if hit is not None:
            path, why = hit
            return Finding(
                "fs-destruction",
                word.text,
                f"{_verb(inv, parsed)} moves {path!r}, {why} (token {_show(word.text)!r})",
            )
    return None


def _rule_find(inv: _Invocation, run: _Run) -> Finding | None:
    plan = _find_plan(inv.args)
    if plan.delete:
        for root, entry in zip(plan.candidates, plan.entries(), strict=False):
            hit = run.doomed(entry, recursive=True, unknown=True)
            if hit is not None:
                return _destruction("find -delete", root, hit)
    for action, argv in plan.execs:
        values = plan.entries() or [Word("{}")]
        for value in values:
            found = run.argv([_substitute(w, "{}", value) for w in argv], f"find {action}")
            if found is not None:
                return found
    return None


_WRITERS: dict[str, Extract] = {
    "tee": _operands(_TEE),
    "cp": _copy_targets(_CP),
    "mv": _copy_targets(_MV),
    "install": _copy_targets(_INSTALL),
    "ln": _copy_targets(_LN),
    "rsync": _copy_targets(_RSYNC),
    "scp": _copy_targets(_SCP),
    "dd": _keyed("of"),
    "sed": _in_place(_SED, ("--expression", "--file"), "-i"),
    "perl": _in_place(_PERL, ("-e", "-E"), "-i"),
    "truncate": _operands(_TRUNCATE),
    "shred": _operands(_opts("nsu", "force remove exact zero verbose", "iterations size")),
    "sponge": _operands(_SPONGE),
    "curl": _option_values(_CURL, "--output"),
    "wget": _option_values(_WGET, "--output-document"),
}


def _rule_writes(inv: _Invocation, run: _Run) -> Finding | None:
    extract = _WRITERS.get(inv.name)
    if extract is None:
        return None
    for word in extract(inv):
        found = _judge_write(run, word, inv.name)
        if found is not None:
            return found
    return None


RULES: dict[str, tuple[Rule, ...]] = {
    "rm": (_rule_rm,),
    "mv": (_rule_mv,),
    "find": (_rule_find,),
}
GENERIC: tuple[Rule, ...] = (_rule_writes,)
