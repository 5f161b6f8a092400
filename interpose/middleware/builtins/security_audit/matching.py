"""Judging a normalized path against the rules: the allow-list, backup copies, globs
(what a pattern could match) and whole credential stores (directories)."""

from __future__ import annotations

import fnmatch
import functools
import posixpath
import re
from collections.abc import Callable

from .paths import default_home, normalize_path, possible_targets
from .rules import (
    SENSITIVE_RULES,
    SensitiveMatch,
    any_of,
    any_rule,
    match_and_search,
    may_end_with,
    rule_alternatives,
)

__all__ = [
    "match_exact",
    "match_normalized",
    "match_sensitive",
    "match_sensitive_glob",
    "match_sensitive_store",
    "sensitive_reason",
]

_ALLOWED_DIRS = frozenset({"node_modules", "test", "tests", "fixtures", "__fixtures__"})


def _allow_listed(normalized: str) -> bool:
    head, _, name = normalized.rpartition("/")
    if ".test." in name or name == "package-lock.json":
        return True
    return bool(head) and not _ALLOWED_DIRS.isdisjoint(head.split("/"))


_BACKUP_SUFFIX = re.compile(
    r"(?:~|\.(?:bak|backup|old|orig|save|sav|swp|swo|tmp|copy|prev|\d)|[-_](?:backup|old|copy))+$"
)
"""Suffixes editors and people add to a copy (``.env~``, ``id_rsa.bak``, ``.netrc.old``):
the copy holds what the original does."""


def match_normalized(normalized: str, *, write: bool, home: str | None) -> SensitiveMatch | None:
    """Judge ``normalized`` and every other file it may name (:func:`.possible_targets`:
    ``../../etc/shadow`` is also ``/etc/shadow``, ``.env::$data`` also ``.env``)."""
    for target in possible_targets(normalized):
        found = _match_copy(target, write=write, home=home)
        if found is not None:
            return found
    return None


def _match_copy(normalized: str, *, write: bool, home: str | None) -> SensitiveMatch | None:
    found = match_exact(normalized, write=write, home=home)
    if found is None and (m := _BACKUP_SUFFIX.search(normalized)) is not None:
        original = normalized[: m.start()]
        if original and not original.endswith("/"):
            found = match_exact(original, write=write, home=home)
            if found is not None and found.rule == "shell-profile":
                found = None  # a copy of a profile is not run at login: only its secrets count
    return found


_DOCUMENT = re.compile(r"\.(?:md|markdown|mdx|rst|adoc|asciidoc|html?|ipynb)$")
"""Documentation formats: ``docs/ssh/id_rsa.md`` is a page about a key, not a key.  Not
``.txt``: a key or a token pasted into ``id_rsa.txt`` or ``.env.txt`` is a copy of it."""


def match_exact(normalized: str, *, write: bool, home: str | None) -> SensitiveMatch | None:
    if _allow_listed(normalized):
        return None
    if not any_rule(normalized):  # most paths: no rule's, in two searches
        return _home_npmrc(normalized, home)
    if _DOCUMENT.search(normalized) is not None:
        # a page named like a secret is documentation, unless every entry of its
        # directory is sensitive (``~/.ssh/notes.md``, ``/etc/sudoers.d/readme.md``)
        head = normalized.rpartition("/")[0]
        return match_exact(f"{head}/{_ANY_ENTRY}", write=write, home=home) if head else None
    for rule in SENSITIVE_RULES:
        if rule.pattern.search(normalized) is None:
            continue
        if rule.except_ is not None and rule.except_.search(normalized) is not None:
            continue
        if not write and rule.read_ok is not None and rule.read_ok.search(normalized):
            continue
        return SensitiveMatch(rule.rule, rule.description)
    return _home_npmrc(normalized, home)


def _home_npmrc(normalized: str, home: str | None) -> SensitiveMatch | None:
    """The ``.npmrc`` of a home directory no rule names (a non-standard home)."""
    if not normalized.endswith("/.npmrc"):
        return None
    if normalized == _home_dir(home if home is not None else default_home()) + "/.npmrc":
        return SensitiveMatch("dev-credentials", "developer tool token")
    return None


def _home_dir(home: str) -> str:
    """A home directory, normalized (remembered: a process sees one or two, and one
    spelled with ``~`` or ``$HOME`` depends on the environment)."""
    return normalize_path(home) if "~" in home or "$" in home else _normalized(home)


@functools.lru_cache(maxsize=16)
def _normalized(path: str) -> str:
    return normalize_path(path)


def match_sensitive(
    path: str, *, write: bool = False, home: str | None = None
) -> SensitiveMatch | None:
    """Return why ``path`` is sensitive (after normalization and the allow-list), or None.

    ``write`` selects the stricter write rules (everything under ``.ssh/``).
    """
    return match_normalized(normalize_path(path, home=home), write=write, home=home)


_GLOB = re.compile(r"[*?\[]")
_SENSITIVE_NAMES = (
    ".env",
    ".env.local",
    ".env.production",
    ".env.prod",
    ".env.development",
    ".env.staging",
    ".envrc",
    "prod.env",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".ssh",
    ".aws",
    ".azure",
    ".oci",
    ".gnupg",
    ".kube",
    ".docker",
    ".password-store",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".my.cnf",
    ".vault-token",
    ".boto",
    ".s3cfg",
    "credentials",
    "credentials.json",
    "kubeconfig",
    "config",
    "config.json",
    "application_default_credentials.json",
    "service-account.json",
    "key.pem",
    "server.key",
    "private.key",
    "cert.p12",
    "cert.pfx",
    "keystore.jks",
    "app.keystore",
    "key.ppk",
    "passwords.kdbx",
    "shadow",
    "gshadow",
    "sudoers",
    "passwd",
    "master.passwd",
    "secrets",
    ".bashrc",
    ".bash_profile",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".config",
    "gcloud",
    "gh",
    "hosts.yml",
    "logins.json",
)
"""Names that a glob is tried against (``cat .e*`` can match ``.env``)."""
_MAX_GLOB_PATHS = 64
_WILDCARDS = re.compile(r"(?:[*?]|\[[^\]/]*\])+")


def match_sensitive_glob(pattern: str, *, home: str | None = None) -> SensitiveMatch | None:
    """Return why some path the shell glob ``pattern`` could match is sensitive, or None.

    A wildcard component that starts with literal text is tried against well-known
    secret names (``.e*`` matches ``.env``, ``id_*`` matches ``id_rsa``, ``~/.a*/credentials``
    matches ``~/.aws/credentials``), with the shell's rule that a wildcard does not match
    a leading dot.  One that starts with a wildcard says only how names end, so it is
    sensitive when *any* name ending so is: ``*.env``, ``*.pem`` and ``*.key`` are,
    ``*.json`` is not although ``credentials.json`` is one of the files it could match
    (listing every JSON file is not a hunt for that one).  A component that is only a
    wildcard (``~/.aws/*``) stands for any entry of its directory.  ``.env.ex*`` and
    ``*.md`` are not sensitive.
    """
    normalized = normalize_path(pattern, home=home)
    paths = [""]
    for part in normalized.split("/"):
        if not _GLOB.search(part):
            choices = [part]
        elif not part.strip("*?.") and not part.startswith("."):
            # "*", "*.*": any entry, judged as the directory itself
            choices = [""]
        elif part[0] in "*?[":  # "*.env": how names end; "x" stands for the rest
            choices = [_WILDCARDS.sub("x", part)]
        else:
            dotted = part.startswith(".")
            choices = [
                name
                for name in _SENSITIVE_NAMES
                if name.startswith(".") == dotted and fnmatch.fnmatchcase(name, part)
            ]
            if not choices:
                return None
        paths = [f"{p}/{c}" if p or c else c for p in paths for c in choices][:_MAX_GLOB_PATHS]
    if normalized.startswith("/"):
        paths = ["/" + p.lstrip("/") for p in paths]
    for path in paths:
        if "/.." in path:  # a relative pattern is tried from "/": "/../../etc/shadow"
            path = posixpath.normpath(path)
        found = match_normalized(path.rstrip("/") or "/", write=False, home=home)
        if found is not None:
            return found
    return None


_ANY_ENTRY = "\x00entry"
"""A name no real file has: a directory whose rule matches it covers every entry."""
_NOWHERE = "/\x00nowhere"
"""A directory no rule names: a secret name sensitive there is sensitive anywhere."""


def match_sensitive_store(path: str, *, home: str | None = None) -> SensitiveMatch | None:
    """Return why the directory ``path`` is a credential or key store as a whole, or None.

    A store is a directory whose every entry is sensitive (``~/.ssh``, ``~/.gnupg``,
    ``~/.aws``, ``~/.config/gcloud``, ``~/.local/share/keyrings``, ``~/.claude/credentials``)
    or one that holds a well-known secret name sensitive only because it lies there
    (``~/.kube`` for ``config``, ``~/.docker`` for ``config.json``, ``~/.config`` for
    ``gcloud``): the same rules :func:`match_sensitive` applies, read for directories.
    ``~/.cache`` is none (``credentials.json`` is sensitive in any directory), nor is a
    look-alike such as ``.aws-sam`` or ``.ssh-test``, nor an entry of a store whose every
    entry is sensitive (``~/.ssh/known_hosts.old``: a file, judged as one).  The command
    guard refuses deleting a store recursively.
    """
    normalized = normalize_path(path, home=home).rstrip("/")
    parent = normalized.rpartition("/")[0]
    if not normalized or (parent and _any_entry(parent, home)):
        return None  # an entry of a store (``~/.ssh/known_hosts.old``) is judged as a file
    found = _any_entry(normalized, home)
    if found is not None:
        return found
    for name, first, after in _located_names():
        inside = f"{normalized}/{name}"
        if first.match(inside) is not None or (after is not None and after.search(inside)):
            found = match_exact(inside, write=False, home=home)
        elif name == ".npmrc":  # a home's, unless allow-listed (tested last: it rarely is one)
            found = _home_npmrc(inside, home)
            if found is not None and _allow_listed(inside):
                found = None
        else:
            continue
        if found is not None:
            return found
    return None


def _any_entry(directory: str, home: str | None) -> SensitiveMatch | None:
    """Why every entry of ``directory`` is sensitive (:func:`match_exact` of an entry no
    rule names), or None; most directories are tested against only the rules that can
    match such an entry (:func:`_entry_rules`)."""
    entry = f"{directory}/{_ANY_ENTRY}"
    if not _entry_rules()(entry) or _allow_listed(entry):
        return None
    return match_exact(entry, write=False, home=home)


@functools.cache
def _entry_rules() -> Callable[[str], bool]:
    """:data:`.rules.any_rule` without the alternatives that cannot match a path ending
    in :data:`_ANY_ENTRY` (those ending in other literal text, ``\\.kube/config$``)."""
    return any_of([alt for alt in rule_alternatives() if may_end_with(alt, "/" + _ANY_ENTRY)])


@functools.cache
def _located_names() -> tuple[tuple[str, re.Pattern[str], re.Pattern[str] | None], ...]:
    """The well-known secret names sensitive only in some directories (``config``,
    ``config.json``, ``gcloud``), each with the rule alternatives that name it: a
    directory holds a sensitive one only if one of those matches (a name no rule spells
    out is sensitive through a directory whose every entry is, which the store check
    asks first), as :func:`.rules.match_and_search` gives them.  Checking a directory then
    costs one or two short searches per name, not a search of every rule per name.
    Computed once: the rules do not change."""
    located = []
    for name in _SENSITIVE_NAMES:
        if match_exact(f"{_NOWHERE}/{name}", write=False, home=None) is not None:
            continue  # sensitive anywhere: not what makes a directory a store
        spelled, end = re.escape(name), "/" + name
        naming = [a for a in rule_alternatives() if spelled in a and may_end_with(a, end)]
        if naming:
            located.append((name, *match_and_search(naming)))
        elif name == ".npmrc":  # a home's .npmrc (_home_npmrc)
            located.append((name, *match_and_search(())))
    return tuple(located)


def sensitive_reason(path: str, *, write: bool = False, home: str | None = None) -> str | None:
    """Return ``"<rule>: <description>"`` if ``path`` is sensitive, else None.

    >>> sensitive_reason("~/.ssh/id_rsa")
    'ssh-key: SSH private key or .ssh directory'
    >>> sensitive_reason("node_modules/dotenv/.env") is None
    True
    """
    found = match_sensitive(path, write=write, home=home)
    return None if found is None else str(found)
