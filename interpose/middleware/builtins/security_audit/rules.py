"""The sensitive-path rules: :data:`SENSITIVE_RULES` (checked in order, first match wins),
:data:`SYSTEM_FILES` and :data:`PERSISTENCE_PATHS`, as regexes over the normalized path.

A rule table: most of this module is data, and it is read as one list.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "PERSISTENCE_PATHS",
    "SENSITIVE_RULES",
    "SYSTEM_FILES",
    "SensitiveMatch",
    "any_of",
    "any_rule",
    "may_end_with",
    "match_and_search",
    "rule_alternatives",
]


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


_C = r"(?:^|/)"  # start of a path component


def _rx(*alternatives: str) -> re.Pattern[str]:
    """One regex matching any of ``alternatives``.  Those starting at a component
    (:data:`_C`) share one ``_C``: the search then tries the rest only after a ``/``,
    not every alternative at every character (3-4 times faster on a miss)."""
    at_component = [a[len(_C) :] for a in alternatives if a.startswith(_C)]
    rest = [a for a in alternatives if not a.startswith(_C)]
    if at_component:
        rest.insert(0, _C + "(?:" + "|".join(f"(?:{a})" for a in at_component) + ")")
    return re.compile("|".join(f"(?:{a})" for a in rest))


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


SYSTEM_FILES = re.compile(
    r"^(?:/private)?/etc/(?:passwd|shadow|gshadow|group|sudoers|master\.passwd)-?$"
    r"|^(?:/private)?/etc/sudoers\.d(?:/|$)"
    r"|^/etc/security/opasswd$"
)
"""The system's account, group and sudo databases (and their ``-`` backups): writing one
grants an account, a group or root.  One list for both guards: the file tools' guard
refuses it as rule ``system-auth`` and the command guard refuses a write to it as
``system-files`` (and a ``chown``/loose ``chmod`` of it)."""

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
            # browser cookie databases (sessions of every site), password managers' data
            _C + r"\.mozilla/firefox/[^/]+/cookies\.sqlite$",
            _C + r"(?:google-chrome|chromium|brave-browser|microsoft-edge)[^/]*/[^/]+/"
            r"(?:network/)?cookies$",
            _C + r"(?:\.config/bitwarden|\.1password|\.config/1password|\.config/keepassxc)(?:/|$)",
        ),
    ),
    _Rule(
        "system-auth",
        "system account or sudo database",
        SYSTEM_FILES,
        # world-readable account and group lists without secrets (getent shows the same):
        # reading them is routine; the hashes live in shadow/gshadow/master.passwd, which
        # stay refused
        read_ok=re.compile(r"^(?:/private)?/etc/(?:passwd|group)-?$"),
    ),
    _Rule(
        "env-file",
        "environment file with secrets",
        _rx(
            _C + r"\.env(?:[._~-][^/]*)?$",
            _C + r"[^/]+\.env$",
            _C + r"\.envrc$",
            # a process's (or one of its threads') environment: its tokens
            r"^/proc/[^/]*/(?:task/[^/]*/)?environ$",
        ),
        except_=re.compile(
            _C + r"(?:\.env(?:[._-][^/]*)?[._-](?:example|sample|template|dist|defaults|schema"
            r"|tpl|tmpl)(?:[._~-][^/]*)?|(?:example|sample|template)\.env)$"
        ),
    ),
    _Rule(
        "process-memory",
        "a process's or the kernel's memory",
        # what a running program holds: its tokens, keys and passwords in clear.  Not
        # cmdline, status, maps or fd (ps and debuggers read them; they hold no secret
        # a process did not already put on its command line)
        _rx(
            r"^/proc/[^/]*/(?:task/[^/]*/)?mem$",
            r"^/proc/kcore$",
            r"^/dev/k?mem$",
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


def _top_level(source: str) -> list[str]:
    """``source``'s top-level alternatives, each unwrapped from a group spanning all of
    it (``(?:a|b)|c``: ``a``, ``b``, ``c``; ``_C(?:a|b)``: ``_C a``, ``_C b``); the rules'
    regexes hold no ``|`` or parenthesis inside a character class."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(source):
        char = source[i]
        if char == "\\":
            i += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(source[start:i])
            start = i + 1
        i += 1
    parts.append(source[start:])
    if len(parts) > 1:
        return [alt for part in parts for alt in _top_level(part)]
    if _whole_group(source):
        return _top_level(source[3:-1])
    if source.startswith(_C) and _whole_group(source[len(_C) :]):  # what _rx makes
        return [_C + alt for alt in _top_level(source[len(_C) :])]
    return [source]


def _whole_group(source: str) -> bool:
    if not source.startswith("(?:") or not source.endswith(")"):
        return False
    depth = 0
    for i, char in enumerate(source):
        if char == "(" and (i == 0 or source[i - 1] != "\\"):
            depth += 1
        elif char == ")" and source[i - 1] != "\\":
            depth -= 1
            if depth == 0 and i < len(source) - 1:
                return False
    return True


def rule_alternatives() -> tuple[str, ...]:
    """Every top-level alternative of every rule's pattern, as regex source."""
    return tuple(alt for rule in SENSITIVE_RULES for alt in _top_level(rule.pattern.pattern))


def may_end_with(alternative: str, end: str) -> bool:
    """Whether the regex ``alternative`` (as :func:`rule_alternatives` gives it) can
    match a path that ends with ``end``: False when it matches only at the end of the
    path (``...$``) after literal text that cannot end such a path (``\\.kube/config$``
    and ``/\\.kube``).  Used to drop, once, the alternatives a test cannot need."""
    tail = _literal_tail(alternative)
    if not tail:
        return True
    return end.endswith(tail) if len(tail) <= len(end) else tail.endswith(end)


def _literal_tail(alternative: str) -> str:
    """The literal text every match of ``alternative`` ends with, when it matches only
    at the end of the path (``...$``); "" otherwise, or when what precedes the ``$`` is
    not literal (a class, a group, a quantifier)."""
    end = len(alternative) - 1
    if end < 0 or alternative[end] != "$" or _escaped(alternative, end):
        return ""
    tail, j = "", end - 1
    while j >= 0:
        char = alternative[j]
        if _escaped(alternative, j):  # "\\.": a literal dot; "\\d": a class
            if char not in _ESCAPED_LITERALS:
                break
            tail, j = char + tail, j - 2
        elif char.isascii() and (char.isalnum() or char in "/_~,:@=%-"):
            tail, j = char + tail, j - 1
        else:
            break
    return tail


_ESCAPED_LITERALS = frozenset(".-/_~+*?()[]{}|^$\\")


def _escaped(source: str, index: int) -> bool:
    """Whether the character at ``index`` of a regex source follows an odd number of
    backslashes."""
    count = 0
    while index - count - 1 >= 0 and source[index - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def match_and_search(
    alternatives: Sequence[str],
) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    """The two regexes of :func:`any_of`: one to ``match`` at the start of the path (the
    alternatives that may), one to ``search`` after a ``/`` or anywhere -- None when no
    alternative matches past the start (``^/etc/...``: one match is the whole test)."""
    at_start, at_component, anywhere = _placed(alternatives)
    first = _either(at_component + at_start)
    rest = ([f"/(?:{_either_source(at_component)})"] if at_component else []) + anywhere
    return first, (_either(rest) if rest else None)


def _placed(alternatives: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """``alternatives`` by where they may match: at the start of the path (without their
    ``^``), at the start of a component (without :data:`_C`), anywhere."""
    at_start: list[str] = []
    at_component: list[str] = []
    anywhere: list[str] = []
    for alt in alternatives:
        if alt.startswith(_C):
            at_component.append(alt[len(_C) :])
        elif alt.startswith("^"):
            at_start.append(alt[1:])
        else:
            anywhere.append(alt)
    return at_start, at_component, anywhere


def _either_source(alternatives: Sequence[str]) -> str:
    return "|".join(f"(?:{a})" for a in alternatives)


def any_of(alternatives: Sequence[str]) -> Callable[[str], bool]:
    """A test of whether any of the regex ``alternatives`` (as :func:`rule_alternatives`
    gives them) matches a path, in two searches: those that may match at the start of the
    path in one regex (``match``), those after a ``/`` or anywhere in another
    (``search``), whose component alternatives share one leading ``/`` (the search tries
    them only after a ``/``: twice as fast on a miss as one ``/`` each)."""
    first, after = match_and_search(alternatives)
    inside = after if after is not None else _either(())

    def matches(normalized: str) -> bool:
        return first.match(normalized) is not None or inside.search(normalized) is not None

    return matches


def _either(alternatives: Sequence[str]) -> re.Pattern[str]:
    return re.compile(_either_source(alternatives) if alternatives else "(?!)")


any_rule = any_of(rule_alternatives())
"""Whether some rule's pattern matches a normalized path (most paths are no rule's: one
test instead of one search per rule).  tests/middleware/test_security_audit.py checks it
answers as the rules do."""
