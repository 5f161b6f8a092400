"""Option grammars and operand extractors shared by the writer and reader tables
(which words of ``cp``, ``curl``, ``sed -i``... a command writes or reads).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import replace

from ..shell import Word
from .invocation import Invocation
from .options import Opts, derived, opts, parse_opts

Extract = Callable[["Invocation"], list[Word]]


RM = opts(
    long="force interactive one-file-system no-preserve-root preserve-root recursive dir "
    "verbose help version",
    alias={"r": "recursive", "R": "recursive", "f": "force", "d": "dir", "v": "verbose"},
)
"""``rm`` (and ``unlink``, whose operands it reads alike: no option takes a value)."""

MV = opts(
    "tS",
    "force interactive no-clobber no-target-directory update verbose strip-trailing-slashes "
    "backup context help version exchange no-copy",
    "target-directory suffix",
    {"t": "target-directory", "S": "suffix"},
)


# -- writers and readers (tables) ---------------------------------------------------------------


def operands_of(spec: Opts) -> Extract:
    return lambda inv: parse_opts(inv.args, spec).operands


def copy_targets(spec: Opts) -> Extract:
    """Destination of cp/mv/install/ln/rsync/scp, plus destination/<source name>."""

    def extract(inv: Invocation) -> list[Word]:
        parsed = parse_opts(inv.args, spec)
        target = parsed.value("--target-directory")
        sources = parsed.operands if target is not None else parsed.operands[:-1]
        if target is None:
            if len(parsed.operands) < 2:
                return []
            target = parsed.operands[-1]
        joined = [
            replace(target, text=target.text.rstrip("/") + "/" + posixpath.basename(s.text))
            for s in sources
            if posixpath.basename(s.text)
        ]
        return [target, *joined]

    return extract


def copy_sources(spec: Opts) -> Extract:
    def extract(inv: Invocation) -> list[Word]:
        parsed = parse_opts(inv.args, spec)
        if parsed.value("--target-directory") is not None:
            return parsed.operands
        return parsed.operands[:-1]

    return extract


def option_values(spec: Opts, *flags: str) -> Extract:
    def extract(inv: Invocation) -> list[Word]:
        return [w for flag, w in parse_opts(inv.args, spec).values if flag in flags]

    return extract


def keyed(key: str) -> Extract:
    """``dd``-style ``key=value`` operands."""
    prefix = key + "="
    return lambda inv: [
        derived(w.text[len(prefix) :]) for w in inv.args if w.text.startswith(prefix)
    ]


def in_place(spec: Opts, script_flags: tuple[str, ...], inline_flag: str) -> Extract:
    """Files edited by ``sed -i``/``perl -i``: operands after the script."""

    def extract(inv: Invocation) -> list[Word]:
        parsed = parse_opts(inv.args, spec)
        if not parsed.has(inline_flag, "--in-place"):
            return []
        return parsed.operands if parsed.has(*script_flags) else parsed.operands[1:]

    return extract


_AWK_INPLACE = opts(
    "fvFiEe",
    long_arg="file assign field-separator include exec source",
    alias={"f": "file", "v": "assign", "F": "field-separator", "i": "include", "E": "exec"},
)


def awk_in_place(inv: Invocation) -> list[Word]:
    """Files edited by ``gawk -i inplace PROGRAM FILE...`` (``--include=inplace``,
    ``-iinplace``): the operands after the program, all of them under ``-f``/``-e``."""
    parsed = parse_opts(inv.args, _AWK_INPLACE)
    included = [w.text for flag, w in parsed.values if flag == "--include"]
    if not any(t.removesuffix(".awk") == "inplace" for t in included):
        return []
    given = parsed.has("--file", "--source", "--exec")
    return parsed.operands if given else parsed.operands[1:]


def pattern_first(spec: Opts, given: tuple[str, ...], files: tuple[str, ...]) -> Extract:
    """Readers whose first operand is a pattern/program unless one came by option."""

    def extract(inv: Invocation) -> list[Word]:
        parsed = parse_opts(inv.args, spec)
        read = [w for flag, w in parsed.values if flag in files]
        return read + (parsed.operands if parsed.has(*given) else parsed.operands[1:])

    return extract


def skip_operands(spec: Opts, count: int) -> Extract:
    return lambda inv: parse_opts(inv.args, spec).operands[count:]


def tar_inputs(inv: Invocation) -> list[Word]:
    args = list(inv.args)
    if args and not args[0].text.startswith("-") and args[0].text.isalpha():
        args[0] = replace(args[0], text="-" + args[0].text)  # old style: tar czf x.tgz dir
    parsed = parse_opts(args, TAR)
    return [*parsed.operands, *(w for flag, w in parsed.values if flag == "--files-from")]


def _openssl_inputs(inv: Invocation) -> list[Word]:
    args = inv.args
    return [
        args[i + 1]
        for i in range(len(args) - 1)
        if args[i].text in ("-in", "-inkey", "-key", "-kfile", "-signkey")
    ]


_CURL_DATA = frozenset(
    {"--data", "--data-binary", "--data-ascii", "--data-urlencode", "--json", "-d"}
)
_CURL_FORM = re.compile(r"=[@<]([^;]+)")
CURL = opts(
    "dFTKHXouAebcwmxyYzrCEDtUQP",  # not -O: --remote-name takes no value
    "silent show-error fail location insecure include head verbose compressed remote-name "
    "progress-bar globoff",
    "data data-binary data-ascii data-urlencode data-raw json form form-string upload-file "
    "config header request output user user-agent referer cookie cookie-jar write-out "
    "max-time proxy range cert key cacert url connect-timeout retry dump-header output-dir",
    {"d": "data", "F": "form", "T": "upload-file", "K": "config", "o": "output"},
)


def curl_uploads(inv: Invocation) -> list[Word]:
    files: list[Word] = []
    for flag, word in parse_opts(inv.args, CURL).values:
        t = word.text
        if flag in _CURL_DATA or flag == "--data":
            _, at, path = t.partition("@")
            if at and (t.startswith("@") or flag == "--data-urlencode"):
                files.append(derived(path))
        elif flag in ("--form", "-F"):
            files += [derived(m.group(1)) for m in _CURL_FORM.finditer(t)]
        elif flag in ("--upload-file", "--config"):
            files.append(word)
    return files


WGET = opts(
    "OoaiePUtTwQl",
    "quiet verbose no-verbose continue spider server-response",
    "output-document output-file append-output input-file post-file body-file post-data "
    "user-agent header user password tries timeout method directory-prefix",
    {"O": "output-document", "P": "directory-prefix"},
)

CP = opts(
    "tS",
    "archive force interactive link dereference no-clobber no-dereference preserve "
    "no-preserve parents recursive reflink remove-destination sparse strip-trailing-slashes "
    "symbolic-link no-target-directory update verbose one-file-system help version",
    "target-directory suffix",
    {"t": "target-directory", "S": "suffix", "r": "recursive", "R": "recursive"},
)
INSTALL = opts(
    "tSmogZ",
    "compare directory preserve-timestamps strip verbose help version",
    "target-directory suffix mode owner group",
    {"t": "target-directory", "S": "suffix"},
)
LN = opts(
    "tS",
    "force symbolic relative no-dereference logical physical verbose help version",
    "target-directory suffix",
    {"t": "target-directory", "S": "suffix"},
)
SCP = opts("cFiJlPSoDX")
RSYNC = opts(
    "eBfMT",
    "archive verbose recursive compress delete progress dry-run",
    "rsh filter exclude include exclude-from include-from files-from chmod chown temp-dir "
    "partial-dir compare-dest link-dest copy-dest log-file password-file",
)
TEE = opts(long="append ignore-interrupts help version", long_arg="output-error")
SED = opts(
    "efl",
    "quiet silent posix regexp-extended separate null-data",
    "expression file",
    {"e": "expression", "f": "file"},
    short_optional="i",
)
PERL = opts("eEIMmlx0", short_optional="i")
TRUNCATE = opts("sr", "no-create io-blocks", "size reference")
SPONGE = opts()
PLAIN = opts()
GREP = opts(
    "efmABCdD",
    "recursive ignore-case count files-with-matches line-number invert-match word-regexp "
    "extended-regexp fixed-strings perl-regexp only-matching no-filename with-filename",
    "regexp file max-count after-context before-context context label binary-files devices "
    "directories exclude include exclude-dir exclude-from",
    {"e": "regexp", "f": "file"},
)
RG = opts(
    "efmABCgtTjMrdE",
    "ignore-case count files-with-matches line-number invert-match word-regexp fixed-strings "
    "hidden no-ignore follow json",
    "regexp file max-count after-context before-context context glob type type-not replace "
    "max-depth threads encoding max-filesize pre sort sortr colors",
    {"e": "regexp", "f": "file"},
)
AWK = opts("fvF", long_arg="file assign field-separator", alias={"f": "file"})
JQ = opts(
    "fL",
    "raw-output compact-output slurp null-input exit-status",
    "from-file indent",
    {"f": "from-file"},
)
TAR = opts(
    "fCTXbKgLNV",
    "create extract get list gzip bzip2 xz zstd verbose",
    "file directory files-from exclude-from exclude transform",
    {"T": "files-from", "f": "file", "C": "directory"},
)
ZIP = opts("bnPtx")
UNZIP = opts("dxP", long="")
SEVEN_Z = opts("o")
PATCH = opts(
    "pioBDFdrzVYg",
    "forward reverse batch force dry-run silent quiet verbose backup unified context normal "
    "ed posix binary help version",
    "strip input output directory reject-file prefix ifdef fuzz suffix version-control "
    "basename-prefix get",
    {"i": "input", "o": "output", "d": "directory", "p": "strip", "r": "reject-file"},
)


def editor(short_arg: str, read_only: frozenset[str]) -> Extract:
    """Files an interactive editor opens for writing (none in a read-only mode)."""
    spec = opts(short_arg, long_arg="cmd eval load funcall directory")

    def extract(inv: Invocation) -> list[Word]:
        parsed = parse_opts(inv.args, spec)
        if parsed.has(*read_only):
            return []
        return [w for w in parsed.operands if not w.text.startswith("+")]

    return extract


def download_into(spec: Opts, flag: str) -> Extract:
    """Files a downloader saves into a directory option (``wget -P DIR URL``, ``curl
    --output-dir DIR -O URL``): ``DIR/<the URL's last path segment>``, or ``DIR`` itself
    when a URL ends with ``/``."""

    def extract(inv: Invocation) -> list[Word]:
        parsed = parse_opts(inv.args, spec)
        folder = parsed.value(flag)
        if folder is None:
            return []
        names = [w.text for w in inv.args if "://" in w.text]
        output = parsed.value("--output")
        if output is not None:
            names.append(output.text)
        base = folder.text.rstrip("/")
        out = [
            replace(folder, text=f"{base}/{name.split('?')[0].rstrip('/').rsplit('/', 1)[-1]}")
            for name in names
        ]
        return out or [folder]

    return extract
