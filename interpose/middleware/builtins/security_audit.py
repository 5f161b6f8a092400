"""``builtin:security-audit``: keep file tools away from credentials and auth files.

The guard runs before ``read``, ``write``, ``edit`` and ``apply_patch``.  It collects every
path the call touches (``path``, ``file_path``, ``file``, ``target_file``,
``notebook_path``, ``filepath``, ``filename``, every element of a ``paths`` or
``file_paths`` list; for ``apply_patch`` every file
named in the patch, in both the ``*** Begin Patch`` format and unified/git diffs, headers
read through any indentation), normalizes each one and blocks the call when one is
sensitive.  A path argument that is not text is refused (``unparseable``), never skipped.

Normalization comes first, so spelling cannot dodge a rule: ``~``, ``~user``, ``$HOME``
and ``${HOME}`` are expanded, backslashes become ``/``, ``file://`` and repeated slashes
are dropped, ``/proc/<pid>/root`` (a view of ``/``) and ``/proc/<pid>/cwd`` prefixes are
stripped, ``.`` and ``..`` are resolved lexically (``node_modules/../.env`` is ``.env``)
and the result is lower-cased for matching.  Only then is the allow-list consulted, so
it cannot be reached through ``..``.

Sensitive paths (the rule ids appear in block reasons):

- ``ssh-key``: ``id_rsa``/``id_dsa``/``id_ecdsa``/``id_ed25519`` (and ``_sk``) anywhere,
  host keys, and everything under ``.ssh/``.  Reading ``*.pub``, ``known_hosts``,
  ``authorized_keys`` and ``config`` is allowed (public material); writing anything under
  ``.ssh/`` is not (``authorized_keys`` is persistence, ``config`` can run commands
  through ``ProxyCommand``).
- ``cloud-credentials``: ``.aws/``, ``.azure/``, ``.oci/``, ``.config/gcloud/``,
  ``application_default_credentials.json``, ``credentials.json``, ``*service-account*.json``,
  ``kubeconfig*``, ``.kube/config``, ``.docker/config.json``, ``.netrc``, ``.boto``,
  ``.s3cfg``, terraform ``credentials.tfrc.json``, ``.vault-token``; container and
  cluster secrets: ``/run/secrets/``, ``/var/run/secrets/`` (the Kubernetes
  service-account token; its ``namespace`` and ``ca.crt`` are not secret),
  ``/etc/kubernetes/admin.conf`` and the other component kubeconfigs,
  ``/etc/rancher/k3s/k3s.yaml``.
- ``dev-credentials``: ``.git-credentials``, ``.config/gh/hosts.yml``, ``.pypirc``,
  ``.gem/credentials``, ``.cargo/credentials*``, ``.config/git/credentials``,
  ``.pgpass``, ``.my.cnf``/``.mylogin.cnf``, and ``.npmrc`` directly in a home
  directory (a project's ``.npmrc`` usually holds registry settings, not tokens).
- ``keyring``: ``.gnupg/``, ``.password-store/``, desktop keyrings, macOS keychains,
  KeePass databases, browser password stores (Firefox ``logins.json``/``key4.db``,
  Chromium-family ``Login Data``).
- ``system-auth``: ``/etc/passwd``, ``/etc/shadow``, ``/etc/gshadow``, ``/etc/sudoers``,
  ``/etc/sudoers.d/``, ``/etc/master.passwd`` (also under ``/private/etc``).  Reading
  ``/etc/passwd`` is allowed: it is world-readable and holds no password hash.
- ``env-file``: ``.env``, ``.env.*``, ``.env-*``, ``.env_*``, ``.env~``, ``*.env``,
  ``.envrc``, ``/proc/<pid>/environ``, except the templates
  ``.env.example``/``.sample``/``.template``/``.dist``/``.defaults``/``.schema`` (with
  ``.``, ``-`` or ``_``, after an environment name too: ``.env.local.example``; and their
  backups).
- ``key-material``: ``*.pem``, ``*.key``, ``*.p12``, ``*.pfx``, ``*.jks``, ``*.keystore``,
  ``*.ppk``, ``*.p8``; a ``.pem`` whose name says certificate or public key (``cert``,
  ``chain``, ``bundle``, ``ca``, ``pub``, ``crt``, ``csr``) and not key/priv/secret is
  public material (``cert.pem``, ``fullchain.pem``; ``ca-key.pem`` stays sensitive).
- ``ai-tool-auth``: Claude, Codex, GitHub Copilot, Qwen/MiniMax/Gemini
  (``oauth_creds.json``), gogcli, OpenClaw/Clawdbot credentials, ``auth-profiles.json``
  and WhatsApp session credentials.
- ``persistence`` (writes only): other files that run at login, at boot or on a
  schedule, or decide who may log in (:data:`PERSISTENCE_PATHS`): ``~/.bash_aliases``,
  ``~/.bashrc.d/``, autostart entries, systemd unit directories, ``/etc/profile.d/``,
  ``/etc/environment``, ``/etc/ld.so.preload``, ``/etc/cron*``, PAM...; checked after
  every other rule.
- ``shell-profile``: ``.profile``, ``.bashrc``, ``.bash_profile``, ``.bash_login``,
  ``.bash_logout``, ``.zshrc``, ``.zprofile``, ``.zshenv``, ``.zlogin``, ``.zlogout``,
  ``.config/fish/config.fish`` (they hold exported tokens, and writing them is
  persistence).

A backup or editor copy is what it copies: a suffix ``~``, ``.bak``, ``.old``, ``.orig``,
``.save``, ``.swp``, ``.tmp``, ``.1``, ``-backup``... is looked through (``id_rsa.bak``,
``.netrc.old``, ``/etc/shadow.bak``) -- except for shell profiles, whose copies are
not run at login (``~/.bashrc.orig`` is an ordinary file).

Allowed even when a rule matches: anything with a ``node_modules``, ``test``, ``tests``,
``fixtures`` or ``__fixtures__`` *directory* component, file names containing ``.test.``,
and ``package-lock.json``.  Allow-list entries match whole components:
``node_modules_evil/.env`` and ``my-fixtures/.env`` stay blocked.

Limits, inherent to judging a path string: symlinks and hard links are not resolved (a
link named ``notes.txt`` pointing at ``~/.ssh/id_rsa`` passes); relative paths are judged
without the tool's working directory (``credentials`` read from inside ``~/.aws`` is not
recognized, though ``id_rsa`` or ``.env`` are recognized anywhere); environment variables
other than ``HOME`` are not expanded; case-insensitive matching may block a file on a
case-sensitive file system whose name only differs in case.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from ...errors import ConfigError
from ...pipeline.payloads import ToolBeforeInput, ToolBeforeOutput

__all__ = [
    "SENSITIVE_RULES",
    "SecurityAudit",
    "SensitiveMatch",
    "match_sensitive",
    "match_sensitive_glob",
    "match_sensitive_store",
    "normalize_path",
    "patch_paths",
    "resolve_path",
    "sensitive_reason",
]


# -- normalization --------------------------------------------------------------------------

_HOME_VAR = re.compile(r"\$\{HOME\}|\$HOME(?![A-Za-z0-9_])")
_TILDE_USER = re.compile(r"~([A-Za-z_][A-Za-z0-9_.-]*)?(?=/|$)")
_SLASHES = re.compile(r"/{2,}")
_PROC_ROOT = re.compile(r"^/proc/(?:self|thread-self|\d+)/root(?=/|$)")
_PROC_CWD = re.compile(r"^/proc/(?:self|thread-self|\d+)/cwd(?:/|$)")


def _default_home() -> str:
    return os.path.expanduser("~")


def resolve_path(path: str, *, home: str | None = None) -> str:
    """Lexically normalize ``path`` without changing its case.

    Expands ``~``, ``~user``, ``$HOME`` and ``${HOME}`` (``home`` defaults to the current
    user's home), turns backslashes into ``/``, drops ``file://`` and repeated slashes,
    strips ``/proc/<pid>/root`` and ``/proc/<pid>/cwd`` prefixes and resolves ``.`` and
    ``..`` the way :func:`posixpath.normpath` does (relative paths stay relative).
    """
    p = path.strip().replace("\\", "/")
    if p.startswith("file://"):
        p = p[7:]
    if "$" in p:
        p = _HOME_VAR.sub(lambda _m: home if home is not None else _default_home(), p)
    if p.startswith("~"):
        m = _TILDE_USER.match(p)
        if m is not None:
            user = m.group(1)
            if user is None:
                base = home if home is not None else _default_home()
            else:
                base = "/root" if user == "root" else f"/home/{user}"
            p = base + p[m.end() :]
    if "//" in p:
        p = _SLASHES.sub("/", p)
    p = _strip_proc(p)  # before normpath: "/proc/1/root/.." is "/", not "/proc/1"
    p = posixpath.normpath(p) if p else "."
    if p.startswith("//"):  # normpath keeps a leading "//" (POSIX); we do not
        p = "/" + p.lstrip("/")
    return _strip_proc(p) if p.startswith("/proc/") else p


def _strip_proc(p: str) -> str:
    """Drop ``/proc/<pid>/root`` (a view of ``/``) and ``/proc/<pid>/cwd`` prefixes."""
    while p.startswith("/proc/"):
        if (m := _PROC_ROOT.match(p)) is not None:
            p = posixpath.normpath("/" + p[m.end() :].lstrip("/"))
        elif (m := _PROC_CWD.match(p)) is not None:
            p = posixpath.normpath(p[m.end() :].lstrip("/") or ".")
        else:
            break
    return p


def normalize_path(path: str, *, home: str | None = None) -> str:
    """:func:`resolve_path`, lower-cased: the form every rule and allow entry matches."""
    return resolve_path(path, home=home).lower()


# -- rules ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SensitiveMatch:
    """Why a path is sensitive: the rule id and a short description."""

    rule: str
    description: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.description}"


@dataclass(frozen=True, slots=True)
class _Rule:
    rule: str
    description: str
    pattern: re.Pattern[str]
    read_ok: re.Pattern[str] | None = None  # matches what may still be read (not written)
    except_: re.Pattern[str] | None = None  # matches what is never sensitive for this rule


def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{a})" for a in alternatives))


_C = r"(?:^|/)"  # start of a path component
_HOMEISH = r"^(?:/home/[^/]+|/root|/users/[^/]+)"

_HOME_DIR = r"(?:/home/[^/]+|/root|/users/[^/]+)"
PERSISTENCE_PATHS = re.compile(
    # per-user: shell startup files, login and session hooks, SSH login control
    r"^" + _HOME_DIR + r"/(?:"
    r"\.(?:profile|bashrc|bash_profile|bash_login|bash_logout|bash_aliases|zshrc|zprofile"
    r"|zshenv|zlogin|zlogout|kshrc|mkshrc|cshrc|tcshrc|login|xprofile|xinitrc|xsession"
    r"|xsessionrc|pam_environment)$"
    r"|\.(?:bashrc|zshrc|profile)\.d(?:/|$)"
    r"|\.oh-my-zsh/custom(?:/|$)"
    r"|\.config/fish/(?:config\.fish$|conf\.d(?:/|$)|functions(?:/|$))"
    r"|\.config/(?:autostart|environment\.d)(?:/|$)"
    r"|\.config/systemd/user(?:/|$)"
    r"|\.local/share/systemd/user(?:/|$)"
    r"|\.ssh/(?:authorized_keys2?|config|rc|environment)$"
    r")"
    # system-wide: login shells, the dynamic loader's preload list, boot and schedulers,
    # PAM.  Left out on purpose, because everyday setup writes them (a false refusal there
    # costs more than it saves): sshd_config, ld.so.conf.d, modprobe.d, udev rules,
    # apt.conf.d, security/limits.conf, sysctl.d
    r"|^(?:/private)?/etc/(?:"
    r"profile$|profile\.d(?:/|$)|bash\.bashrc$|bashrc$|zshrc$|zprofile$|zshenv$|zlogin$"
    r"|zsh/|csh\.(?:cshrc|login)$|fish/|environment$|ld\.so\.preload$"
    r"|rc\.local$|rc[0-6s]?\.d/|init\.d/|cron[^/]*(?:/|$)|anacrontab$|systemd/(?:system|user)"
    r"(?:\.conf)?(?:/|$)|xdg/autostart(?:/|$)|pam\.d(?:/|$)|security/pam_env\.conf$"
    r"|sudo\.conf$|doas\.conf$|update-motd\.d(?:/|$)|launchd\.conf$)"
    r"|^/var/spool/cron(?:/|$)|^/var/at(?:/|$)|^/var/spool/at(?:/|$)"
    r"|^(?:/usr)?/lib/systemd/(?:system|user)(?:/|$)"
    r"|^(?:" + _HOME_DIR + r")?/library/(?:launchagents|launchdaemons)(?:/|$)"
)
"""Files (and directories whose files are) run at login, at boot, by a scheduler or by
the dynamic loader, or that decide who may log in: a write there plants code that runs
later, outside the call the guard judged (rule ``persistence``, for writes only; reads
are judged by the other rules).  The command guard uses the same list."""


SENSITIVE_RULES: tuple[_Rule, ...] = (
    _Rule(
        "ssh-key",
        "SSH private key or .ssh directory",
        _rx(
            _C + r"id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?(?:(?![^/]*\.pub$)[._~-][^/.]*)?$",
            _C + r"ssh_host_[^/]*_key$",
            _C + r"\.ssh(?:/|$)",
        ),
        read_ok=re.compile(
            _C + r"\.ssh/(?:[^/]+\.pub|known_hosts(?:\.old)?|authorized_keys2?|config)$"
        ),
    ),
    _Rule(
        "ai-tool-auth",
        "AI tool login token",
        _rx(
            _C + r"\.claude/\.credentials\.json$",
            _C + r"\.claude/credentials(?:/|$)",
            _C + r"\.codex/auth\.json$",
            _C + r"\.config/github-copilot/(?:hosts|apps)\.json$",
            _C + r"github-copilot\.token\.json$",
            _C + r"oauth_creds\.json$",
            _C + r"gogcli/credentials\.json$",
            _C + r"\.(?:openclaw|clawdbot)/credentials(?:/|$)",
            _C + r"auth-profiles\.json$",
            _C + r"whatsapp/[^/]+/creds\.json$",
        ),
    ),
    _Rule(
        "cloud-credentials",
        "cloud or cluster credentials",
        _rx(
            _C + r"\.(?:aws|azure|oci)(?:/|$)",
            _C + r"\.config/gcloud(?:/|$)",
            _C + r"application_default_credentials\.json$",
            _C + r"credentials\.json$",
            _C + r"[^/]*service[-_]?account[^/]*\.json$",
            _C + r"kubeconfig(?:[._-][^/]*)?$",
            _C + r"\.kube/config$",
            _C + r"\.docker/config\.json$",
            _C + r"(?:\.|_)netrc$",
            _C + r"\.(?:boto|s3cfg)$",
            _C + r"credentials\.tfrc\.json$",
            # Everything under /run/secrets is secret (Docker secrets, the service-account
            # token) except the service account's namespace name and its public CA cert.
            r"^(?:/var)?/run/secrets(?:/|$)(?!(?:.*/)?serviceaccount/(?:namespace|ca\.crt)$)",
            r"^/etc/kubernetes/(?:admin|super-admin|kubelet|controller-manager|scheduler)\.conf$",
            r"^/etc/rancher/k3s/k3s\.yaml$",
            _C + r"\.vault-token$",
        ),
    ),
    _Rule(
        "dev-credentials",
        "developer tool token",
        _rx(
            _C + r"\.git-credentials$",
            _C + r"\.config/gh/hosts\.yml$",
            _C + r"\.pypirc$",
            _C + r"\.gem/credentials$",
            _C + r"\.cargo/credentials(?:\.toml)?$",
            _HOMEISH + r"/\.npmrc$",
            _C + r"\.config/git/credentials$",
            _C + r"\.(?:pgpass|my\.cnf|mylogin\.cnf)$",
        ),
    ),
    _Rule(
        "keyring",
        "keyring or password store",
        _rx(
            _C + r"\.(?:gnupg|password-store)(?:/|$)",
            _C + r"\.local/share/keyrings(?:/|$)",
            _C + r"library/keychains(?:/|$)",
            r"\.(?:keychain|keychain-db|kdbx)$",
            _C + r"\.mozilla/firefox/[^/]+/(?:logins\.json|key[34]\.db)$",
            _C + r"(?:google-chrome|chromium|brave-browser|microsoft-edge)[^/]*/[^/]+/login data$",
        ),
    ),
    _Rule(
        "system-auth",
        "system account or sudo database",
        _rx(
            r"^(?:/private)?/etc/(?:passwd|shadow|gshadow|master\.passwd|sudoers)-?$",
            r"^(?:/private)?/etc/sudoers\.d(?:/|$)",
            r"^/etc/security/opasswd$",
        ),
        # world-readable account lists without secrets (getent shows the same): reading
        # them is routine; the hashes live in shadow/master.passwd, which stay refused
        read_ok=re.compile(r"^(?:/private)?/etc/passwd-?$"),
    ),
    _Rule(
        "env-file",
        "environment file with secrets",
        _rx(
            _C + r"\.env(?:[._~-][^/]*)?$",
            _C + r"[^/]+\.env$",
            _C + r"\.envrc$",
            r"^/proc/[^/]*/environ$",  # a process's environment: its tokens
        ),
        except_=re.compile(
            _C + r"(?:\.env(?:[._-][^/]*)?[._-](?:example|sample|template|dist|defaults|schema"
            r"|tpl|tmpl)(?:[._~-][^/]*)?|(?:example|sample|template)\.env)$"
        ),
    ),
    _Rule(
        "key-material",
        "private key or keystore file",
        re.compile(r"\.(?:pem|key|p12|pfx|jks|keystore|ppk|p8)$"),
        # a .pem named as a certificate or a public key (cert.pem, fullchain.pem, ca.pem,
        # public.pem) holds public material; a name that says key/priv/secret does not
        except_=re.compile(
            r"(?:^|/)(?![^/]*(?:priv|secret|(?<!pub)key))[^/]*"
            r"(?:cert|chain|bundle|(?<![a-z])ca(?![a-z])|pub|crt|csr)[^/]*\.pem$"
        ),
    ),
    _Rule(
        "shell-profile",
        "shell startup file",
        _rx(
            _C + r"\.(?:profile|bashrc|bash_profile|bash_login|bash_logout)$",
            _C + r"\.(?:zshrc|zprofile|zshenv|zlogin|zlogout)$",
            _C + r"\.config/fish/config\.fish$",
        ),
    ),
    _Rule(
        "persistence",
        "file run at login, at boot or on a schedule",
        PERSISTENCE_PATHS,
        read_ok=re.compile(""),  # only writing plants code; reading is for the rules above
    ),
)
"""The built-in sensitive-path rules, checked in order (first match wins)."""

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


def _match_normalized(normalized: str, *, write: bool, home: str | None) -> SensitiveMatch | None:
    found = _match_exact(normalized, write=write, home=home)
    if found is None and (m := _BACKUP_SUFFIX.search(normalized)) is not None:
        original = normalized[: m.start()]
        if original and not original.endswith("/"):
            found = _match_exact(original, write=write, home=home)
            if found is not None and found.rule == "shell-profile":
                found = None  # a copy of a profile is not run at login: only its secrets count
    return found


def _match_exact(normalized: str, *, write: bool, home: str | None) -> SensitiveMatch | None:
    if _allow_listed(normalized):
        return None
    for rule in SENSITIVE_RULES:
        if rule.pattern.search(normalized) is None:
            continue
        if rule.except_ is not None and rule.except_.search(normalized) is not None:
            continue
        if not write and rule.read_ok is not None and rule.read_ok.search(normalized):
            continue
        return SensitiveMatch(rule.rule, rule.description)
    if normalized.endswith("/.npmrc"):  # home-level .npmrc for a non-standard home
        home_dir = normalize_path(home if home is not None else _default_home())
        if normalized == home_dir + "/.npmrc":
            return SensitiveMatch("dev-credentials", "developer tool token")
    return None


def match_sensitive(
    path: str, *, write: bool = False, home: str | None = None
) -> SensitiveMatch | None:
    """Return why ``path`` is sensitive (after normalization and the allow-list), or None.

    ``write`` selects the stricter write rules (everything under ``.ssh/``).
    """
    return _match_normalized(normalize_path(path, home=home), write=write, home=home)


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
        found = _match_normalized(path.rstrip("/") or "/", write=False, home=home)
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
    if not normalized or (
        parent and _match_exact(f"{parent}/{_ANY_ENTRY}", write=False, home=home)
    ):
        return None  # an entry of a store (``~/.ssh/known_hosts.old``) is judged as a file
    found = _match_exact(f"{normalized}/{_ANY_ENTRY}", write=False, home=home)
    if found is not None:
        return found
    for name in _SENSITIVE_NAMES:
        inside = _match_exact(f"{normalized}/{name}", write=False, home=home)
        if (
            inside is not None
            and _match_exact(f"{_NOWHERE}/{name}", write=False, home=home) is None
        ):
            return inside
    return None


def sensitive_reason(path: str, *, write: bool = False, home: str | None = None) -> str | None:
    """Return ``"<rule>: <description>"`` if ``path`` is sensitive, else None.

    >>> sensitive_reason("~/.ssh/id_rsa")
    'ssh-key: SSH private key or .ssh directory'
    >>> sensitive_reason("node_modules/dotenv/.env") is None
    True
    """
    found = match_sensitive(path, write=write, home=home)
    return None if found is None else str(found)


# -- patches --------------------------------------------------------------------------------

_ENVELOPE_HEADER = re.compile(
    r"^[ \t]*\*\*\* (?:(?:Add|Update|Delete) File|Move to):[ \t]*(.+?)[ \t]*$", re.MULTILINE
)
_GIT_HEADER = re.compile(r'^diff --git (?:"((?:[^"\\]|\\.)*)"|(\S+)) (?:"((?:[^"\\]|\\.)*)"|(.+))$')
_GIT_EXTENDED = re.compile(r"^(?:rename|copy) (?:from|to) (.+)$")


def _strip_diff_path(raw: str, *, prefixed: bool) -> str | None:
    path = raw.split("\t", 1)[0].strip()
    if len(path) >= 2 and path[0] == path[-1] == '"':
        path = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    if not path or path == "/dev/null":
        return None
    if prefixed and path[:2] in ("a/", "b/"):
        path = path[2:]
    return path


def _diff_header(lines: Sequence[str], i: int) -> bool:
    """``--- old`` immediately followed by ``+++ new`` (either line of the pair)."""
    line = lines[i]
    if line.startswith("--- "):
        return i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
    return line.startswith("+++ ") and i > 0 and lines[i - 1].startswith("--- ")


def patch_paths(patch: str) -> list[str]:
    """Every file a patch touches, in order, without duplicates.

    Understands the ``*** Begin Patch`` envelope (``Add File``, ``Update File``,
    ``Delete File``, ``Move to``) and unified/git diffs (``--- a/p`` followed by
    ``+++ b/p``, ``diff --git a/p b/p``, ``rename``/``copy from``/``to``); ``/dev/null``
    is ignored and the ``a/``/``b/`` prefixes are dropped.
    """
    found: dict[str, None] = {}
    for header in _ENVELOPE_HEADER.finditer(patch):
        found[header.group(1)] = None
    # headers may be indented (a patch pasted inside a message): tools that apply it
    # strip the indentation, so the guard reads through it too
    lines = [line.lstrip(" \t") for line in patch.splitlines()]
    for i, line in enumerate(lines):
        candidates: list[str | None] = []
        if _diff_header(lines, i):
            candidates.append(_strip_diff_path(line[4:], prefixed=True))
        elif line.startswith("diff --git "):
            if (m := _GIT_HEADER.match(line)) is not None:
                first = m.group(1) if m.group(1) is not None else m.group(2)
                second = m.group(3) if m.group(3) is not None else m.group(4)
                candidates += [
                    _strip_diff_path(f'"{first}"' if m.group(1) else first, prefixed=True),
                    _strip_diff_path(f'"{second}"' if m.group(3) else second, prefixed=True),
                ]
        elif (extended := _GIT_EXTENDED.match(line)) is not None:
            candidates.append(_strip_diff_path(extended.group(1), prefixed=False))
        for path in candidates:
            if path is not None:
                found[path] = None
    return list(found)


# -- the interceptor ------------------------------------------------------------------------


def _compile(patterns: Sequence[str], what: str) -> tuple[re.Pattern[str], ...]:
    compiled: list[re.Pattern[str]] = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigError(f"security-audit: invalid {what} regex {pattern!r}: {exc}") from None
    return tuple(compiled)


_CACHED_CHARS = 4096
"""The longest path whose verdict a guard remembers (PATH_MAX): bounds the cache's memory."""


class SecurityAudit:
    """``builtin:security-audit``: block file tools that touch sensitive paths.

    Args:
        extra_deny: regexes (``re.search``) over the normalized, lower-cased path; a match
            blocks with rule ``extra-deny``.
        allow: regexes over the normalized path; a match exempts the path from every rule
            (built-in and ``extra_deny``).
        home: the home directory ``~`` and ``$HOME`` stand for; default the current
            user's (``$HOME``, read at every check).

    Block reason: ``security-audit: <rule>: '<path>' (normalized '<normalized>')``.  A
    path argument that is not text (``{"path": 3}``, ``{"paths": ["a", None]}``) is refused
    with ``security-audit: unparseable: <which key and why>``.

    Each guard remembers its verdicts on the last ``CACHE_SIZE`` distinct checks (path of
    up to 4,096 characters, read or write, and ``$HOME`` when ``home`` is unset), least
    recently used first out.

    Raises:
        ConfigError: a regex of ``extra_deny`` or ``allow`` does not compile.
    """

    tools: ClassVar[frozenset[str]] = frozenset({"read", "write", "edit", "apply_patch"})
    """The (normalized) tools this guard is meant for."""

    PATH_KEYS: ClassVar[tuple[str, ...]] = (
        "path",
        "file_path",
        "file",
        "target_file",
        "notebook_path",
        "filepath",
        "filename",
    )
    PATH_LIST_KEYS: ClassVar[tuple[str, ...]] = ("paths", "file_paths")
    PATCH_KEYS: ClassVar[tuple[str, ...]] = ("patch", "input")
    READ_ONLY_TOOLS: ClassVar[frozenset[str]] = frozenset({"read"})

    CACHE_SIZE: ClassVar[int] = 1024
    """How many distinct checks a guard remembers its verdict on (0: none)."""

    __slots__ = ("_allow", "_checked", "_deny", "_home")

    def __init__(
        self,
        *,
        extra_deny: Sequence[str] = (),
        allow: Sequence[str] = (),
        home: str | None = None,
    ) -> None:
        self._deny = _compile(extra_deny, "extra_deny")
        self._allow = _compile(allow, "allow")
        self._home = home
        # per instance (the extra rules and home are part of the verdict); keyed by the
        # path, read or write, and $HOME when ``home`` is unset (``~`` follows it)
        self._checked = functools.lru_cache(maxsize=max(0, self.CACHE_SIZE))(self._check)

    def __call__(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.block:
            return
        write = inp.tool_name not in self.READ_ONLY_TOOLS
        try:
            for path in self._paths(inp.tool_name, out.args):
                reason = self.check(path, write=write)
                if reason is not None:
                    out.block = True
                    out.block_reason = reason
                    return
        except _Unreadable as exc:
            out.block = True
            out.block_reason = f"security-audit: unparseable: {exc}"

    def check(self, path: str, *, write: bool = False) -> str | None:
        """The block reason for ``path``, or None when it may be used (remembered: see
        ``CACHE_SIZE``)."""
        home = self._home if self._home is not None else os.environ.get("HOME")
        if len(path) > _CACHED_CHARS:
            return self._check(path, write, home)
        return self._checked(path, write, home)

    def _check(self, path: str, write: bool, home: str | None) -> str | None:
        # ``home`` is only the cache's key: the checks read ``self._home`` (None: the
        # current user's home, which is $HOME when it is set)
        normalized = normalize_path(path, home=self._home)
        if any(p.search(normalized) for p in self._allow):
            return None
        if any(p.search(normalized) for p in self._deny):
            rule = "extra-deny"
        else:
            found = _match_normalized(normalized, write=write, home=self._home)
            if found is None:
                return None
            rule = found.rule
        return f"security-audit: {rule}: {path!r} (normalized {normalized!r})"

    def _paths(self, tool: str, args: dict[str, object]) -> Iterator[str]:
        """Every path the call names: each path key, each element of ``paths``, and for
        ``apply_patch`` every file the patch touches.

        Raises:
            _Unreadable: a key holds something other than text (a number, a dict, a list
                holding one), which the guard cannot judge.
        """
        # a list under a single-path key is read too: whatever the tool makes of it, every
        # path in it is judged (and anything that is not a path string refuses the call)
        for key in (*self.PATH_KEYS, *self.PATH_LIST_KEYS):
            yield from _texts(key, args.get(key), lists=True)
        if tool == "apply_patch":
            for key in self.PATCH_KEYS:
                for text in _texts(key, args.get(key), lists=False):
                    yield from patch_paths(text)


class _Unreadable(Exception):
    """An argument the guard must read is not text: the call is refused, not let through."""


def _texts(key: str, value: object, *, lists: bool) -> Iterator[str]:
    if value is None or value == "":
        return
    if isinstance(value, str):
        yield value
        return
    if lists and isinstance(value, (list, tuple)):
        for index, element in enumerate(value):
            if not isinstance(element, str):
                raise _Unreadable(
                    f"element {index} of {key!r} is of type {type(element).__name__}, not a "
                    f"path string; a call whose paths cannot be read is not run"
                )
            if element:
                yield element
        return
    raise _Unreadable(
        f"{key!r} is of type {type(value).__name__}, not "
        f"{'a path string or a list of them' if lists else 'a string'}; a call whose paths "
        f"cannot be read is not run"
    )
