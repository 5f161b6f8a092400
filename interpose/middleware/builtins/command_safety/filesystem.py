"""Rule family ``filesystem``: destruction of critical directories and writes to system files.

Rules (the rule id leads the block reason):

- ``fs-destruction``: recursive ``rm`` of ``/``, a top-level directory, a home directory,
  a system directory or its direct children, the working directory or its parents
  (``rm -rf .``, ``rm -rf *``, ``rm -rf ..``), a home directory's credential and key
  stores (``~/.ssh``, ``~/.gnupg``, ``~/.aws``, ``~/.kube``, ``~/.config/gcloud``...: the
  directories the file-tool guard's rules hold sensitive as wholes, see
  :func:`..security_audit.match_sensitive_store`) and ``~/.config``, ``~/.local``,
  ``~/.local/share`` as wholes (their children, ``~/.cache`` and a single file in a store,
  ``~/.ssh/known_hosts.old``, may go); broad globs (``/*``, ``~/*``, ``.*``) over
  those; ``find <such root> -delete`` or ``-exec rm -r``; ``mv`` of such a directory.
  A recursive ``rm`` or ``find -delete`` of a target known only at run time (``rm -rf
  "$X"``, ``find "$(cmd)" -delete``, a loop over unknown values) is refused *as unknown*
  unless a known prefix or a literal directory name bounds it (``./build/$X``,
  ``$ROOT/build``): see :func:`.paths.unknown_risk`.  Interpreter programs' delete calls
  (``shutil.rmtree``, ``fs.rmSync``...) are judged the same way (:mod:`.interpreters`).
  A plain (non-recursive) ``rm *`` in the working directory is allowed: it only removes
  files the agent can see and is routine; ``rm`` of ``/etc/*``-like globs is not.  The
  contents of ``/tmp``, ``/var/tmp`` and ``/dev/shm`` may be cleared.  ``find`` without a
  name filter means "every entry below the root", so ``find /var/log -mtime +30 -delete``
  is refused (conservatively); ``-name``/``-path``/``-empty``/``-size``/``-newer``
  filters narrow it.
- ``system-files``: any write (redirection, ``tee``, ``cp``/``mv``/``install``/``ln``
  into, ``sed -i``, ``perl -i``, ``gawk -i inplace``, ``dd of=``, ``truncate``, ``curl -o``,
  an editor such as ``vim``/``nano``/``ed``/``sudoedit``, ``patch``...) to ``/etc/passwd``,
  ``/etc/shadow``, ``/etc/gshadow``, ``/etc/group``, ``/etc/sudoers``, ``/etc/sudoers.d/*``.
- ``persistence``: the same writes to a file that runs later or decides who may log in
  (:data:`.paths._PERSISTENCE`): shell startup files (``~/.bashrc``, ``~/.bash_aliases``,
  ``~/.bashrc.d/*``, ``~/.zshenv``, ``~/.profile``, fish ``config.fish``...), desktop
  autostart, systemd unit directories (``/etc/systemd/system``, ``~/.config/systemd/user``),
  ``/etc/profile``, ``/etc/profile.d/*``, ``/etc/bash.bashrc``, ``/etc/environment``,
  ``/etc/ld.so.preload``, ``/etc/rc.local``, ``/etc/cron*``, ``/var/spool/cron``, PAM,
  and ``~/.ssh/authorized_keys``, ``config``, ``rc``, ``environment`` (not the system
  configuration everyday setup writes: ``sshd_config``, ``ld.so.conf.d``, ``modprobe.d``,
  udev rules, ``apt.conf.d``, ``limits.conf``);
  an archive or tree unpacked where such files live (``tar -x -C ~``, ``tar -C /etc -x``,
  ``unzip -d ~/.ssh``, ``rsync x ~/.ssh/``, ``cp -r dotfiles/. ~``, ``patch -d /etc``).
  A cron table installed with ``crontab`` is judged by its jobs where they are visible
  (:mod:`.remote_exec`: ``echo '* * * * * rm -rf ~' | crontab -`` is refused for
  ``rm -rf ~``); a local file (``crontab jobs.txt``) or an interactive edit
  (``crontab -e``) is allowed, as ``cat x.sh | bash`` is: local text is a reviewer's to read.
  Reading these files is judged by ``sensitive-read`` as the file-tool guard judges it
  (shell profiles are refused, ``~/.ssh/config`` and ``authorized_keys`` may be read);
  ``source ~/.bashrc`` is allowed.  Writes into a project (``>> ./notes.md``,
  ``tee build.log``, ``.git/hooks`` of a checkout: the project's own tooling) are allowed.
"""

from __future__ import annotations

from dataclasses import replace

from ..shell import SUBST, Word
from .fanout import substitute
from .find import find_plan
from .invocation import Invocation, verb_of
from .model import HOME, Finding
from .operands import (
    CP,
    CURL,
    INSTALL,
    LN,
    MV,
    PATCH,
    PERL,
    RM,
    RSYNC,
    SCP,
    SED,
    SEVEN_Z,
    SPONGE,
    TAR,
    TEE,
    TRUNCATE,
    UNZIP,
    WGET,
    Extract,
    awk_in_place,
    copy_targets,
    download_into,
    editor,
    in_place,
    keyed,
    operands_of,
    option_values,
)
from .options import opts, parse_opts
from .paths import display, persistence, show
from .reach import judge_write
from .run import Rule, Run

# -- findings helpers ---------------------------------------------------------------------------


def _destruction(verb: str, token: Word, hit: tuple[str, str]) -> Finding:
    path, why = hit
    return Finding(
        "fs-destruction",
        token.text,
        f"{verb} targets {path!r}, {why} (token {show(token.text)!r})",
    )


# -- fs-destruction -----------------------------------------------------------------------------


def _rule_rm(inv: Invocation, run: Run) -> Finding | None:
    parsed = inv.options(RM)
    recursive = parsed.has("--recursive")
    for word in parsed.operands:
        hit = run.doomed(word, recursive=recursive, unknown=recursive)
        if hit is not None:
            return _destruction(verb_of(inv, parsed), word, hit)
    return None


def _rule_mv(inv: Invocation, run: Run) -> Finding | None:
    parsed = parse_opts(inv.args, MV)
    sources = parsed.operands if parsed.has("--target-directory") else parsed.operands[:-1]
    for word in sources:
        hit = run.doomed(word, recursive=True, cwd_counts=False)
        if hit is not None:
            path, why = hit
            return Finding(
                "fs-destruction",
                word.text,
                f"{verb_of(inv, parsed)} moves {path!r}, {why} (token {show(word.text)!r})",
            )
    return None


def _rule_find(inv: Invocation, run: Run) -> Finding | None:
    plan = find_plan(inv.args)
    if plan.delete:
        for root, entry in zip(plan.candidates, plan.entries(), strict=False):
            hit = run.doomed(entry, recursive=True, unknown=True)
            if hit is not None:
                return _destruction("find -delete", root, hit)
    for action, argv in plan.execs:
        values = plan.entries() or [Word("{}")]
        for value in values:
            found = run.argv([substitute(w, "{}", value) for w in argv], f"find {action}")
            if found is not None:
                return found
    return None


WRITERS: dict[str, Extract] = {
    "tee": operands_of(TEE),
    "cp": copy_targets(CP),
    "mv": copy_targets(MV),
    "install": copy_targets(INSTALL),
    "ln": copy_targets(LN),
    "rsync": copy_targets(RSYNC),
    "scp": copy_targets(SCP),
    "dd": keyed("of"),
    "sed": in_place(SED, ("--expression", "--file"), "-i"),
    "perl": in_place(PERL, ("-e", "-E"), "-i"),
    "awk": awk_in_place,
    "truncate": operands_of(TRUNCATE),
    "shred": operands_of(opts("nsu", "force remove exact zero verbose", "iterations size")),
    "sponge": operands_of(SPONGE),
    "curl": lambda inv: (
        option_values(CURL, "--output")(inv) + download_into(CURL, "--output-dir")(inv)
    ),
    "wget": lambda inv: (
        option_values(WGET, "--output-document")(inv)
        + download_into(WGET, "--directory-prefix")(inv)
    ),
    "patch": lambda inv: _patch_targets(inv),
    "find": lambda inv: _find_outputs(inv),
    "scrub": operands_of(opts("pbsTX")),
    "srm": operands_of(opts()),
    "wipe": operands_of(opts("cClSxXRkp")),
    "sswap": operands_of(opts()),
    **dict.fromkeys(
        ("vim", "vi", "nvim", "gvim", "vim.basic", "vim.tiny", "ex"),
        editor("cSuUiTwWstq", frozenset({"-R", "-M"})),
    ),
    **dict.fromkeys(("nano", "pico", "rnano"), editor("TrYsoXfQ", frozenset({"-v", "--view"}))),
    **dict.fromkeys(("emacs", "emacsclient", "mg"), editor("lfLs", frozenset())),
    **dict.fromkeys(("ed", "red"), editor("p", frozenset())),
    **dict.fromkeys(
        ("joe", "jed", "micro", "mcedit", "kak", "hx", "helix", "gedit", "kate", "mousepad"),
        editor("", frozenset()),
    ),
    "sudoedit": editor("ugpCh", frozenset()),
}


_FIND_OUTPUTS = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})


def _find_outputs(inv: Invocation) -> list[Word]:
    """``find -fprint FILE`` (``-fprint0``, ``-fprintf FILE FORMAT``, ``-fls``) writes FILE."""
    args = inv.args
    return [args[k + 1] for k, w in enumerate(args[:-1]) if w.text in _FIND_OUTPUTS]


def _patch_targets(inv: Invocation) -> list[Word]:
    """``patch [ORIGFILE [PATCHFILE]]`` changes ORIGFILE (or writes ``-o FILE``)."""
    parsed = parse_opts(inv.args, PATCH)
    if parsed.has("--dry-run"):
        return []
    output = parsed.value("--output")
    return [output] if output is not None else parsed.operands[:1]


def _rule_writes(inv: Invocation, run: Run) -> Finding | None:
    extract = WRITERS.get(inv.name)
    if extract is None:
        return None
    for word in extract(inv):
        found = judge_write(run, word, inv.name)
        if found is not None:
            return found
    return None


# -- persistence: trees unpacked over startup files -------------------------------

_PERSISTENCE_SAMPLES = (
    f"{HOME}/.bashrc",
    f"{HOME}/.ssh/authorized_keys",
    f"{HOME}/.config/autostart/x.desktop",
    f"{HOME}/.config/systemd/user/x.service",
    f"{HOME}/.config/fish/config.fish",
    "/root/.bashrc",
    "/etc/profile",
    "/etc/cron.d/x",
    "/etc/systemd/system/x.service",
    "/etc/xdg/autostart/x.desktop",
    "/var/spool/cron/x",
)
"""One file of each persistence location: a tree unpacked into a directory above one of
them may replace it (``/usr`` and ``/usr/local`` are install prefixes and stay allowed)."""


_ITSELF = "\x00itself"
"""Marks a copy target that receives a named tree (``cp -r proj ~/``: ``~/proj``): only a
target that is itself a persistence directory matters then (``cp -r keys ~/.ssh``)."""


def _unpack_risk(path: str, *, itself: bool = False) -> str | None:
    """Why unpacking an archive or tree of unknown contents into ``path`` plants code."""
    if path.startswith("/home/") and path.count("/") >= 2:  # every home is alike
        user_home = "/".join(path.split("/")[:3])
        path = HOME + path[len(user_home) :]
    if persistence(path) or path.rstrip("/").endswith("/.ssh"):
        return "a directory whose files run at login, at boot or on a schedule"
    if itself:
        return None
    inside = path.rstrip("/") + "/"
    if path == "/" or any(sample.startswith(inside) for sample in _PERSISTENCE_SAMPLES):
        return "a directory holding startup, login or scheduler files"
    return None


def _unpacked_into(inv: Invocation) -> Word | None:
    """The directory an archive or a tree is written into, when ``inv`` writes one."""
    name = inv.name
    if name in ("tar", "bsdtar", "gtar"):
        args = list(inv.args)
        if args and not args[0].text.startswith("-") and args[0].text.isalpha():
            args[0] = Word("-" + args[0].text)  # old style: tar xzf x.tgz
        parsed = parse_opts(args, TAR)
        if not parsed.has("-x", "--extract", "--get"):
            return None
        values = [w for flag, w in parsed.values if flag == "--directory"]
        return values[-1] if values else Word(".")
    if name == "unzip":
        parsed = parse_opts(inv.args, UNZIP)
        if parsed.has("-l", "-t", "-v", "-Z", "-p", "-z"):
            return None
        return parsed.value("-d") or Word(".")
    if name == "7z":
        parsed = parse_opts(inv.args, SEVEN_Z)
        if not parsed.operands or parsed.operands[0].text not in ("x", "e"):
            return None
        return parsed.value("-o") or Word(".")
    if name in ("rsync", "cp"):
        parsed = parse_opts(inv.args, RSYNC if name == "rsync" else CP)
        if parsed.has("-n", "--dry-run"):
            return None
        if name == "cp" and not parsed.has("--recursive", "-a", "--archive"):
            return None
        target = parsed.value("--target-directory")
        sources = parsed.operands if target is not None else parsed.operands[:-1]
        target = target or (parsed.operands[-1] if len(parsed.operands) > 1 else None)
        if target is None:
            return None
        if any(_spills(src.text, rsync=name == "rsync") for src in sources):
            return target  # the source's contents land in the target, dotfiles included
        return replace(target, text=target.text.rstrip("/") + "/" + _ITSELF)
    if name == "patch":
        parsed = parse_opts(inv.args, PATCH)
        if parsed.has("--dry-run") or parsed.operands or parsed.value("--output"):
            return None  # a named file is judged as a write
        return parsed.value("--directory") or Word(".")
    return None


def _spills(source: str, *, rsync: bool) -> bool:
    """Whether copying ``source`` puts its *contents* (names the command does not show)
    into the target: ``dir/.``, ``dir/.*``, and ``dir/`` for rsync; ``cp -r proj ~/``
    makes ``~/proj``, which the writers' table judges by name."""
    base = source.rstrip("/").rsplit("/", 1)[-1]
    return (
        base in (".", "")
        or (base.startswith(".") and "*" in base)
        or (rsync and source.endswith("/"))
    )


def _rule_unpack(inv: Invocation, run: Run) -> Finding | None:
    target = _unpacked_into(inv)
    if target is None or ":" in target.text.split("/", 1)[0]:  # host:dir is remote
        return None
    itself = target.text.endswith(_ITSELF)
    if itself:
        target = replace(target, text=target.text[: -len(_ITSELF) - 1] or "/")
    path = run.path(target)
    if "$" in path or SUBST in path:
        return None
    why = _unpack_risk(path, itself=itself)
    if why is None:
        return None
    return Finding(
        "persistence",
        target.text,
        f"{inv.shown} writes files it does not name into {show(display(path))!r}, {why} "
        f"(token {show(target.text)!r})",
    )


RULES: dict[str, tuple[Rule, ...]] = {
    "rm": (_rule_rm,),
    # secure deleters take rm's options and leave nothing to recover
    **dict.fromkeys(("srm", "wipe"), (_rule_rm,)),
    "mv": (_rule_mv,),
    "find": (_rule_find,),
    **dict.fromkeys(
        ("tar", "bsdtar", "gtar", "unzip", "7z", "rsync", "cp", "patch"), (_rule_unpack,)
    ),
}
GENERIC: tuple[Rule, ...] = (_rule_writes,)
