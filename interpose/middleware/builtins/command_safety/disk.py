"""Rule family ``disk``: devices overwritten, formatted or repartitioned.

Rules (the rule id leads the block reason):

- ``disk``: ``dd of=/dev/<disk>``, ``mkfs*``/``mke2fs``/``mkswap`` on a device, partition
  editors (``fdisk``, ``sfdisk``, ``parted``, ``gdisk``, ``sgdisk``, ``wipefs -a``,
  ``blkdiscard``) unless only listing or pretending (``sgdisk -p``/``-P``/``--backup=FILE``,
  ``wipefs -n``, ``sfdisk -n``, ``mkfs.ext4 -n``, ``mkntfs -n``, ``mkfs.xfs -N``,
  ``zpool create -n``),
  ``shred``/``scrub``/``cp``/``tee``/redirection (``cat img > /dev/sdb``) onto a device;
  wipers and imagers that take a device (``nwipe``, ``bmaptool copy``, ``ddrescue``'s
  output, ``partclone.* -o``, ``dcfldd``/``dc3dd of=``/``wipe=``, ``etcher``, ``woeusb``,
  ``sg_format``); destructive modes of device tools (``cryptsetup luksFormat``/``erase``/
  ``luksErase``/``reencrypt``, ``badblocks -w``, ``nvme format``/``sanitize``,
  ``hdparm --security-erase``/``--write-sector``..., ``flashrom -w``/``-E``, ``mdadm
  --zero-superblock``/``--create``, ``blkzone reset``); volume managers removing volumes
  (``lvremove``, ``vgremove``, ``pvremove`` unless ``--test``; ``pvcreate``/``vgcreate``
  forced with ``-f``/``-ff``/``-y`` over a device; ``zpool destroy``/
  ``labelclear``/``create`` on devices; ``zfs destroy`` of a dataset or with ``-r``/``-R``
  unless ``-n``; ``dmsetup remove_all``/``wipe_table``/``remove --force``); macOS
  ``diskutil eraseDisk``/``zeroDisk``/``secureErase``/``partitionDisk``/``apfs
  deleteContainer`` and ``newfs_*``; ``shred``/``scrub`` of files under system
  directories (``shred -u /var/log/auth.log``); ``dd``/``dcfldd``/``dc3dd`` copying
  without ``count=`` onto a target only run time knows (``dd if=img of=$DEV``).  When the device is
  named by a value only run time knows (``mkfs.ext4 $DEV``, ``wipefs -a "$(...)"``), the
  destructive mode is refused as an unknown target.  Allowed: listing and reading
  (``lsblk``, ``blkid``, ``smartctl``, ``nvme list``, ``cryptsetup status``/``luksDump``/
  ``open``, ``badblocks`` read-only, ``dd if=/dev/sda of=disk.img``, ``ddrescue`` onto an
  image file, ``mkfs`` of an image file, ``shred`` of a project file, ``zfs destroy`` of a
  snapshot).  ``/dev/null``, ``/dev/zero``, ``/dev/std*``, ``/dev/tty``, ``/dev/fd/*`` and
  friends are not devices, nor are sound, framebuffer, printer and serial character devices
  (``/dev/dsp``, ``/dev/snd/*``, ``/dev/fb0``, ``/dev/lp0``, ``/dev/ttyUSB0``...); an
  unknown ``/dev`` name is.
"""

from __future__ import annotations

import re

from ..shell import SUBST, Word
from .invocation import Invocation
from .model import Finding
from .options import opts, parse_opts, word_set
from .paths import SYSTEM_DIRS, TEMP_DIRS, is_device, keyed_values, show
from .run import Rule, Run

# -- disk ------------------------------------------------------------------------------------

_READ_ONLY_FLAGS: dict[str, frozenset[str]] = {
    "fdisk": frozenset({"-l", "--list", "-s", "--getsz"}),
    "sfdisk": word_set(
        "-l --list -d --dump -s --show-size -J --json -V --verify -g --show-geometry -F "
        "--list-free -r --reorder -n --no-act"
    ),
    "gdisk": frozenset({"-l"}),
    "sgdisk": word_set("-p --print -i --info -v --verify -P --pretend -O --print-mbr -b --backup"),
    "cfdisk": frozenset(),
    "blkdiscard": frozenset(),
}
_PARTED_WRITES = word_set(
    "mklabel mktable mkpart mkpartfs rm resizepart resize mkfs rescue move cp set toggle name"
)
_WIPEFS_WRITES = re.compile(r"^(?:--all|--offset(?:=.*)?|-[a-zA-Z]*[ao][a-zA-Z0-9]*)$")
_WIPEFS_DRY = frozenset({"-n", "--no-act", "-na", "-an"})
_MKFS_DRY: dict[str, frozenset[str]] = {
    # The dry-run flag differs per file system, and the same letter means something else
    # elsewhere (mkfs.vfat -n LABEL, mkfs.btrfs -n NODESIZE, mkfs.xfs -n naming options):
    # only the manual's "do not actually create" flag of each counts.
    **dict.fromkeys(("ext2", "ext3", "ext4", "mke2fs"), frozenset({"-n"})),
    **dict.fromkeys(("ntfs", "mkntfs"), frozenset({"-n", "--no-action"})),
    "xfs": frozenset({"-N"}),
}


def _mkfs_dry_run(inv: Invocation) -> bool:
    """``mkfs.ext4 -n``, ``mke2fs -n``, ``mkfs -t ext4 -n``, ``mkntfs --no-action``,
    ``mkfs.xfs -N``: the formatter only prints what it would do."""
    kind = inv.shown.lower().removeprefix("mkfs.")
    texts = [w.text for w in inv.args]
    if "-t" in texts[:-1]:
        kind = texts[texts.index("-t") + 1]
    dry = _MKFS_DRY.get(kind, frozenset())
    return any(t in dry for t in texts)


def _device_operands(inv: Invocation, run: Run) -> list[tuple[Word, str]]:
    return [(w, path) for w in inv.args if is_device(path := run.path(w))]


def _unknown(run: Run, word: Word) -> bool:
    """Whether ``word`` names a path only run time knows (``$DEV``, ``$(pick-disk)``)."""
    if run.probing or ("$" not in word.text and SUBST not in word.text):
        return False
    path = run.path(word)
    return "$" in path or SUBST in path


def _wipes(inv: Invocation, word: Word, path: str, how: str) -> Finding:
    return Finding(
        "disk",
        word.text,
        f"{inv.shown} {how} the device {show(path)!r} (token {show(word.text)!r})",
    )


def _wipes_unknown(inv: Invocation, word: Word, how: str) -> Finding:
    return Finding(
        "disk",
        word.text,
        f"{inv.shown} {how} a device named by {show(word.text)!r}, which is known only at "
        f"run time: a destructive disk command with an unknown target is refused",
    )


def _judge_targets(
    inv: Invocation,
    run: Run,
    words: list[Word],
    how: str,
    *,
    unknown: list[Word] | None = None,
) -> Finding | None:
    """Refuse when one of ``words`` is a device, or one of ``unknown`` (default: ``words``)
    is a path only run time knows."""
    for word in words:
        path = run.path(word)
        if is_device(path):
            return _wipes(inv, word, path, how)
    for word in words if unknown is None else unknown:
        if _unknown(run, word):
            return _wipes_unknown(inv, word, how)
    return None


def _rule_mkfs(inv: Invocation, run: Run) -> Finding | None:
    if _mkfs_dry_run(inv):
        return None
    for word, path in _device_operands(inv, run):
        return _wipes(inv, word, path, "formats")
    if inv.args and not inv.args[-1].text.startswith("-"):
        # the device comes last (a block count may follow it)
        last = inv.args[-2] if inv.args[-1].text.isdigit() and len(inv.args) > 1 else inv.args[-1]
        if _unknown(run, last):
            return _wipes_unknown(inv, last, "formats")
    return None


def _rule_partitioner(inv: Invocation, run: Run) -> Finding | None:
    devices = _device_operands(inv, run)
    if not devices:
        return None
    texts = {w.text for w in inv.args}
    if inv.name == "parted":
        if texts.isdisjoint(_PARTED_WRITES):
            return None
    elif inv.name == "wipefs":
        if not any(_WIPEFS_WRITES.match(t) for t in texts) or texts & _WIPEFS_DRY:
            return None
    elif inv.name == "sgdisk":  # every option is an action: all must only read
        # --backup=FILE writes FILE and only reads the disk
        if texts & {"-P", "--pretend"} or all(
            t.split("=", 1)[0] in _READ_ONLY_FLAGS["sgdisk"] for t in texts if t.startswith("-")
        ):
            return None
    elif not texts.isdisjoint(_READ_ONLY_FLAGS.get(inv.name, frozenset())):
        return None
    word, path = devices[0]
    return Finding(
        "disk",
        word.text,
        f"{inv.shown} rewrites the partition table or signatures of {path!r} (token {word.text!r})",
    )


def _rule_partitioner_unknown(inv: Invocation, run: Run) -> Finding | None:
    """``wipefs -a $DEV``, ``sgdisk --zap-all "$DISK"``, ``blkdiscard $D``: destructive
    modes with a device only run time knows."""
    texts = {w.text for w in inv.args}
    if inv.name == "parted":
        return None  # parted names its actions; a variable there is usually a size
    if inv.name == "wipefs":
        if not any(_WIPEFS_WRITES.match(t) for t in texts) or texts & _WIPEFS_DRY:
            return None
    elif not texts.isdisjoint(_READ_ONLY_FLAGS.get(inv.name, frozenset())):
        return None
    operands = [w for w in inv.args if not w.text.startswith("-")]
    for word in operands[-1:]:
        if _unknown(run, word):
            return _wipes_unknown(inv, word, "rewrites the partition table or signatures of")
    return None


# -- tools with destructive modes ---------------------------------------------------------------

_CRYPTSETUP_WIPES = word_set("luksformat format erase lukserase reencrypt lukskillslot convert")


_CRYPTSETUP = opts(
    "csdSihIlbMTt",
    "verbose debug batch-mode yes readonly force-password disable-locks",
    "type cipher key-size hash key-file key-slot pbkdf iter-time label header sector-size "
    "uuid subsystem pbkdf-memory pbkdf-parallel keyfile-size keyfile-offset new-keyfile "
    "integrity luks2-metadata-size luks2-keyslots-size offset align-payload timeout tries "
    "token-id master-key-file volume-key-file key-description",
    {
        "c": "cipher",
        "s": "key-size",
        "h": "hash",
        "d": "key-file",
        "S": "key-slot",
        "i": "iter-time",
        "M": "type",
        "I": "integrity",
        "l": "keyfile-size",
    },
)


def _rule_cryptsetup(inv: Invocation, run: Run) -> Finding | None:
    operands = parse_opts(inv.args, _CRYPTSETUP).operands
    if not operands or operands[0].text.lower() not in _CRYPTSETUP_WIPES:
        return None
    how = f"{operands[0].text} destroys the data (or the keys to it) on"
    # the device comes first; a value of an option the table does not know may precede it
    return _judge_targets(inv, run, operands[1:], how, unknown=operands[1:2])


def _rule_badblocks(inv: Invocation, run: Run) -> Finding | None:
    parsed = parse_opts(inv.args, opts("bcdeiopt", long="help"))
    if not parsed.has("-w"):
        return None  # read-only (default) or non-destructive read-write (-n)
    return _judge_targets(inv, run, parsed.operands[:1], "overwrites every block of")


def _rule_nwipe(inv: Invocation, run: Run) -> Finding | None:
    texts = {w.text for w in inv.args}
    if texts & {"-h", "--help", "-V", "--version"}:
        return None
    devices = [w for w in inv.args if not w.text.startswith("-")]
    found = _judge_targets(inv, run, devices, "wipes")
    if found is not None:
        return found
    return Finding(
        "disk",
        inv.shown,
        f"{inv.shown} wipes the disks it finds or is given (command {inv.snippet()!r})",
    )


def _rule_any_device(how: str) -> Rule:
    """Tools whose every device operand (``--drive=/dev/sdb`` included) is written."""

    def rule(inv: Invocation, run: Run) -> Finding | None:
        for word in inv.args:
            text = word.text.partition("=")[2] if word.text.startswith("-") else word.text
            if not text:
                continue
            value = Word(text, tilde=text.startswith("~"))
            path = run.path(value)
            if is_device(path):
                return _wipes(inv, word, path, how)
        return None

    return rule


def _rule_bmaptool(inv: Invocation, run: Run) -> Finding | None:
    operands = [w for w in inv.args if not w.text.startswith("-")]
    if not operands or operands[0].text not in ("copy", "flash"):
        return None
    return _judge_targets(inv, run, operands[-1:], "writes an image over")


_NVME_WIPES = word_set("format sanitize write-zeroes write-uncor delete-ns detach-ns")


def _rule_nvme(inv: Invocation, run: Run) -> Finding | None:
    if not inv.args or inv.args[0].text not in _NVME_WIPES:
        return None
    target = next((w for w in inv.args[1:] if not w.text.startswith("-")), None)
    shown = show(target.text) if target is not None else "its device"
    return Finding(
        "disk",
        target.text if target is not None else inv.args[0].text,
        f"{inv.shown} {inv.args[0].text} erases or detaches the NVMe namespace {shown!r}",
    )


_DDRESCUE = opts("bcdeimJKLOpsSTuxZ", long_arg="")


def _rule_ddrescue(inv: Invocation, run: Run) -> Finding | None:
    operands = parse_opts(inv.args, _DDRESCUE).operands
    return _judge_targets(inv, run, operands[1:2], "writes a rescued image over")


_PARTCLONE = opts("osOLTa", long_arg="output source overwrite logfile")


def _rule_partclone(inv: Invocation, run: Run) -> Finding | None:
    parsed = parse_opts(inv.args, _PARTCLONE)
    outputs = [w for flag, w in parsed.values if flag in ("-o", "-O", "--output", "--overwrite")]
    return _judge_targets(inv, run, outputs, "writes a partition image over")


_IMAGER_KEYS = ("of", "hof", "ofs", "hofs", "wipe", "hwipe", "of1", "of2")


def _rule_dd_unknown(inv: Invocation, run: Run) -> Finding | None:
    """``dd if=img of=$DEV``: an unbounded copy onto a target only run time knows is how
    disks are flashed and wiped; a bounded one (``count=``) is how files are made."""
    if any(w.text.startswith("count=") for w in inv.args):
        return None
    for word in keyed_values(inv.args, _IMAGER_KEYS):
        if _unknown(run, word):
            return _wipes_unknown(inv, word, "copies its whole input onto")
    return None


def _rule_imager(inv: Invocation, run: Run) -> Finding | None:
    """``dcfldd``/``dc3dd``: ``dd``-style keys, several of which write."""
    return _judge_targets(inv, run, keyed_values(inv.args, _IMAGER_KEYS), "writes over")


_HDPARM_WRITES = re.compile(
    r"^--(?:security-erase(?:-enhanced)?|security-set-pass|security-disable|write-sector"
    r"|make-bad-sector|trim-sector-ranges(?:-stdin)?|fwdownload[-a-z]*|dco-restore|dco-setmax"
    r"|yes-i-know-what-i-am-doing)$"
)


def _rule_hdparm(inv: Invocation, run: Run) -> Finding | None:
    flag = next((w.text for w in inv.args if _HDPARM_WRITES.match(w.text)), None)
    if flag is None:
        return None
    targets = [w for w in inv.args if w.text.startswith("/") or "$" in w.text][-1:]
    return _judge_targets(inv, run, targets, f"{flag} erases or rewrites") or Finding(
        "disk", flag, f"{inv.shown} {flag} erases or rewrites a drive (command {inv.snippet()!r})"
    )


def _rule_flashrom(inv: Invocation, run: Run) -> Finding | None:
    parsed = parse_opts(inv.args, opts("prwvlcio", long_arg="programmer read write verify"))
    if not parsed.has("-w", "--write", "-E", "--erase"):
        return None
    return Finding(
        "disk",
        inv.shown,
        f"{inv.shown} writes or erases the firmware flash chip (command {inv.snippet()!r})",
    )


def _rule_mdadm(inv: Invocation, run: Run) -> Finding | None:
    texts = [w.text for w in inv.args]
    flag = next(
        (t for t in texts if t in ("--zero-superblock", "--create", "-C", "--build", "-B")), None
    )
    if flag is None:
        return None
    return Finding(
        "disk",
        flag,
        f"{inv.shown} {flag} overwrites RAID metadata on its member devices "
        f"(command {inv.snippet()!r})",
    )


def _rule_volume_remove(inv: Invocation, run: Run) -> Finding | None:
    texts = {w.text for w in inv.args}
    if texts & {"-t", "--test", "-h", "--help", "--version"}:
        return None
    operands = [w for w in inv.args if not w.text.startswith("-")]
    if not operands and not texts & {"-a", "--all", "--select", "-S"}:
        return None
    shown = show(operands[0].text) if operands else "the selected volumes"
    return Finding(
        "disk",
        operands[0].text if operands else inv.shown,
        f"{inv.shown} removes {shown!r} and the data on it",
    )


_LVM_FORCE = re.compile(r"^(?:-f+|-[a-zA-Z]*f[a-zA-Z]*|--force|-y|--yes)$")


def _rule_lvm_create(inv: Invocation, run: Run) -> Finding | None:
    """``pvcreate -ff DEV``, ``vgcreate -f VG DEV``: initialise a device for LVM without
    the check that refuses (or asks) when it holds a file system or another volume.
    Unforced, both stop before destroying data, so they are allowed; ``lvcreate`` only
    allocates free extents and is not judged."""
    if not any(_LVM_FORCE.match(w.text) for w in inv.args):
        return None
    operands = [w for w in inv.args if not w.text.startswith("-")]
    return _judge_targets(inv, run, operands, "forces LVM metadata over")


def _rule_zpool(inv: Invocation, run: Run) -> Finding | None:
    if not inv.args:
        return None
    action = inv.args[0].text
    if action in ("destroy", "labelclear"):
        target = next((w for w in inv.args[1:] if not w.text.startswith("-")), None)
        shown = show(target.text) if target is not None else "a pool"
        return Finding("disk", action, f"{inv.shown} {action} wipes {shown!r}")
    if action == "create":
        if any(w.text == "-n" for w in inv.args[1:]):
            return None  # dry run: prints the layout it would create
        return _judge_targets(
            inv, run, [w for w in inv.args[1:] if w.text.startswith("/dev/")], "formats"
        )
    return None


def _rule_zfs(inv: Invocation, run: Run) -> Finding | None:
    if not inv.args or inv.args[0].text != "destroy":
        return None
    parsed = parse_opts(inv.args[1:], opts())
    if parsed.has("-n"):
        return None  # dry run
    target = parsed.operands[0].text if parsed.operands else ""
    if "@" in target and not parsed.has("-r", "-R"):
        return None  # one snapshot
    return Finding(
        "disk",
        target or "destroy",
        f"{inv.shown} destroy {' '.join(w.text for w in parsed.options)} removes the dataset "
        f"{show(target)!r} and its data".replace("  ", " "),
    )


def _rule_dmsetup(inv: Invocation, run: Run) -> Finding | None:
    texts = [w.text for w in inv.args]
    if "remove_all" in texts or "wipe_table" in texts:
        action = "remove_all" if "remove_all" in texts else "wipe_table"
    elif "remove" in texts and ("-f" in texts or "--force" in texts):
        action = "remove --force"
    else:
        return None
    return Finding("disk", action, f"{inv.shown} {action} tears down device-mapper devices in use")


def _rule_shred_system(inv: Invocation, run: Run) -> Finding | None:
    """``shred``/``scrub`` of a file under a system directory destroys it beyond recovery."""
    for word in inv.args:
        if word.text.startswith("-"):
            continue
        path = run.path(word)
        if is_device(path):
            return _wipes(inv, word, path, "overwrites")
        top = path[1:].split("/", 1)[0].lower() if path.startswith("/") else ""
        if top in SYSTEM_DIRS and not path.startswith(tuple(d + "/" for d in TEMP_DIRS)):
            return Finding(
                "disk",
                word.text,
                f"{inv.shown} destroys {path!r} beyond recovery, a file under a system "
                f"directory (token {show(word.text)!r})",
            )
    return None


_DISKUTIL_WIPES = re.compile(
    r"^(?:erase\w*|zerodisk|randomdisk|secureerase|partitiondisk|reformat|deletecontainer"
    r"|deletevolume|splitpartition|mergepartitions|resizevolume)$",
    re.IGNORECASE,
)


def _rule_diskutil(inv: Invocation, run: Run) -> Finding | None:
    """macOS ``diskutil eraseDisk``/``zeroDisk``/``secureErase``/``apfs deleteContainer``."""
    verb = next((w for w in inv.args if _DISKUTIL_WIPES.match(w.text)), None)
    if verb is None:
        return None
    return Finding(
        "disk", verb.text, f"{inv.shown} {verb.text} erases or repartitions a disk or volume"
    )


RULES: dict[str, tuple[Rule, ...]] = {
    "mkfs": (_rule_mkfs,),
    "diskutil": (_rule_diskutil,),
    **dict.fromkeys(
        (*_READ_ONLY_FLAGS, "parted", "wipefs"), (_rule_partitioner, _rule_partitioner_unknown)
    ),
    "cryptsetup": (_rule_cryptsetup,),
    "badblocks": (_rule_badblocks,),
    "nwipe": (_rule_nwipe,),
    "bmaptool": (_rule_bmaptool,),
    "nvme": (_rule_nvme,),
    "ddrescue": (_rule_ddrescue,),
    "dd_rescue": (_rule_ddrescue,),
    "partclone": (_rule_partclone,),
    "dd": (_rule_dd_unknown,),
    "dcfldd": (_rule_imager, _rule_dd_unknown),
    "dc3dd": (_rule_imager, _rule_dd_unknown),
    **dict.fromkeys(
        (
            "etcher",
            "balena-etcher",
            "etcher-cli",
            "balena",
            "woeusb",
            "sg_format",
            "sg_sanitize",
            "blkzone",
            "ventoy",
            "rpi-imager",
        ),
        (_rule_any_device("writes over"),),
    ),
    "hdparm": (_rule_hdparm,),
    "flashrom": (_rule_flashrom,),
    "mdadm": (_rule_mdadm,),
    **dict.fromkeys(("lvremove", "vgremove", "pvremove"), (_rule_volume_remove,)),
    **dict.fromkeys(("pvcreate", "vgcreate"), (_rule_lvm_create,)),
    "zpool": (_rule_zpool,),
    "zfs": (_rule_zfs,),
    "dmsetup": (_rule_dmsetup,),
    "shred": (_rule_shred_system,),
    "scrub": (_rule_shred_system, _rule_any_device("scrubs")),
}
