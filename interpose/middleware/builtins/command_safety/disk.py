"""Rule family ``disk``: devices overwritten, formatted or repartitioned.

Rules (the rule id leads the block reason):

- ``disk``: ``dd of=/dev/<disk>``, ``mkfs*``/``mkswap`` on a device, partition editors
  (``fdisk``, ``sfdisk``, ``parted``, ``gdisk``, ``wipefs -a``, ``blkdiscard``) unless
  only listing, ``shred``/``cp``/``tee``/redirection onto a device.  ``/dev/null``,
  ``/dev/zero``, ``/dev/std*``, ``/dev/tty``, ``/dev/fd/*`` and friends are not devices.
"""

from __future__ import annotations

import re

from ..shell import Word
from .model import Finding, _Invocation, _is_device, _set
from .run import Rule, _Run

# -- disk ------------------------------------------------------------------------------------

_READ_ONLY_FLAGS: dict[str, frozenset[str]] = {
    "fdisk": frozenset({"-l", "--list", "-s", "--getsz"}),
    "sfdisk": _set(
        "-l --list -d --dump -s --show-size -J --json -V --verify -g --show-geometry -F "
        "--list-free -r --reorder"
    ),
    "gdisk": frozenset({"-l"}),
    "sgdisk": frozenset({"-p", "--print", "-i", "--info", "-v", "--verify"}),
    "cfdisk": frozenset(),
    "blkdiscard": frozenset(),
}
_PARTED_WRITES = _set(
    "mklabel mktable mkpart mkpartfs rm resizepart resize mkfs rescue move cp set toggle name"
)
_WIPEFS_WRITES = re.compile(r"^(?:--all|--offset(?:=.*)?|-[a-zA-Z]*[ao][a-zA-Z0-9]*)$")


def _device_operands(inv: _Invocation, run: _Run) -> list[tuple[Word, str]]:
    return [(w, path) for w in inv.args if _is_device(path := run.path(w))]


def _rule_mkfs(inv: _Invocation, run: _Run) -> Finding | None:
    for word, path in _device_operands(inv, run):
        return Finding(
            "disk", word.text, f"{inv.shown} formats the device {path!r} (token {word.text!r})"
        )
    return None


def _rule_partitioner(inv: _Invocation, run: _Run) -> Finding | None:
    devices = _device_operands(inv, run)
    if not devices:
        return None
    texts = {w.text for w in inv.args}
    if inv.name == "parted":
        if texts.isdisjoint(_PARTED_WRITES):
            return None
    elif inv.name == "wipefs":
        if not any(_WIPEFS_WRITES.match(t) for t in texts):
            return None
    elif not texts.isdisjoint(_READ_ONLY_FLAGS.get(inv.name, frozenset())):
        return None
    word, path = devices[0]
    return Finding(
        "disk",
        word.text,
        f"{inv.shown} rewrites the partition table or signatures of {path!r} (token {word.text!r})",
    )


RULES: dict[str, tuple[Rule, ...]] = {
    "mkfs": (_rule_mkfs,),
    **dict.fromkeys((*_READ_ONLY_FLAGS, "parted", "wipefs"), (_rule_partitioner,)),
}
