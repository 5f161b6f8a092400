"""Rule family ``secrets``: commands that read or upload sensitive files.

Rules (the rule id leads the block reason):

- ``sensitive-read``: a file operand of a reader (``cat``, ``head``, ``less``, ``base64``,
  ``xxd``, ``strings``, ``grep`` (files, not the pattern), ``sed``, ``awk``, ``jq``,
  ``cp``/``mv``/``scp``/``rsync``/``ln`` sources, ``tar``/``zip``/``gzip``/``gpg``,
  ``openssl -in``, ``dd if=``, ``source``...), an input redirection, or a ``curl``/``wget``
  upload (``-d @file``, ``-F x=@file``, ``-T``, ``--post-file``) naming a path that
  :func:`.security_audit.match_sensitive` flags -- the same list the file-tool guard
  uses.  ``source ~/.bashrc`` is allowed (loading a profile does not reveal it).
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Finding, _Invocation, _set
from .operands import (
    _AWK,
    _CP,
    _GREP,
    _INSTALL,
    _JQ,
    _LN,
    _MV,
    _PLAIN,
    _RG,
    _RSYNC,
    _SCP,
    _SED,
    _WGET,
    _ZIP,
    Extract,
    _copy_sources,
    _curl_uploads,
    _keyed,
    _openssl_inputs,
    _operands,
    _option_values,
    _pattern_first,
    _skip_operands,
    _tar_inputs,
)
from .run import Rule, _judge_read, _Run


@dataclass(frozen=True, slots=True)
class _Reader:
    extract: Extract
    exempt: frozenset[str] = frozenset()  # sensitive rules that do not apply


_PLAIN_READERS = _set(
    "cat tac head tail less more most bat nl base64 base32 basenc xxd od hexdump hd strings "
    "sort uniq cut paste diff cmp comm fold fmt rev column iconv view xclip xsel gzip bzip2 "
    "xz zstd lz4 gpg split"
)

_READERS: dict[str, _Reader] = {
    **dict.fromkeys(_PLAIN_READERS, _Reader(_operands(_PLAIN))),
    "grep": _Reader(_pattern_first(_GREP, ("--regexp", "--file"), ("--file",))),
    "rg": _Reader(_pattern_first(_RG, ("--regexp", "--file"), ("--file",))),
    "ag": _Reader(_pattern_first(_RG, ("--regexp",), ())),
    "ack": _Reader(_pattern_first(_RG, ("--regexp",), ())),
    "sed": _Reader(_pattern_first(_SED, ("--expression", "--file"), ("--file",))),
    "awk": _Reader(_pattern_first(_AWK, ("--file",), ("--file",))),
    "jq": _Reader(_pattern_first(_JQ, ("--from-file",), ("--from-file",))),
    "cp": _Reader(_copy_sources(_CP)),
    "mv": _Reader(_copy_sources(_MV)),
    "install": _Reader(_copy_sources(_INSTALL)),
    "ln": _Reader(_copy_sources(_LN)),
    "scp": _Reader(_copy_sources(_SCP)),
    "rsync": _Reader(_copy_sources(_RSYNC)),
    "tar": _Reader(_tar_inputs),
    "zip": _Reader(_skip_operands(_ZIP, 1)),
    "7z": _Reader(_skip_operands(_PLAIN, 2)),
    "openssl": _Reader(_openssl_inputs),
    "dd": _Reader(_keyed("if")),
    "curl": _Reader(_curl_uploads),
    "wget": _Reader(_option_values(_WGET, "--post-file", "--body-file")),
    "source": _Reader(lambda inv: inv.args[:1], frozenset({"shell-profile"})),
    ".": _Reader(lambda inv: inv.args[:1], frozenset({"shell-profile"})),
}


def _rule_reads(inv: _Invocation, run: _Run) -> Finding | None:
    reader = _READERS.get(inv.name)
    if reader is None:
        return None
    for word in reader.extract(inv):
        found = _judge_read(run, word, inv.name, reader.exempt)
        if found is not None:
            return found
    return None


def _rule_gpg(inv: _Invocation, run: _Run) -> Finding | None:
    for word in inv.args:
        if word.text.startswith("--export-secret"):
            return Finding(
                "sensitive-read",
                word.text,
                f"gpg {word.text} exports private keys from the keyring (token {word.text!r})",
            )
    return None


RULES: dict[str, tuple[Rule, ...]] = {"gpg": (_rule_gpg,)}
GENERIC: tuple[Rule, ...] = (_rule_reads,)
