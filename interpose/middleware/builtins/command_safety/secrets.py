"""Rule family ``secrets``: commands that read or upload sensitive files.

Rules (the rule id leads the block reason):

- ``sensitive-read``: a file operand of a reader (``cat``, ``head``, ``less``, ``base64``,
  ``xxd``, ``od``, ``hexdump``, ``nl``, ``bat``, ``strings``, ``diff``/``cmp``/``vimdiff``,
  ``zcat`` and friends, editors (``vim``, ``nano``, ``emacs``...), ``sqlite3`` (the
  database), ``grep`` (files, not the pattern), ``sed``, ``awk``, ``jq``,
  ``cp``/``mv``/``scp``/``rsync``/``ln`` sources, ``tar``/``zip``/``7z``/``gzip``/``gpg``,
  ``dd if=``, ``source``...), an input redirection, a ``curl``/``wget`` upload
  (``-d @file``, ``-F x=@file``, ``-T``, ``--post-file``) or ``curl file://`` URL, a
  ``python -m`` module that prints or packs its files (``base64``, ``json.tool``,
  ``zipfile``, ``tarfile``, ``gzip``...; ``http.server -d DIR`` serves one), ``git diff
  --no-index``, ``git add`` (the file goes into the repository's history), ``git show
  REV:PATH``, naming a path that :func:`.security_audit.match_sensitive` flags -- the
  same list the file-tool guard uses.  A glob is judged by the secret names it can
  match (:func:`.security_audit.match_sensitive_glob`: ``cat .e*`` can match ``.env``;
  ``cat .env.ex*`` and ``cat *.md`` cannot).  ``openssl`` is judged by subcommand: ``rsa``,
  ``pkey``, ``ec``, ``pkcs8``, ``pkcs12``, ``enc``... print or convert their ``-in`` and are
  readers of it; elsewhere the inputs are certificates (``x509 -in cert.pem``, ``req
  -in``, ``verify -CAfile``) or keys the command only uses (``req -new -key server.key``,
  ``dgst -sign``), so ``key-material`` does not apply there (the other secrets still
  do).  ``gpg --export-secret-keys``.  Uploads by cloud and transfer clients (``aws s3
  cp``, ``gsutil``, ``rclone``, ``azcopy``, ``s3cmd``, ``wormhole``/``croc send``, ``gh gist
  create``, ``gh release upload``) of those paths.  Keychains and password managers
  asked to print a secret (``security find-generic-password -w``, ``secret-tool lookup``,
  ``pass show``/``pass NAME``, ``op read``, ``bw get``, ``lpass show``).  ``source
  ~/.bashrc`` is allowed (loading a profile does not reveal it), and so is ``ssh-keygen -y
  -f KEY`` (it prints the public half).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..shell import Word
from .invocation import Invocation
from .model import Finding
from .operands import (
    AWK,
    CP,
    CURL,
    GREP,
    INSTALL,
    JQ,
    LN,
    MV,
    PLAIN,
    RG,
    RSYNC,
    SCP,
    SED,
    WGET,
    ZIP,
    Extract,
    copy_sources,
    curl_uploads,
    keyed,
    operands_of,
    option_values,
    pattern_first,
    skip_operands,
    tar_inputs,
)
from .options import derived, opts, parse_opts, word_set
from .reach import judge_read
from .run import Rule, Run


@dataclass(frozen=True, slots=True)
class _Reader:
    extract: Extract
    exempt: frozenset[str] = frozenset()  # sensitive rules that do not apply


_PLAIN_READERS = word_set(
    "cat tac head tail less more most bat nl base64 base32 basenc xxd od hexdump hd strings "
    "sort uniq cut paste diff cmp comm fold fmt rev column iconv xclip xsel gzip bzip2 "
    "xz zstd lz4 gpg split diff3 sdiff colordiff icdiff wdiff pr expand unexpand uuencode "
    "zcat bzcat xzcat zstdcat lzcat lz4cat zless zmore zdiff zhead bzless xzless csplit "
    "shuf look"
)
_PROFILES = frozenset({"shell-profile"})
EDITORS = {
    **dict.fromkeys(word_set("vi vim nvim vimdiff view"), opts("cSuUiwWsTdqtr", long_arg="cmd")),
    "emacs": opts("lfLdt", long_arg="eval load funcall directory chdir"),
    **dict.fromkeys(word_set("nano pico"), opts("TYrCoJsQ")),
    **dict.fromkeys(word_set("micro joe mcedit ne kak hx helix"), opts()),
}
"""Editors and their options that take a value: opening a secret shows it (the file
tools' guard refuses the same paths)."""
_SQLITE_ARG = word_set(
    "-cmd -init -separator -newline -nullvalue -vfs -maxsize -lookaside -pagecache -mmap "
    "-heap -escape"
)


def _sqlite_database(inv: Invocation) -> list[Word]:
    """``sqlite3 [options] FILE [SQL]``: the database file (options take one dash)."""
    args = inv.args
    i, n = 0, len(args)
    while i < n and args[i].text.startswith("-"):
        i += 2 if args[i].text.lstrip("-") in _SQLITE_NAMES else 1
    return list(args[i : i + 1])


_SQLITE_NAMES = frozenset(a.lstrip("-") for a in _SQLITE_ARG)


def _file_url(text: str) -> Word | None:
    """The path of a ``file:`` URL (``file:///p``, ``file://localhost/p``, ``file:p``)."""
    if text[:5].lower() != "file:":
        return None
    rest = text[5:]
    if rest.startswith("//"):
        host, _, path = rest[2:].partition("/")
        if host.startswith(("$", "~")):  # file://$HOME/x: the shell makes it file:///home/..
            rest = host + "/" + path
        elif host in ("", "localhost", "127.0.0.1"):
            rest = "/" + path
        else:
            return None
    return derived(rest.split("?", 1)[0].split("#", 1)[0])


def _curl_reads(inv: Invocation) -> list[Word]:
    """What ``curl`` reads from disk: uploads (``-d @f``, ``-T f``) and ``file://`` URLs."""
    parsed = parse_opts(inv.args, CURL)
    urls = [*parsed.operands, *(w for flag, w in parsed.values if flag == "--url")]
    files = [path for url in urls if (path := _file_url(url.text)) is not None]
    return curl_uploads(inv) + files


def _inline_code_at(args: list[Word], letters: str) -> int | None:
    """Index of the program text after the first short option bundle holding one of
    ``letters`` (``perl -lne CODE``, ``python3 -c CODE``), or None."""
    for i, word in enumerate(args):
        t = word.text
        if t == "--" or not t.startswith("-") or t.startswith("--"):
            if t.startswith("--") and t != "--":
                continue
            return None
        if t[-1] in letters:
            return i + 1 if i + 1 < len(args) else None
    return None


def _perl_reads(inv: Invocation) -> list[Word]:
    """``perl -ne CODE FILE...``/``perl -pe``: the loop reads every file operand."""
    args = list(inv.args)
    at = _inline_code_at(args, "eE")
    if at is None:
        return []
    bundles = [w.text[1:] for w in args[:at] if w.text.startswith("-") and w.text[1:2] != "-"]
    if not any("n" in b or "p" in b for b in bundles):
        return []
    return [w for w in args[at + 1 :] if not w.text.startswith("-") or w.text == "-"]


_ARGV_OPEN = re.compile(
    r"\b(?:open|Path|read_text|read_bytes|fileinput\.input|io\.open|codecs\.open)\s*\(\s*"
    r"sys\.argv\[\s*(\d+)\s*\]"
)


def _python_argv_reads(inv: Invocation) -> list[Word]:
    """``python3 -c 'open(sys.argv[1])...' FILE``: the program opens its operands."""
    args = list(inv.args)
    at = _inline_code_at(args, "c")
    if at is None:
        return []
    params = args[at + 1 :]
    picked = {int(m.group(1)) for m in _ARGV_OPEN.finditer(args[at].text)}
    return [params[k - 1] for k in sorted(picked) if 0 < k <= len(params)]


_HTTPIE_SEPARATORS = re.compile(r":=@|=@|==|:=|=|@|:")


def _httpie_reads(inv: Invocation) -> list[Word]:
    """Files an httpie-style client (``http``, ``https``, ``xh``, ``curlie``) sends: request
    items ``field@FILE`` (a form upload), ``field=@FILE``/``field:=@FILE`` (a field read
    from a file) and ``@FILE`` (the body)."""
    files: list[Word] = []
    for word in inv.args:
        if word.text.startswith("-"):
            continue
        sep = _HTTPIE_SEPARATORS.search(word.text)
        if sep is not None and sep.group().endswith("@"):
            files.append(derived(word.text[sep.end() :].split(";", 1)[0]))
    return files


def _container_copy_sources(inv: Invocation) -> list[Word]:
    """``docker cp SRC CTR:DST``, ``kubectl cp SRC POD:DST``: the local sources."""
    words = [w.text for w in inv.args if not w.text.startswith("-")]
    at = words.index("cp") if "cp" in words[:3] else -1
    # docker cp, docker container cp, kubectl -n NS cp (an option's value before it)
    if at < 0 or not (at == 0 or words[0] == "container" or inv.args[0].text.startswith("-")):
        return []
    if len(words) < at + 3 or ":" not in words[-1]:
        return []  # a copy out of the container (CTR:SRC DST)
    return [derived(t) for t in words[at + 1 : -1] if not _REMOTE.match(t)]


READERS: dict[str, _Reader] = {
    **dict.fromkeys(word_set("http https xh xhs curlie"), _Reader(_httpie_reads)),
    **dict.fromkeys(word_set("docker kubectl oc"), _Reader(_container_copy_sources)),
    **dict.fromkeys(_PLAIN_READERS, _Reader(operands_of(PLAIN))),
    "grep": _Reader(pattern_first(GREP, ("--regexp", "--file"), ("--file",))),
    "rg": _Reader(pattern_first(RG, ("--regexp", "--file"), ("--file",))),
    "ag": _Reader(pattern_first(RG, ("--regexp",), ())),
    "ack": _Reader(pattern_first(RG, ("--regexp",), ())),
    "sed": _Reader(pattern_first(SED, ("--expression", "--file"), ("--file",))),
    "awk": _Reader(pattern_first(AWK, ("--file",), ("--file",))),
    "jq": _Reader(pattern_first(JQ, ("--from-file",), ("--from-file",))),
    "yq": _Reader(operands_of(PLAIN)),
    "cp": _Reader(copy_sources(CP)),
    "mv": _Reader(copy_sources(MV)),
    "install": _Reader(copy_sources(INSTALL)),
    "ln": _Reader(copy_sources(LN)),
    "scp": _Reader(copy_sources(SCP)),
    "rsync": _Reader(copy_sources(RSYNC)),
    "tar": _Reader(tar_inputs),
    "zip": _Reader(skip_operands(ZIP, 1)),
    "7z": _Reader(skip_operands(PLAIN, 2)),
    "dd": _Reader(keyed("if")),
    "curl": _Reader(_curl_reads),
    "wget": _Reader(option_values(WGET, "--post-file", "--body-file")),
    # an editor on a shell profile is judged as a write by the persistence rules
    **{name: _Reader(operands_of(spec), _PROFILES) for name, spec in EDITORS.items()},
    "sqlite3": _Reader(_sqlite_database),
    "perl": _Reader(_perl_reads),
    "python": _Reader(_python_argv_reads),
    "source": _Reader(lambda inv: inv.args[:1], frozenset({"shell-profile"})),
    ".": _Reader(lambda inv: inv.args[:1], frozenset({"shell-profile"})),
}


def _rule_reads(inv: Invocation, run: Run) -> Finding | None:
    reader = READERS.get(inv.name)
    if reader is None:
        return None
    for word in reader.extract(inv):
        found = judge_read(run, word, inv.name, reader.exempt)
        if found is not None:
            return found
    return None


def _rule_gpg(inv: Invocation, run: Run) -> Finding | None:
    for word in inv.args:
        if word.text.startswith("--export-secret"):
            return Finding(
                "sensitive-read",
                word.text,
                f"gpg {word.text} exports private keys from the keyring (token {word.text!r})",
            )
    return None


_OPENSSL_KEY_PRINTERS = word_set("rsa pkey ec dsa pkcs8 pkcs12 enc base64 asn1parse storeutl")
"""``openssl`` subcommands whose ``-in`` is printed or converted (a key shown in full)."""
_OPENSSL_INPUTS = word_set("in inkey key kfile signkey CAkey cert CAfile")
_KEY_USED = frozenset({"key-material"})


def _rule_openssl(inv: Invocation, run: Run) -> Finding | None:
    """``openssl``: what each input option reads, judged by what the subcommand does
    with it.  ``openssl rsa|pkey|pkcs12|enc ... -in key.pem`` prints or converts the key
    and is judged as a read (unless ``-pubout`` without ``-text`` asks for the public
    half).  Elsewhere the input is a certificate (``x509 -in cert.pem``, ``req -in
    csr.pem``, ``verify``) or a key the command *uses* without printing it (``req -new
    -key server.key``, ``dgst -sign``, ``s_server -key``): a ``.pem``/``.key`` file there
    is allowed, while the other secrets (``~/.ssh/id_rsa``, ``.env``) are not."""
    args = inv.args
    sub = args[0].text if args else ""
    texts = {w.text.lstrip("-") for w in args}
    # "rsa -in key.pem -pubout": only the public half comes out
    public = "pubout" in texts and "text" not in texts
    for i in range(1, len(args) - 1):
        option = args[i].text.lstrip("-")
        if option not in _OPENSSL_INPUTS:
            continue
        printed = option == "in" and sub in _OPENSSL_KEY_PRINTERS and not public
        shown = option == "kfile" or printed
        found = judge_read(
            run, args[i + 1], f"openssl {sub} -{option}", frozenset() if shown else _KEY_USED
        )
        if found is not None:
            return found
    return None


_PYTHON_READING_MODULES = word_set(
    "base64 json.tool json zipfile tarfile gzip bz2 lzma quopri uu binascii tokenize ast dis "
    "pickletools filecmp shlex"
)
"""``python -m`` modules whose command line prints or packs the files it is given."""


def _rule_python_module(inv: Invocation, run: Run) -> Finding | None:
    """``python -m base64 ~/.ssh/id_rsa``, ``python -m json.tool ~/.docker/config.json``,
    ``python -m zipfile -c x.zip ~/.aws``, ``python -m http.server -d ~/.ssh``."""
    args = inv.args
    i, n = 0, len(args)
    module = None
    while i < n and module is None:
        t = args[i].text
        if not t.startswith("-") or t in ("-", "--") or t.startswith("--"):
            if t.startswith("--"):
                i += 1
                continue
            return None  # a script, or program text from stdin: not a module
        for k in range(1, len(t)):
            ch = t[k]
            if ch == "c":
                return None  # program text: judged by the interpreter rules
            if ch in "mWXQ":
                value = t[k + 1 :] or (args[i + 1].text if i + 1 < n else "")
                if not t[k + 1 :]:
                    i += 1
                if ch == "m":
                    module = value
                break
        i += 1
    rest = args[i:]
    if module == "http.server":
        words = [
            w for k, w in enumerate(rest) if k > 0 and rest[k - 1].text in ("-d", "--directory")
        ] + [derived(w.text.partition("=")[2]) for w in rest if w.text.startswith("--directory=")]
    elif module in _PYTHON_READING_MODULES:
        words = [w for w in rest if not w.text.startswith("-")]
    else:
        return None
    for word in words:
        found = judge_read(run, word, f"python -m {module}")
        if found is not None:
            return found
    return None


_GIT_GLOBAL_ARG = word_set("-C -c --git-dir --work-tree --namespace --config-env")


def _git_reads(sub: str, args: list[Word]) -> list[Word]:
    """Files a git subcommand reads and shows or stores: ``diff --no-index A B`` compares
    any two files on disk, ``add``/``stage`` copies files into the object store (and so
    into every clone after a push), ``show REV:PATH``/``cat-file -p REV:PATH`` prints a
    committed file."""
    operands = [w for w in args if not w.text.startswith("-")]
    if sub == "diff":
        return operands if any(w.text == "--no-index" for w in args) else []
    if sub in ("add", "stage"):
        return operands
    if sub in ("show", "cat-file"):
        return [derived(w.text.partition(":")[2]) for w in operands if ":" in w.text]
    return []


def _rule_git_reads(inv: Invocation, run: Run) -> Finding | None:
    args = inv.args
    i, n = 0, len(args)
    while i < n and args[i].text.startswith("-"):
        i += 2 if args[i].text in _GIT_GLOBAL_ARG else 1
    if i >= n:
        return None
    sub = args[i].text
    for word in _git_reads(sub, list(args[i + 1 :])):
        found = judge_read(run, word, f"git {sub}")
        if found is not None:
            return found
    return None


_REMOTE = re.compile(r"[A-Za-z][A-Za-z0-9+._-]*:")
_UPLOADERS = word_set("aws gsutil rclone azcopy s3cmd wormhole croc")
"""Command-line clients that copy local files elsewhere; every operand is judged as a
path (a bucket URL or a remote name is not sensitive, so only local secrets count)."""


def _rule_uploads(inv: Invocation, run: Run) -> Finding | None:
    """``aws s3 cp ~/.aws/credentials s3://x``, ``rclone copy ~/.ssh remote:``,
    ``gh gist create .env``, ``gh release upload v1 .env``."""
    operands = [w for w in inv.args if not w.text.startswith("-")]
    if (
        len(operands) > 1
        and not _REMOTE.match(operands[-1].text)
        and any(_REMOTE.match(w.text) for w in operands[:-1])
    ):
        operands = operands[:-1]  # a download (s3://b/prod.env .env): the last is its target
    # a URL or a remote (s3://b/.env, remote:x) is the other side, not a local file
    words = [w for w in operands if not _REMOTE.match(w.text)]
    if inv.name == "gh":
        head = [w.text for w in words[:2]]
        if head not in (["gist", "create"], ["gist", "edit"], ["release", "upload"]):
            return None
    for word in words:
        found = judge_read(run, word, f"{inv.shown} (an upload)")
        if found is not None:
            return found
    return None


_PASS_SUBCOMMANDS = word_set(
    "init ls list find search insert add edit generate rm remove delete mv rename cp copy git "
    "help version grep sync setup config audit templates clone fsck"
)


def _reveals_password(inv: Invocation) -> str | None:
    """The subcommand when ``inv`` prints a stored password or secret."""
    args = [w.text for w in inv.args]
    words = [a for a in args if not a.startswith("-")]
    first = words[0] if words else ""
    if inv.name == "security":
        if first in ("find-generic-password", "find-internet-password") and (
            {"-w", "-g"} & set(args)
        ):
            return first
        return first if first == "dump-keychain" else None
    if inv.name == "secret-tool":
        return first if first in ("lookup", "search") else None
    if inv.name in ("pass", "gopass"):
        if first in ("show", "cat", "otp"):
            return first
        return "show" if first and first not in _PASS_SUBCOMMANDS else None
    if inv.name == "op":
        if first == "read" or (words[:2] == ["item", "get"] and "--reveal" in args):
            return " ".join(words[:2]) if first != "read" else "read"
        return None
    if inv.name == "bw":
        return "get" if first == "get" else None
    if inv.name in ("lpass", "keepassxc-cli"):
        return first if first == "show" else None
    return None


def _rule_password_store(inv: Invocation, run: Run) -> Finding | None:
    """Keychains and password managers asked for a secret (``security
    find-generic-password -w``, ``secret-tool lookup``, ``pass show``, ``op read``,
    ``bw get``, ``lpass show``)."""
    sub = _reveals_password(inv)
    if sub is None:
        return None
    shown = f"{inv.shown} {sub}"
    return Finding(
        "sensitive-read",
        shown,
        f"{shown} prints a secret from the user's keychain or password store (token {sub!r})",
    )


RULES: dict[str, tuple[Rule, ...]] = {
    **dict.fromkeys(_UPLOADERS | {"gh"}, (_rule_uploads,)),
    **dict.fromkeys(
        word_set("security secret-tool pass gopass op bw lpass keepassxc-cli"),
        (_rule_password_store,),
    ),
    "gpg": (_rule_gpg,),
    "openssl": (_rule_openssl,),
    "python": (_rule_python_module,),
    "git": (_rule_git_reads,),
}
GENERIC: tuple[Rule, ...] = (_rule_reads,)
