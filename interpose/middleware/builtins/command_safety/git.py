"""Rule family ``git``: hooks skipped.

Rules (the rule id leads the block reason):

- ``git-no-verify``: ``--no-verify`` (or an unambiguous abbreviation) on ``commit``,
  ``push``, ``merge``, ``pull``, ``rebase``, ``am``; ``commit -n`` including combined
  flags (``-anm msg``) but not ``-n`` inside an option value; ``-c core.hooksPath=``
  pointing outside the repository (``/dev/null``, absolute paths, empty); ``HUSKY=0``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..shell import Word
from .model import Finding, _Invocation, _set
from .run import Rule, _Run

# -- git ---------------------------------------------------------------------------------------

_GIT_GLOBAL_ARG = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"}
)
_GIT_NO_VERIFY_COMMANDS = frozenset({"commit", "push", "merge", "pull", "rebase", "am"})
_GIT_SHORT_ARG = {
    "commit": "mFCct",
    "push": "o",
    "merge": "msXF",
    "pull": "msXoj",
    "rebase": "sXx",
    "am": "Cp",
}
_GIT_LONG_ARG = {
    "commit": _set(
        "message file author date template reuse-message reedit-message fixup squash cleanup "
        "trailer pathspec-from-file"
    ),
    "push": _set("repo receive-pack exec push-option"),
    "merge": _set("message file strategy strategy-option into-name"),
    "pull": _set("message strategy strategy-option depth upload-pack"),
    "rebase": _set("onto strategy strategy-option exec"),
    "am": _set("directory exclude include whitespace"),
}
_HOOKS_OFF = {"HUSKY": ("0", "false"), "HUSKY_SKIP_HOOKS": ("1", "true")}


def _no_verify(sub: str, args: Sequence[Word]) -> tuple[str | None, list[str]]:
    """(the flag that disables hooks, scripts given to --exec/-x) for a git subcommand."""
    short_arg = _GIT_SHORT_ARG.get(sub, "")
    long_arg = _GIT_LONG_ARG.get(sub, frozenset())
    execs: list[str] = []
    i, n = 0, len(args)
    while i < n:
        t = args[i].text
        if t == "--":
            break
        if t.startswith("--"):
            name, eq, value = t[2:].partition("=")
            if name.startswith("no-v") and "no-verify".startswith(name):
                return t, execs
            takes = [opt for opt in long_arg if opt.startswith(name)] if len(name) > 1 else []
            if takes and not eq:
                i += 1
                if takes[0] == "exec" and i < n:
                    execs.append(args[i].text)
            elif takes and takes[0] == "exec":
                execs.append(value)
        elif len(t) > 1 and t[0] == "-":
            for k in range(1, len(t)):
                ch = t[k]
                if ch == "n" and sub == "commit":
                    return t, execs
                if ch in short_arg:
                    value = t[k + 1 :]
                    if not value and i + 1 < n:
                        i += 1
                        value = args[i].text
                    if ch == "x" and sub == "rebase":
                        execs.append(value)
                    break
        i += 1
    return None, execs


def _hooks_path_escapes(value: str) -> bool:
    v = value.strip()
    return not v or v.startswith(("/", "~", "$")) or ".." in v.split("/") or v.lower() == "nul"


def _rule_git(inv: _Invocation, run: _Run) -> Finding | None:
    args = inv.args
    i, n = 0, len(args)
    configs: list[tuple[str, str]] = []
    while i < n and args[i].text.startswith("-"):
        t = args[i].text
        if t in _GIT_GLOBAL_ARG:
            if t in ("-c", "--config-env") and i + 1 < n:
                configs.append((t, args[i + 1].text))
            i += 2
            continue
        if t.startswith("--config-env="):
            configs.append(("--config-env", t.partition("=")[2]))
        i += 1
    for option, setting in configs:
        key, _, value = setting.partition("=")
        key = key.lower()
        if key == "core.hookspath" and (option == "--config-env" or _hooks_path_escapes(value)):
            return Finding(
                "git-no-verify",
                setting,
                f"git {option} {setting} points core.hooksPath away from the repository's "
                f"hooks (token {setting!r})",
            )
        if key.startswith("alias.") and value.startswith("!"):
            found = run.nested(value[1:], f"git alias {key[6:]!r}")
            if found is not None:
                return found
    if i >= n:
        return None
    sub = args[i].text
    if sub not in _GIT_NO_VERIFY_COMMANDS:
        return None
    flag, execs = _no_verify(sub, args[i + 1 :])
    if flag is not None:
        return Finding(
            "git-no-verify",
            flag,
            f"git {sub} {flag} skips the repository's hooks (token {flag!r})",
        )
    for name, values in _HOOKS_OFF.items():
        if inv.env.get(name, "").lower() in values:
            setting = f"{name}={inv.env[name]}"
            return Finding(
                "git-no-verify", setting, f"{setting} git {sub} disables the repository's hooks"
            )
    for script in execs:
        found = run.nested(script, f"git {sub} --exec command")
        if found is not None:
            return found
    return None


RULES: dict[str, tuple[Rule, ...]] = {"git": (_rule_git,)}
