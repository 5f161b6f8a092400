"""``builtin:security-audit``: keep file tools away from credentials and auth files.

The guard runs before ``read``, ``write``, ``edit`` and ``apply_patch``.  It collects every
path the call touches (``path``, ``file_path``, ``file``, ``target_file``,
``notebook_path``, ``filepath``, ``filename``, every element of a ``paths`` or
``file_paths`` list; for ``apply_patch`` every file
named in the patch, in both the ``*** Begin Patch`` format and unified/git diffs, headers
read through any indentation), normalizes each one and blocks the call when one is
sensitive.  A path argument that is not text, or that holds a NUL character (which no
file name can), is refused (``unparseable``), never skipped.

Normalization comes first, so spelling cannot dodge a rule: ``~``, ``~user``, ``$HOME``
and ``${HOME}`` are expanded, backslashes become ``/``, ``file://`` and repeated slashes
are dropped, ``/proc/<pid>/root`` (a view of ``/``) and ``/proc/<pid>/cwd`` prefixes are
stripped, ``.`` and ``..`` are resolved lexically (``node_modules/../.env`` is ``.env``)
and the result is lower-cased for matching.  Only then is the allow-list consulted, so
it cannot be reached through ``..``.  Every file a path may name is judged
(:func:`possible_targets`): a relative path climbing above the working directory also
as read from ``/`` (``../../etc/shadow``, ``/proc/self/cwd/../../etc/shadow``: the
working directory may be one level deep), a name with an NTFS stream also as its base
file (``.env::$DATA``).  A file in a documentation format (``docs/ssh/id_rsa.md``) is
not a secret unless its directory is a store whose every entry is (``~/.ssh/notes.md``).

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
- ``system-auth``: :data:`SYSTEM_FILES`, the list the command guard protects from writes
  too: ``/etc/passwd``, ``/etc/shadow``, ``/etc/gshadow``, ``/etc/group``,
  ``/etc/sudoers``, ``/etc/sudoers.d/``, ``/etc/master.passwd`` (also under
  ``/private/etc``), ``/etc/security/opasswd``.  Reading ``/etc/passwd`` and
  ``/etc/group`` is allowed: they are world-readable and hold no password hash.
- ``env-file``: ``.env``, ``.env.*``, ``.env-*``, ``.env_*``, ``.env~``, ``*.env``,
  ``.envrc``, ``/proc/<pid>/environ`` (and a thread's), except the templates
  ``.env.example``/``.sample``/``.template``/``.dist``/``.defaults``/``.schema`` (with
  ``.``, ``-`` or ``_``, after an environment name too: ``.env.local.example``; and their
  backups).
- ``process-memory``: ``/proc/<pid>/mem`` (and a thread's), ``/proc/kcore``,
  ``/dev/mem``, ``/dev/kmem``.
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

The package: :mod:`.paths` (normalization), :mod:`.rules` (the rule table),
:mod:`.matching` (paths, globs and stores against the rules), :mod:`.patches` (the files
a patch names) and :mod:`.guard` (the interceptor).
"""

from __future__ import annotations

from .guard import SecurityAudit
from .matching import match_sensitive, match_sensitive_glob, match_sensitive_store, sensitive_reason
from .patches import patch_paths
from .paths import climbs_to_root, normalize_path, possible_targets, resolve_path
from .rules import PERSISTENCE_PATHS, SENSITIVE_RULES, SYSTEM_FILES, SensitiveMatch

__all__ = [
    "PERSISTENCE_PATHS",
    "SENSITIVE_RULES",
    "SYSTEM_FILES",
    "SecurityAudit",
    "SensitiveMatch",
    "climbs_to_root",
    "match_sensitive",
    "match_sensitive_glob",
    "match_sensitive_store",
    "normalize_path",
    "patch_paths",
    "possible_targets",
    "resolve_path",
    "sensitive_reason",
]
