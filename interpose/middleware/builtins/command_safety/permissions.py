"""Rule family ``permissions``: ``chmod``/``chown``/``chgrp`` of critical paths.

Rules (the rule id leads the block reason):

- ``permissions``: world-writable or all-clearing modes (``777``, ``666``, ``000``,
  ``a+rwx``, ``o+w``) on critical paths, system files or credentials; any recursive
  ``chmod``/``chown``/``chgrp`` of a critical path, or of a target known only at run
  time that no known prefix bounds (``chmod -R 777 "$DIR"``, refused as unknown);
  ``chown`` of ``/`` or auth files; ``chmod 644 /etc/shadow`` (the password hashes
  readable by all); the setuid bit (``u+s``, ``+s``, ``4755``, ``04755``, ``install -m
  4755``, ``chmod --reference=/usr/bin/sudo``) on a shell, an interpreter, a program that
  runs commands or reads any file (``find``, ``vim``, ``env``, ``tar``...), any file under
  a system or temporary directory, or a file known only at run time; the setgid bit on
  shells and interpreters (``g+s`` on a shared directory is routine and allowed);
  ``setcap`` granting a capability that is root in all but name (``cap_setuid``,
  ``cap_dac_override``, ``cap_sys_admin``, ``=ep``...) to any file, or any capability but
  ``cap_net_bind_service`` to a shell or interpreter.
- ``accounts``: account tools that create root-equivalent accounts or open logins:
  ``useradd``/``usermod``/``groupadd`` with uid or gid 0 or ``-o`` (duplicate uid), or
  adding to a privileged group (``root``, ``sudo``, ``wheel``, ``admin``, ``docker``,
  ``lxd``, ``libvirt``, ``disk``, ``shadow``...: ``usermod -aG docker me`` included);
  ``gpasswd -a``/``-M``, ``adduser USER GROUP``/``--ingroup`` to such a group; ``passwd
  -d`` (empty password), ``passwd --stdin``, ``useradd``/``usermod -p`` with an empty
  password or on root; ``chpasswd`` and ``newusers`` (passwords set in bulk from
  input); ``userdel``/``deluser root``; macOS ``dseditgroup``/``dscl``/``sysadminctl``
  adding to ``admin``; editing the account databases with ``visudo``
  (unless ``-c``), ``vipw`` and ``vigr``.  Editors and ``patch`` on the auth files are
  ``system-files``.  Allowed: ``sudo -l``, ``id``, ``getent passwd``, reading
  ``/etc/passwd``, ``useradd -m dev`` (an ordinary account), ``passwd`` (one's own
  password, interactively), ``chage`` (password aging), ``visudo -c``.
"""

from __future__ import annotations

import re

from ..security_audit import match_sensitive
from ..shell import SUBST, Word
from .invocation import Invocation, verb_of
from .model import HOME, Finding
from .options import opts, parse_opts, word_set
from .paths import SYSTEM_DIRS, TEMP_DIRS, display, show, system_file
from .programs import INTERPRETERS, SHELLS
from .run import Rule, Run
from .wrappers import canon

# -- permissions ----------------------------------------------------------------------------

_OCTAL_MODE = re.compile(r"[0-7]{1,4}")
_SYMBOLIC_CLAUSE = re.compile(r"([ugoa]*)((?:[-+=][rwxXstugo]*)+)")
_SYMBOLIC_DASH = re.compile(r"-[rwxXst]+")
_CHMOD = opts(
    long="recursive changes silent quiet verbose preserve-root no-preserve-root help version "
    "dereference no-dereference",
    long_arg="reference",
    alias={"R": "recursive"},
)
_CHOWN = opts(
    long="recursive changes silent quiet verbose preserve-root no-preserve-root help version "
    "dereference no-dereference",
    long_arg="reference from",
    alias={"R": "recursive"},
)


def _loose_mode(mode: str) -> str | None:
    """Describe a mode that opens files to everyone or strips every permission."""
    if _OCTAL_MODE.fullmatch(mode):
        value = int(mode, 8)
        if value & 0o002:
            return "world-writable"
        return "without any permission" if value & 0o777 == 0 else None
    for clause in mode.split(","):
        m = _SYMBOLIC_CLAUSE.fullmatch(clause)
        if m is None:
            continue
        who = m.group(1)
        for op, perms in re.findall(r"([-+=])([rwxXstugo]*)", m.group(2)):
            if op in "+=" and "w" in perms and ("o" in who or "a" in who):
                return "world-writable"
            everyone = not who or "a" in who or set("ugo") <= set(who)
            if everyone and ((op == "=" and not perms) or (op == "-" and set("rwx") <= set(perms))):
                return "without any permission"
    return None


def _sticky(mode: str | None) -> bool:
    if mode is None:
        return False
    if _OCTAL_MODE.fullmatch(mode):
        return len(mode) == 4 and int(mode[0], 8) & 1 == 1
    return "t" in mode


def _rule_chmod(inv: Invocation, run: Run) -> Finding | None:
    mode: str | None = None
    rest: list[Word] = []
    for word in inv.args:  # "-w" and "-rwx" are modes, not options
        if mode is None and _SYMBOLIC_DASH.fullmatch(word.text):
            mode = word.text
        else:
            rest.append(word)
    parsed = parse_opts(rest, _CHMOD)
    targets = parsed.operands
    if mode is None and not parsed.has("--reference") and targets:
        mode, targets = targets[0].text, targets[1:]
    recursive = parsed.has("--recursive")
    loose = _loose_mode(mode) if mode is not None else None
    if not (recursive or loose):
        return None
    verb = " ".join(filter(None, [verb_of(inv, parsed), mode]))
    for word in targets:
        path = run.path(word)
        if not recursive and path in TEMP_DIRS and _sticky(mode):
            continue  # /tmp is meant to be 1777
        hit = run.doomed(word, recursive=True, cwd_counts=False, unknown=recursive)
        if hit is not None:
            what = f"makes it {loose}" if loose else "rewrites permissions recursively"
            return Finding(
                "permissions",
                word.text,
                f"{verb} on {hit[0]!r}, {hit[1]}: {what} (token {show(word.text)!r})",
            )
        if loose and (system_file(path) or match_sensitive(path, home=HOME) is not None):
            return Finding(
                "permissions",
                word.text,
                f"{verb} makes {display(path)!r} {loose} (token {show(word.text)!r})",
            )
    return None


def _rule_chown(inv: Invocation, run: Run) -> Finding | None:
    parsed = parse_opts(inv.args, _CHOWN)
    targets = parsed.operands if parsed.has("--reference") else parsed.operands[1:]
    recursive = parsed.has("--recursive")
    for word in targets:
        path = run.path(word)
        hit = run.doomed(word, recursive=True, cwd_counts=False, unknown=recursive)
        if hit is not None and (recursive or path == "/"):
            return Finding(
                "permissions",
                word.text,
                f"{verb_of(inv, parsed)} changes the owner of {hit[0]!r}, {hit[1]} "
                f"(token {show(word.text)!r})",
            )
        if system_file(path):
            return Finding(
                "permissions",
                word.text,
                f"{verb_of(inv, parsed)} changes the owner of the system file {path!r}",
            )
    return None


# -- setuid, setgid, capabilities ----------------------------------------------------------------

_RUNS_ANYTHING = (
    frozenset(SHELLS)
    | frozenset(INTERPRETERS)
    | word_set(
        "env find vim vi nvim view less more man awk gawk sed tee cp mv dd tar zip unzip rsync "
        "nmap git docker xargs nano ed busybox make gdb strace socat nc openssl su sudo chmod "
        "chown install ln base64 cat head tail tclsh expect wish rlwrap screen tmux script "
        "time timeout nice stdbuf flock ionice taskset watch systemctl journalctl pkexec ssh "
        "scp curl wget php ruby perl python node lua"
    )
)
"""Programs that a setuid bit turns into a root shell or a root read/write of any file."""


_LONG_OCTAL = re.compile(r"0*([0-7]{1,4})")


def _setid(mode: str) -> str | None:
    """``"setuid"``/``"setgid"`` when ``mode`` sets that bit (setuid wins)."""
    octal = _LONG_OCTAL.fullmatch(mode)  # 4755, 04755, 004755
    if octal is not None:
        digits = octal.group(1)
        high = int(digits, 8) >> 9 if len(digits) == 4 else 0
        return "setuid" if high & 4 else "setgid" if high & 2 else None
    found = None
    for clause in mode.split(","):
        m = _SYMBOLIC_CLAUSE.fullmatch(clause)
        if m is None:
            continue
        who = m.group(1)
        for op, perms in re.findall(r"([-+=])([rwxXstugo]*)", m.group(2)):
            if op in "+=" and "s" in perms:
                if not who or "u" in who or "a" in who:
                    return "setuid"
                found = "setgid"
    return found


_SETUID_PROGRAMS = word_set("sudo su passwd pkexec mount umount newgrp chsh chfn gpasswd doas")
"""Programs installed setuid root: ``chmod --reference=/usr/bin/sudo x`` copies that bit."""


def _chmod_mode(inv: Invocation) -> tuple[str | None, list[Word]]:
    """The mode ``chmod`` sets (``--reference`` to a setuid program: ``u+s``; to another
    file: None) and its targets."""
    mode: str | None = None
    rest: list[Word] = []
    for word in inv.args:
        if mode is None and _SYMBOLIC_DASH.fullmatch(word.text):
            mode = word.text
        else:
            rest.append(word)
    parsed = parse_opts(rest, _CHMOD)
    targets = parsed.operands
    if mode is None and not parsed.has("--reference") and targets:
        mode, targets = targets[0].text, targets[1:]
    reference = parsed.value("--reference")
    if reference is not None and canon(reference.text) in _SETUID_PROGRAMS:
        mode = "u+s"
    return mode, targets


def _under_system_dir(path: str) -> bool:
    """Under a system directory, or in a world-writable temporary one (where a setuid
    file is the classic hidden root shell: ``cp /bin/bash /tmp/b; chmod +s /tmp/b``)."""
    top = path[1:].split("/", 1)[0].lower() if path.startswith("/") else ""
    return top in SYSTEM_DIRS or path.startswith(tuple(d + "/" for d in TEMP_DIRS))


_HASH_FILES = re.compile(r"^(?:/private)?/etc/(?:shadow|gshadow|master\.passwd)-?$")


def _others_read(mode: str) -> bool:
    """Whether ``mode`` lets every user read the file (``644``, ``o+r``, ``a+r``, ``+r``)."""
    if _OCTAL_MODE.fullmatch(mode):
        return bool(int(mode, 8) & 0o004)
    for clause in mode.split(","):
        m = _SYMBOLIC_CLAUSE.fullmatch(clause)
        if m is None:
            continue
        who = m.group(1)
        for op, perms in re.findall(r"([-+=])([rwxXstugo]*)", m.group(2)):
            if op in "+=" and "r" in perms and (not who or "o" in who or "a" in who):
                return True
    return False


def _rule_hash_exposed(inv: Invocation, run: Run) -> Finding | None:
    """``chmod 644 /etc/shadow``: the password hashes become readable by every user."""
    mode, targets = _chmod_mode(inv)
    if mode is None or not _others_read(mode):
        return None
    for word in targets:
        path = run.path(word)
        if _HASH_FILES.match(path.lower()):
            return Finding(
                "permissions",
                word.text,
                f"chmod {mode} makes {path!r} readable by every user: it holds the password "
                f"hashes (token {show(word.text)!r})",
            )
    return None


def _rule_setid(inv: Invocation, run: Run) -> Finding | None:
    mode, targets = _chmod_mode(inv)
    return _judge_setid(run, mode, targets, "chmod")


_INSTALL_MODE = opts(
    "tSmogZ",
    "compare directory preserve-timestamps strip verbose help version",
    "target-directory suffix mode owner group",
    {"t": "target-directory", "S": "suffix", "m": "mode"},
)


def _rule_install_setid(inv: Invocation, run: Run) -> Finding | None:
    """``install -m 4755 /bin/sh /tmp/x``: a copy made setuid; judged by the source's
    name (a shell stays a shell) and by where the copy lands."""
    parsed = parse_opts(inv.args, _INSTALL_MODE)
    mode = parsed.value("--mode")
    if mode is None:
        return None
    return _judge_setid(run, mode.text, parsed.operands, "install -m")


def _judge_setid(run: Run, mode: str | None, targets: list[Word], verb: str) -> Finding | None:
    bit = _setid(mode) if mode is not None else None
    if bit is None:
        return None
    for word in targets:
        path = run.path(word)
        if bit == "setuid" and not run.probing and ("$" in path or SUBST in path):
            return Finding(
                "permissions",
                word.text,
                f"{verb} {mode} sets the setuid bit on {show(word.text)!r}, a file known only "
                f"at run time: a setuid change with an unknown target is refused",
            )
        runs_anything = canon(path) in _RUNS_ANYTHING
        if runs_anything or (bit == "setuid" and _under_system_dir(path)):
            what = (
                "a program that runs commands or reads any file"
                if runs_anything
                else ("a file under a system directory")
            )
            return Finding(
                "permissions",
                word.text,
                f"{verb} {mode} sets the {bit} bit on {display(path)!r}, {what}: it then runs "
                f"with its owner's privileges for every user (token {show(word.text)!r})",
            )
    return None


_ROOT_CAPS = re.compile(
    r"cap_(?:setuid|setgid|dac_override|dac_read_search|sys_admin|sys_ptrace|sys_module|chown"
    r"|fowner|sys_rawio|setfcap|setpcap|bpf|sys_chroot|linux_immutable)\b|(?:^|[ ,])(?:all)?[=+]"
)


def _rule_setcap(inv: Invocation, run: Run) -> Finding | None:
    words = [w for w in inv.args if not w.text.startswith("-")]
    if any(w.text == "-r" for w in inv.args):
        return None  # removes capabilities
    if any(w.text == "-n" for w in inv.args) and words:
        words = words[1:]  # -n ROOTUID
    for caps, target in zip(words[::2], words[1::2], strict=False):
        text = caps.text.lower().strip()
        path = run.path(target)
        if _ROOT_CAPS.search(text) is not None:
            why = "a capability that amounts to root"
        elif canon(path) in _RUNS_ANYTHING and text.replace("cap_net_bind_service", "").strip(
            "=+-eip, "
        ):
            why = "capabilities on a shell or interpreter, for any script it runs"
        else:
            continue
        return Finding(
            "permissions",
            caps.text,
            f"setcap {caps.text} on {display(path)!r} grants {why} (token {show(caps.text)!r})",
        )
    return None


# -- accounts ------------------------------------------------------------------------------------

_PRIVILEGED_GROUPS = word_set(
    "0 root wheel sudo admin docker lxd lxc libvirt disk shadow kmem sudoers staff"
)
"""Groups whose members are root or can become it (``docker``/``lxd``/``libvirt``/``disk``
mount or write the host's disks, ``staff`` on Debian writes ``/usr/local`` ahead of the
system's programs).  ``adm`` (reading logs) is not one of them."""

_USERADD = opts(
    "bcdefgGkKpRPsuZ",
    "defaults no-log-init create-home no-create-home no-user-group non-unique system "
    "user-group help badname append lock unlock move-home",
    "base-dir comment home-dir home expiredate inactive gid groups skel key password root "
    "prefix shell uid selinux-user login add-subuids del-subuids add-subgids del-subgids",
    {"u": "uid", "g": "gid", "G": "groups", "o": "non-unique", "a": "append"},
)
_USERMOD = opts(
    "cdefgGlpRPsuvwVWZ",
    "append lock unlock move-home non-unique help badname",
    "comment home expiredate inactive gid groups login password root prefix shell uid "
    "add-subuids del-subuids add-subgids del-subgids selinux-user",
    {"u": "uid", "g": "gid", "G": "groups", "o": "non-unique", "a": "append"},
)


def _accounts(token: str, message: str) -> Finding:
    return Finding("accounts", token, message)


def _is_zero(text: str) -> bool:
    return text.isdigit() and int(text) == 0


def _privileged(groups: str) -> str | None:
    return next((g for g in groups.split(",") if g.strip().lower() in _PRIVILEGED_GROUPS), None)


def _rule_useradd(inv: Invocation, run: Run) -> Finding | None:
    parsed = parse_opts(inv.args, _USERMOD if inv.name == "usermod" else _USERADD)
    verb = inv.shown
    for flag, value in parsed.values:
        if flag == "--uid" and _is_zero(value.text):
            return _accounts(value.text, f"{verb} gives the account uid 0: it is root")
        if flag == "--gid" and (_is_zero(value.text) or _privileged(value.text)):
            return _accounts(
                value.text, f"{verb} gives the account the primary group {value.text!r}"
            )
        if flag == "--groups" and (group := _privileged(value.text)) is not None:
            return _accounts(
                value.text,
                f"{verb} adds the account to the privileged group {group!r}, whose members are "
                f"root or can become it (token {show(value.text)!r})",
            )
    if parsed.has("--non-unique"):
        return _accounts("-o", f"{verb} -o reuses another account's uid (a second root)")
    password = parsed.value("-p", "--password")
    if password is not None:
        login = parsed.operands[-1].text if parsed.operands else ""
        if not password.text.strip("'\"") or login == "root":
            what = "an empty password" if not password.text.strip("'\"") else "root's password"
            return _accounts(password.text or "''", f"{verb} -p sets {what} on {login!r}")
    return None


def _rule_groupadd(inv: Invocation, run: Run) -> Finding | None:
    parsed = parse_opts(inv.args, opts("gKpR", "non-unique system force", "gid key password"))
    value = parsed.value("-g", "--gid")
    if value is not None and _is_zero(value.text):
        return _accounts(value.text, f"{inv.shown} creates a group with gid 0 (root's group)")
    return None


def _rule_gpasswd(inv: Invocation, run: Run) -> Finding | None:
    parsed = parse_opts(inv.args, opts("adAMR", long_arg="add delete administrators members"))
    adds = parsed.has("-a", "--add", "-M", "--members", "-A", "--administrators")
    if not adds or not parsed.operands:
        return None
    group = parsed.operands[-1].text
    if _privileged(group) is None:
        return None
    return _accounts(group, f"{inv.shown} adds members to the privileged group {group!r}")


def _rule_adduser(inv: Invocation, run: Run) -> Finding | None:
    parsed = parse_opts(
        inv.args,
        opts(
            "hsgGuDHkS",
            "system disabled-password disabled-login quiet debug force-badname no-create-home "
            "add-extra-groups add_extra_groups",
            "home shell ingroup gid uid firstuid lastuid firstgid lastgid gecos conf comment",
        ),
    )
    for flag, value in parsed.values:
        if flag in ("--uid", "-u") and _is_zero(value.text):
            return _accounts(value.text, f"{inv.shown} gives the account uid 0: it is root")
        if flag in ("--ingroup", "--gid", "-G", "-g") and _privileged(value.text):
            return _accounts(
                value.text, f"{inv.shown} puts the account in the privileged group {value.text!r}"
            )
    if len(parsed.operands) == 2 and _privileged(parsed.operands[1].text):
        group = parsed.operands[1].text
        return _accounts(
            group,
            f"{inv.shown} {parsed.operands[0].text} {group} adds the user to a privileged group",
        )
    return None


def _rule_passwd(inv: Invocation, run: Run) -> Finding | None:
    for word in inv.args:
        if word.text == "--stdin":
            return _accounts(
                word.text,
                f"{inv.shown} --stdin sets the password from its input, which the guard "
                f"cannot judge",
            )
        if word.text == "--delete" or (
            word.text.startswith("-") and not word.text.startswith("--") and "d" in word.text
        ):
            return _accounts(
                word.text,
                f"{inv.shown} {word.text} deletes the password: the account opens without one",
            )
    return None


def _rule_bulk_passwords(inv: Invocation, run: Run) -> Finding | None:
    if {w.text for w in inv.args} & {"-h", "--help"}:
        return None
    return _accounts(
        inv.shown,
        f"{inv.shown} sets account passwords (or creates accounts) from its input, which the "
        f"guard cannot judge",
    )


def _rule_userdel(inv: Invocation, run: Run) -> Finding | None:
    operands = [w for w in inv.args if not w.text.startswith("-")]
    if operands and operands[0].text == "root":
        return _accounts("root", f"{inv.shown} root deletes the root account")
    return None


def _rule_account_editor(inv: Invocation, run: Run) -> Finding | None:
    for word in inv.args:  # -c/--check only checks (also bundled: visudo -cf FILE)
        t = word.text
        if t in ("--check", "--help", "--version") or (
            len(t) > 1 and t[0] == "-" and t[1] != "-" and set(t[1:]) & set("chV")
        ):
            return None
    what = {
        "visudo": "the sudoers policy",
        "vipw": "the password database",
        "vigr": "the group database",
    }.get(inv.name, "an account database")
    return _accounts(inv.shown, f"{inv.shown} opens {what} for editing (command {inv.snippet()!r})")


_MAC_ADMIN = re.compile(r"^(?:admin|wheel|/groups/admin|/groups/wheel)$", re.IGNORECASE)


def _rule_mac_accounts(inv: Invocation, run: Run) -> Finding | None:
    """macOS: ``dseditgroup -o edit -a USER admin``, ``dscl . -append /Groups/admin
    GroupMembership USER``, ``sysadminctl -addUser x -admin``."""
    texts = [w.text for w in inv.args]
    adds = {"-a", "-append", "-create", "-merge", "-addUser"} & set(texts)
    admin = any(_MAC_ADMIN.match(t) for t in texts) or "-admin" in texts
    if adds and admin:
        return _accounts(
            inv.shown, f"{inv.shown} adds an account to the admin group (command {inv.snippet()!r})"
        )
    return None


RULES: dict[str, tuple[Rule, ...]] = {
    **dict.fromkeys(("dseditgroup", "dscl", "sysadminctl"), (_rule_mac_accounts,)),
    "chmod": (_rule_setid, _rule_hash_exposed, _rule_chmod),
    "setcap": (_rule_setcap,),
    "install": (_rule_install_setid,),
    "useradd": (_rule_useradd,),
    "usermod": (_rule_useradd,),
    "groupadd": (_rule_groupadd,),
    "groupmod": (_rule_groupadd,),
    "gpasswd": (_rule_gpasswd,),
    "adduser": (_rule_adduser,),
    "addgroup": (_rule_adduser,),
    "passwd": (_rule_passwd,),
    "chpasswd": (_rule_bulk_passwords,),
    "newusers": (_rule_bulk_passwords,),
    "userdel": (_rule_userdel,),
    "deluser": (_rule_userdel,),
    **dict.fromkeys(("visudo", "vipw", "vigr"), (_rule_account_editor,)),
    "chown": (_rule_chown,),
    "chgrp": (_rule_chown,),
}
