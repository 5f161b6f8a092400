"""Rule family ``git``: hooks skipped.

Rules (the rule id leads the block reason):

- ``git-no-verify``: every way of committing, pushing or merging without the repository's
  hooks running:

  - ``--no-verify`` (or an unambiguous abbreviation) on ``commit``, ``push``, ``merge``,
    ``pull``, ``rebase``, ``am``, ``cherry-pick``, ``revert``; ``commit -n`` including
    combined flags (``-anm msg``) but not ``-n`` inside an option value;
  - ``core.hooksPath`` pointed outside the repository (``/dev/null``, an absolute or home
    path, a variable, ``..``, empty) by ``git -c``, ``--config-env``, the environment
    (``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_<n>``/``GIT_CONFIG_VALUE_<n>``,
    ``GIT_CONFIG_PARAMETERS``) or ``git config`` (any scope, ``--add``, ``git config
    set``); a repository-relative directory (``git config core.hooksPath .githooks``,
    ``.husky``) is how projects share hooks and is allowed, as are reading and
    ``--unset``;
  - aliases that do any of this: ``git config alias.ci 'commit --no-verify'``,
    ``git -c alias.x='commit -n' x`` (an alias is judged as the git command it expands
    to; a ``!`` alias is shell text, judged like ``sh -c``);
  - hook managers switched off for a git command that runs hooks: ``HUSKY=0``,
    ``HUSKY_SKIP_HOOKS=1``, ``LEFTHOOK=0``, ``OVERCOMMIT_DISABLE=1`` (as a prefix, through
    ``env``, or set or exported earlier on the line; ``export HUSKY=0`` with no git command
    after it is how CI skips installing hooks, and is allowed), and named hooks
    skipped: pre-commit's and overcommit's ``SKIP=<hook>``, lefthook's
    ``LEFTHOOK_EXCLUDE=<hook>`` -- skipping the one check that fails is the same bypass
    as skipping all of them.  ``SKIP=x pre-commit run`` (running the checks) is allowed,
    and so is ``PRE_COMMIT_ALLOW_NO_CONFIG=1`` (it only lets a commit through where no
    hooks are configured);
  - the hook manager told to remove its hooks (``pre-commit uninstall``, ``npx husky
    uninstall``, ``lefthook uninstall``, ``overcommit --uninstall``);
  - the installed hooks themselves disabled: ``rm``/``unlink``/``mv``/``truncate`` of
    ``.git/hooks/<hook>`` (or the whole directory), ``chmod -x`` (any mode without the
    owner's execute bit), ``cp``/``ln -s`` of ``/dev/null`` or ``true`` over a hook, and
    ``echo 'exit 0' > .git/hooks/pre-commit`` (or ``cat /dev/null >``).  ``.git/hooks``
    is not versioned, so nobody reviews the change; ``*.sample`` files are not hooks.
    Files of ``.husky/`` and other versioned hook directories are ordinary project
    files: their changes show in the diff.

  Not seen: an alias defined in one command and used in a later one (``git config
  alias.ci commit`` then ``git ci -n``), hooks that a hook manager's own config file
  disables, and configuration files named by ``GIT_CONFIG_GLOBAL``/``GIT_CONFIG_SYSTEM``
  or ``include.path`` (their contents are not on the command line).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..shell import Word
from .model import Finding, _Invocation, _opts, _parse_opts, _set, _show, _split_words
from .operands import _CP, _LN, _MV, _TRUNCATE
from .run import Rule, _Run

# -- git ---------------------------------------------------------------------------------------

_GIT_GLOBAL_ARG = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"}
)
_GIT_NO_VERIFY_COMMANDS = frozenset(
    {"commit", "push", "merge", "pull", "rebase", "am", "cherry-pick", "revert"}
)
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
_HOOKS_OFF = {
    "HUSKY": ("0", "false"),
    "HUSKY_SKIP_HOOKS": ("1", "true"),
    "LEFTHOOK": ("0", "false"),
    "OVERCOMMIT_DISABLE": ("1", "true"),
}
"""Environment variables that switch a hook manager off, and the values that do."""
_HOOKS_SKIPPED = ("SKIP", "LEFTHOOK_EXCLUDE")
"""Environment variables naming hooks to skip (pre-commit and overcommit; lefthook)."""


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


_CONFIG_PARAMETER = re.compile(r"'((?:[^']|'\\'')*)'(?:='((?:[^']|'\\'')*)')?")
_CONFIG_KEY = re.compile(r"GIT_CONFIG_KEY_(\d+)$")


def _env_configs(env: dict[str, str]) -> Iterable[tuple[str, str, str]]:
    """(origin, key, value) of the settings git reads from its environment."""
    for name, key in env.items():
        m = _CONFIG_KEY.match(name)
        if m is not None:
            value = env.get(f"GIT_CONFIG_VALUE_{m.group(1)}", "")
            yield f"{name}={key}", key, value
    parameters = env.get("GIT_CONFIG_PARAMETERS", "")
    for m in _CONFIG_PARAMETER.finditer(parameters):
        key, value = m.group(1), m.group(2)
        if value is None:  # the older 'key=value' form
            key, _, value = key.partition("=")
        yield f"GIT_CONFIG_PARAMETERS={parameters}", key, value


def _environment(inv: _Invocation, run: _Run) -> dict[str, str]:
    """Variables the git command sees: its own prefix (and ``env``) over those assigned
    or exported earlier on the command line."""
    if not run.vars:
        return inv.env
    return {**run.vars, **inv.env}


def _judge_setting(
    origin: str, key: str, value: str, inv: _Invocation, run: _Run, depth: int
) -> Finding | None:
    """A configuration setting (``-c``, environment, ``git config``) that disables hooks,
    or an alias that does."""
    key = key.lower()
    if key == "core.hookspath" and _hooks_path_escapes(value):
        return Finding(
            "git-no-verify",
            _show(origin),
            f"{_show(origin)!r} points core.hooksPath at {_show(value)!r}, away from the "
            f"repository's hooks",
        )
    if key.startswith("alias.") and value:
        name = key[6:]
        if value.startswith("!"):
            return run.nested(value[1:], f"git alias {name!r}")
        if depth < 4:  # an alias naming another -c alias: bounded
            expanded = _Invocation("git", _split_words(value), inv.env, (), inv.layers)
            found = _judge_git(expanded, run, depth + 1)
            if found is not None:
                return Finding(
                    found.rule,
                    found.token,
                    f"the git alias {name!r} ({_show(value)!r}) runs: {found.message}",
                )
    return None


_CONFIG = _opts(
    "f",
    "global system local worktree add replace-all get get-all get-regexp get-urlmatch list "
    "unset unset-all remove-section rename-section edit null name-only show-origin "
    "show-scope bool int bool-or-int path expiry-date includes no-includes fixed-value all "
    "append",
    "file blob type default comment value",
    {"f": "file", "l": "list", "e": "edit", "z": "null"},
)
_CONFIG_NOT_SET = _set(
    "--get --get-all --get-regexp --get-urlmatch --list --unset --unset-all "
    "--remove-section --rename-section --edit"
)
_CONFIG_SUBCOMMANDS = _set("get list unset rename-section remove-section edit")


def _config_setting(args: Sequence[Word]) -> tuple[str, str] | None:
    """(key, value) that ``git config ARGS`` writes, if it writes one.  Options end at the
    key: a value may start with a dash (``alias.x '-c core.hooksPath=... commit'``)."""
    parsed = _parse_opts(args, _CONFIG, stop_at_operand=True)
    if parsed.operands and parsed.operands[0].text == "set":
        subcommand = _parse_opts(parsed.operands[1:], _CONFIG, stop_at_operand=True)
        subcommand.flags |= parsed.flags
        parsed = subcommand
    elif parsed.operands and parsed.operands[0].text in _CONFIG_SUBCOMMANDS:
        return None
    if parsed.has(*_CONFIG_NOT_SET) or not parsed.operands:
        return None
    if len(parsed.operands) == 1:  # "key=value": git refuses the key, but judge the intent
        key, eq, value = parsed.operands[0].text.partition("=")
        return (key, value) if eq else None
    return parsed.operands[0].text, parsed.operands[1].text


def _judge_git(inv: _Invocation, run: _Run, depth: int = 0) -> Finding | None:
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
    aliases: dict[str, str] = {}
    for option, setting in configs:
        key, _, value = setting.partition("=")
        if option == "--config-env" and key.lower() == "core.hookspath":
            value = "$" + value  # the value comes from a variable: not the repository's
        found = _judge_setting(f"git {option} {setting}", key, value, inv, run, depth)
        if found is not None:
            return found
        if key.lower().startswith("alias."):
            aliases[key[6:].lower()] = value
    env = _environment(inv, run)
    for origin, key, value in _env_configs(env):
        found = _judge_setting(origin, key, value, inv, run, depth)
        if found is not None:
            return found
    if i >= n:
        return None
    sub = args[i].text
    if sub == "config":
        written = _config_setting(args[i + 1 :])
        if written is None:
            return None
        key, value = written
        return _judge_setting(f"git config {key} {value}", key, value, inv, run, depth)
    alias = aliases.get(sub.lower())
    if alias is not None and not alias.startswith("!") and depth < 4:
        expanded = [*_split_words(alias), *args[i + 1 :]]
        return _judge_git(_Invocation("git", expanded, inv.env, (), inv.layers), run, depth + 1)
    if sub not in _GIT_NO_VERIFY_COMMANDS:
        return None
    flag, execs = _no_verify(sub, args[i + 1 :])
    if flag is not None:
        return Finding(
            "git-no-verify",
            flag,
            f"git {sub} {flag} skips the repository's hooks (token {flag!r})",
        )
    found = _hooks_off(env, f"git {sub}")
    if found is not None:
        return found
    for script in execs:
        found = run.nested(script, f"git {sub} --exec command")
        if found is not None:
            return found
    return None


def _hooks_off(env: dict[str, str], what: str) -> Finding | None:
    for name, values in _HOOKS_OFF.items():
        if env.get(name, "").lower() in values:
            setting = f"{name}={env[name]}"
            return Finding(
                "git-no-verify",
                setting,
                f"{setting} {what} switches the repository's hook manager off",
            )
    for name in _HOOKS_SKIPPED:
        if env.get(name, "").strip():
            setting = _show(f"{name}={env[name]}")
            return Finding(
                "git-no-verify",
                setting,
                f"{setting} {what} skips the named hooks ({_show(env[name])!r}); fix what they "
                f"report instead",
            )
    return None


def _rule_git(inv: _Invocation, run: _Run) -> Finding | None:
    return _judge_git(inv, run)


_HOOK_MANAGERS = _set("pre-commit lefthook husky overcommit")
_PACKAGE_RUNNERS = _set("npx pnpx bunx")


def _rule_uninstall(inv: _Invocation, run: _Run) -> Finding | None:
    """``pre-commit uninstall``, ``npx husky uninstall``, ``overcommit --uninstall``: the
    hook manager removes the hooks it installed."""
    words = [w.text for w in inv.args if not w.text.startswith("-") or w.text == "--uninstall"]
    name = inv.name
    if name in _PACKAGE_RUNNERS:
        if not words or words[0] not in _HOOK_MANAGERS:
            return None
        name, words = words[0], words[1:]
    if not words or words[0] not in ("uninstall", "--uninstall"):
        return None
    return Finding(
        "git-no-verify",
        f"{name} {words[0]}",
        f"{name} {words[0]} removes the repository's hooks: later commits skip them",
    )


# -- the installed hooks -------------------------------------------------------------------

_HOOK_FILE = re.compile(r"(?:^|/)\.git/hooks(?:/?$|/(?![^/]*\.sample$)[^/]+$)")
_NO_OP = _set("/dev/null /bin/true /usr/bin/true /bin/false /usr/bin/false true false")
_NO_OP_TEXT = re.compile(r"\s*(?:#![^\n]*\n)?\s*(?:exit(?:\s+0)?|true|:)?\s*$")


def _hook(run: _Run, words: Iterable[Word]) -> Word | None:
    """The first of ``words`` that names an installed hook (or the hooks directory)."""
    for word in words:
        if _HOOK_FILE.search(run.path(word)):
            return word
    return None


def _disabled(inv: _Invocation, word: Word, how: str) -> Finding:
    token = _show(word.text)
    return Finding(
        "git-no-verify",
        token,
        f"{inv.shown} {how} the git hook {token!r}: .git/hooks is not versioned, so the "
        f"change skips the hooks without showing in any diff",
    )


_REMOVE = _opts(long="force recursive dir interactive verbose", alias={"r": "recursive"})


def _rule_remove(inv: _Invocation, run: _Run) -> Finding | None:
    """``rm``/``unlink``/``truncate`` of a hook."""
    spec = _TRUNCATE if inv.name == "truncate" else _REMOVE
    word = _hook(run, _parse_opts(inv.args, spec).operands)
    return None if word is None else _disabled(inv, word, "removes or empties")


def _rule_move(inv: _Invocation, run: _Run) -> Finding | None:
    """``mv .git/hooks/pre-commit elsewhere``: the hook moved away."""
    parsed = _parse_opts(inv.args, _MV)
    sources = parsed.operands if parsed.value("--target-directory") else parsed.operands[:-1]
    word = _hook(run, sources)
    return None if word is None else _disabled(inv, word, "moves away")


def _rule_replace(inv: _Invocation, run: _Run) -> Finding | None:
    """``cp /dev/null .git/hooks/pre-commit``, ``ln -sf /bin/true ...``."""
    parsed = _parse_opts(inv.args, _LN if inv.name == "ln" else _CP)
    if len(parsed.operands) < 2 or parsed.value("--target-directory") is not None:
        return None
    if not all(w.text in _NO_OP for w in parsed.operands[:-1]):
        return None
    word = _hook(run, parsed.operands[-1:])
    return None if word is None else _disabled(inv, word, "replaces with a no-op")


_CHMOD_CLAUSE = re.compile(r"([ugoa]*)([-+=])([rwxXst]*)$")


def _chmod_drops_exec(mode: str) -> bool:
    """Whether ``mode`` leaves the owner without the execute bit (``-x``, ``644``)."""
    if mode.isdigit():
        return len(mode) >= 3 and int(mode[-3]) % 2 == 0
    for clause in mode.split(","):
        m = _CHMOD_CLAUSE.match(clause)
        if m is None or (m.group(1) and not set(m.group(1)) & {"u", "a"}):
            continue
        op, perms = m.group(2), m.group(3)
        if (op == "-" and "x" in perms) or (op == "=" and "x" not in perms):
            return True
    return False


def _rule_chmod(inv: _Invocation, run: _Run) -> Finding | None:
    """``chmod -x .git/hooks/pre-commit`` (a hook without its execute bit is skipped)."""
    words = [w for w in inv.args if not w.text.startswith("--")]
    modes = [w.text for w in words if w.text.startswith("-") and w.text[1:2] in "rwxXst"]
    operands = [w for w in words if not w.text.startswith("-")]
    mode = modes[0] if modes else (operands.pop(0).text if operands else "")
    if not _chmod_drops_exec(mode):
        return None
    word = _hook(run, operands)
    return None if word is None else _disabled(inv, word, f"({mode}) takes the execute bit from")


def _rule_no_op_hook(inv: _Invocation, run: _Run) -> Finding | None:
    """``echo 'exit 0' > .git/hooks/pre-commit``: a hook that does nothing."""
    writes = [r.target for r in inv.redirects if r.op in (">", ">|", ">>")]
    if not writes:
        return None
    text = "\n".join(w.text for w in inv.args if not w.text.startswith("-"))
    if inv.name == "printf":
        text = text.replace("\\n", "\n")
    if inv.name in ("echo", "printf") and not _NO_OP_TEXT.fullmatch(text):
        return None
    if inv.name == "cat" and (not inv.args or any(w.text not in _NO_OP for w in inv.args)):
        return None  # "cat > hook <<EOF" writes a hook; only "cat /dev/null > hook" empties one
    word = _hook(run, writes)
    return None if word is None else _disabled(inv, word, "writes a hook that does nothing into")


RULES: dict[str, tuple[Rule, ...]] = {
    "git": (_rule_git,),
    "rm": (_rule_remove,),
    "unlink": (_rule_remove,),
    "truncate": (_rule_remove,),
    "mv": (_rule_move,),
    "cp": (_rule_replace,),
    "ln": (_rule_replace,),
    "chmod": (_rule_chmod,),
    **dict.fromkeys((":", "true", "echo", "printf", "cat"), (_rule_no_op_hook,)),
    **dict.fromkeys(_HOOK_MANAGERS | _PACKAGE_RUNNERS, (_rule_uninstall,)),
}
