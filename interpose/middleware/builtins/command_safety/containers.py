"""Rule family ``containers``: Docker data destroyed, and commands run inside containers.

Rules (the rule id leads the block reason):

- ``docker-prune``: ``docker system prune`` with both ``--all`` and ``--volumes``;
  ``docker volume prune --all`` (or ``--filter all=true``: deletes named volumes too;
  plain ``volume prune`` only removes anonymous ones and is allowed);
  ``docker volume rm $(docker volume ls -q)`` and ``docker volume ls -q | xargs docker
  volume rm`` (every volume, or every dangling one; a list narrowed by ``grep`` or a
  ``name``/``label`` filter is allowed); ``podman volume rm --all``; ``podman system
  reset``.  ``podman`` and ``nerdctl`` are ``docker``.
- Commands run inside a container are judged by every rule, as on the host: ``docker
  run``/``create`` (after the image, or the ``--entrypoint``), ``docker exec``,
  ``docker compose run``/``exec``, ``kubectl``/``oc exec``, ``run`` and ``debug``
  (after ``--``), ``oc rsh``, ``lxc``/``incus exec``.  A container is a machine too (``docker
  exec db rm -rf /var/lib/postgresql`` destroys a live database), so ``docker exec ctr
  sh -c 'rm -rf /'`` is refused like ``sh -c 'rm -rf /'``.  Bind mounts (``-v /:/host``,
  ``--mount type=bind,source=/etc,target=/mnt``) map container paths back to the host
  path they show: ``docker run -v /etc:/mnt/etc alpine rm -rf /mnt/etc`` is judged as
  ``rm -rf /etc``.  The command is handed to the shared analysis
  (:meth:`.run._Run.inside_container`), so ``sh -c`` strings, wrappers and substitutions
  inside it are followed the same way.  Mounting ``/`` or ``--privileged`` alone is
  allowed (``docker run --privileged -v /:/host img`` runs the image's own program, which
  the guard cannot read): what is judged is what the command line says will run.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from ..shell import SUBST, Script, Word
from .invocation import Invocation
from .model import Finding
from .options import derived, opts, parse_opts, word_set
from .paths import show
from .run import PipelineRule, Rule, Run
from .wrappers import canon, unwrap

# -- docker --------------------------------------------------------------------------------------

_DOCKER_GLOBAL_ARG = word_set(
    "-H --host -c --context --config -l --log-level --tlscacert --tlscert --tlskey "
    "--root --runroot --storage-driver --url --connection --cgroup-manager --events-backend "
    "--namespace -n --address -a"
)

_RUN = opts(
    "acehlmpuvw",
    "detach interactive tty rm privileged init read-only publish-all no-healthcheck "
    "oom-kill-disable sig-proxy quiet replace systemd tls-verify disable-content-trust",
    "attach cpu-shares env env-file entrypoint hostname label label-file memory publish user "
    "volume workdir name network net network-alias cap-add cap-drop device platform restart "
    "cpus add-host dns dns-search dns-option security-opt tmpfs ulimit log-driver log-opt pid "
    "ipc uts userns runtime gpus shm-size stop-signal stop-timeout health-cmd "
    "health-interval health-retries health-timeout health-start-period pull cidfile "
    "volumes-from group-add link expose mac-address ip ip6 cpuset-cpus cpuset-mems "
    "memory-swap memory-reservation oom-score-adj isolation sysctl annotation cgroupns "
    "cgroup-parent domainname storage-opt detach-keys mount blkio-weight device-read-bps "
    "device-write-bps pids-limit cpu-period cpu-quota kernel-memory arch os variant pod "
    "secret userns-remap uidmap gidmap init-path image-volume requires hooks-dir "
    "authfile creds cert-dir",
    {
        "e": "env",
        "v": "volume",
        "w": "workdir",
        "u": "user",
        "p": "publish",
        "l": "label",
        "h": "hostname",
    },
)
_EXEC = opts(
    "euw",
    "detach interactive tty privileged latest",
    "env env-file user workdir detach-keys preserve-fds",
    {"e": "env", "u": "user", "w": "workdir"},
)
_COMPOSE_GLOBAL_ARG = word_set(
    "-f --file -p --project-name --profile --env-file --project-directory --ansi "
    "--parallel --progress"
)
_COMPOSE = opts(
    "euwvpl",
    "detach no-TTY interactive tty rm no-deps service-ports use-aliases privileged build "
    "quiet-pull remove-orphans",
    "env user workdir index volume entrypoint name publish label cap-add cap-drop",
    {"e": "env", "u": "user", "w": "workdir", "v": "volume", "p": "publish", "l": "label"},
)


def _docker_flags(args: Sequence[Word]) -> set[str]:
    flags: set[str] = set()
    for word in args:
        t = word.text
        if t.startswith("--"):
            name, eq, value = t.partition("=")
            if not eq or value.lower() not in ("false", "0"):
                flags.add(name)
        elif t.startswith("-"):
            flags.update("-" + ch for ch in t[1:])
    return flags


_NARROWING = frozenset({"grep", "egrep", "fgrep", "rg", "awk", "sed", "head", "tail", "comm"})
"""Commands between ``docker volume ls`` and the removal that pick some volumes only."""


def _filters(texts: Sequence[str]) -> list[str]:
    """The values of ``--filter``/``-f`` options (``-qf x``, ``--filter=x`` included)."""
    values: list[str] = []
    for k, t in enumerate(texts):
        if t.startswith("--filter="):
            values.append(t.partition("=")[2])
        elif t == "--filter" or (t.startswith("-") and not t.startswith("--") and "f" in t):
            attached = t[t.index("f") + 1 :] if t != "--filter" else ""
            if attached:
                values.append(attached)
            elif k + 1 < len(texts):
                values.append(texts[k + 1])
    return values


def _every_volume(texts: Sequence[str]) -> bool:
    """Whether ``docker volume ls ...`` (``texts``, the arguments after ``docker``) lists
    every volume, or every unused one: no ``name``/``label`` filter narrows it."""
    i, n = 0, len(texts)
    while i < n and texts[i].startswith("-"):
        i += 2 if texts[i] in _DOCKER_GLOBAL_ARG else 1
    if texts[i : i + 2] not in (["volume", "ls"], ["volume", "list"]):
        return False
    filters = _filters(texts[i + 2 :])
    return all(f.partition("=")[0].lower() == "dangling" for f in filters)


def _lists_volumes(script: Script) -> bool:
    """Whether ``script`` (a substitution) outputs every volume's name."""
    lister = narrowed = False
    for cmd in script.commands:
        if not cmd.words:
            continue
        unwrapped = unwrap(list(cmd.words))  # sudo docker volume ls -q
        name = unwrapped.name if unwrapped is not None else canon(cmd.words[0].text)
        args = unwrapped.args if unwrapped is not None else cmd.words[1:]
        if name == "docker" and _every_volume([w.text for w in args]):
            lister = True
        elif name in _NARROWING:
            narrowed = True
    return lister and not narrowed


def _shown(words: Sequence[str]) -> str:
    return show("docker " + " ".join(words))


def _prune(words: list[str], rest: Sequence[Word], run: Run) -> Finding | None:
    flags = _docker_flags(rest)
    every = bool(flags & {"-a", "--all"})
    shown = _shown([*words, *(w.text for w in rest)])
    if words == ["system", "prune"] and every and "--volumes" in flags:
        return Finding(
            "docker-prune",
            shown,
            f"{shown!r} deletes every unused image, container, network and volume",
        )
    if words == ["volume", "prune"] and (every or _filter_all(rest)):
        return Finding("docker-prune", shown, f"{shown!r} deletes every unused volume and its data")
    removes = words in (["volume", "rm"], ["volume", "remove"])
    if removes and (
        every
        or any(_lists_volumes(sub) for w in rest for sub in w.subs)
        or any(_lists_volumes(listing) for listing in _listings(rest, run))
    ):
        return Finding("docker-prune", shown, f"{shown!r} deletes every volume")
    if words == ["system", "reset"]:  # podman: back to a fresh install
        return Finding(
            "docker-prune",
            shown,
            f"{shown!r} deletes every container, image, volume and network of the engine",
        )
    return None


_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def _listings(rest: Sequence[Word], run: Run) -> list[Script]:
    """What the loop variables among ``rest`` take: ``for v in $(docker volume ls -q); do
    docker volume rm $v``, ``docker volume ls -q | while read v; do ...``."""
    if not run.listings:
        return []
    names = [m.group(1) for w in rest if (m := _VARIABLE.fullmatch(w.text)) is not None]
    return [run.listings[name] for name in names if name in run.listings]


def _filter_all(rest: Sequence[Word]) -> bool:
    texts = [w.text for w in rest]
    values = [texts[k + 1] for k, t in enumerate(texts[:-1]) if t in ("--filter", "-f")] + [
        t.partition("=")[2] for t in texts if t.startswith("--filter=")
    ]
    return any(v.lower() in ("all=true", "all=1") for v in values)


def _mounts(parsed_values: Sequence[tuple[str, Word]], run: Run) -> list[tuple[str, str]]:
    """(container path, host path) of every bind mount whose host side is known."""
    mounts: list[tuple[str, str]] = []
    for flag, word in parsed_values:
        source = target = ""
        text = word.text.removeprefix("=")  # "-v=/:/host": the CLI drops the "="
        if flag == "--volume":
            parts = text.split(":")
            if len(parts) >= 2:
                source, target = parts[0], parts[1]
        elif flag == "--mount":
            fields = dict(f.partition("=")[::2] for f in text.split(","))
            if fields.get("type", "volume") == "bind":
                source = fields.get("source") or fields.get("src", "")
                target = fields.get("target") or fields.get("destination") or fields.get("dst", "")
        # a named volume ("data:/var/lib/x") or a host path known only at run time
        # ("$(pwd):/app") keeps the container path: judged as a path of that machine
        if not source.startswith(("/", "~", ".")) or SUBST in source or not target:
            continue
        host = run.path(derived(source))
        if "$" not in host and target.startswith("/"):
            mounts.append((target.rstrip("/") or "/", host))
    return mounts


def _inside(
    run: Run,
    argv: Sequence[Word],
    where: str,
    mounts: Sequence[tuple[str, str]] = (),
    workdir: Word | None = None,
) -> Finding | None:
    if not argv:
        return None
    cwd = None
    if workdir is not None and "$" not in workdir.text and SUBST not in workdir.text:
        cwd = posixpath.normpath(workdir.text.removeprefix("="))
    found = run.inside_container(argv, where, mounts, cwd)
    if found is None or found.rule in ("unparseable", "too-complex"):
        return found
    return Finding(found.rule, found.token, f"{found.message} (run inside a container by {where})")


def _container_command(inv: Invocation, run: Run, args: Sequence[Word]) -> Finding | None:
    """The command ``docker run|create|exec|compose ...`` (``args``, from the subcommand
    on) runs inside a container."""
    if args and args[0].text == "container":  # docker container run ...
        args = args[1:]
    if not args:
        return None
    sub = args[0].text
    if sub in ("run", "create"):
        parsed = parse_opts(args[1:], _RUN, stop_at_operand=True)
        entry = parsed.value("--entrypoint")
        argv = ([entry] if entry is not None and entry.text else []) + parsed.operands[1:]
        mounts = _mounts(parsed.values, run)
        workdir = parsed.value("--workdir")
        return _inside(run, argv, f"{inv.shown} {sub}", mounts, workdir)
    if sub == "exec":
        parsed = parse_opts(args[1:], _EXEC, stop_at_operand=True)
        return _inside(run, parsed.operands[1:], f"{inv.shown} exec", (), parsed.value("--workdir"))
    if sub == "compose":
        return _compose(inv, run, args[1:])
    return None


def _compose(inv: Invocation, run: Run, args: Sequence[Word]) -> Finding | None:
    i, n = 0, len(args)
    while i < n and args[i].text.startswith("-"):
        i += 2 if args[i].text in _COMPOSE_GLOBAL_ARG else 1
    if i >= n or args[i].text not in ("run", "exec"):
        return None
    parsed = parse_opts(args[i + 1 :], _COMPOSE, stop_at_operand=True)
    entry = parsed.value("--entrypoint")
    argv = ([entry] if entry is not None and entry.text else []) + parsed.operands[1:]
    return _inside(run, argv, f"{inv.shown} compose {args[i].text}", _mounts(parsed.values, run))


def _rule_docker(inv: Invocation, run: Run) -> Finding | None:
    args = inv.args
    i, n = 0, len(args)
    while i < n and args[i].text.startswith("-"):
        i += 2 if args[i].text in _DOCKER_GLOBAL_ARG else 1
    words = [w.text for w in args[i : i + 2]]
    return _prune(words, args[i + 2 :], run) or _container_command(inv, run, args[i:])


def _rule_compose(inv: Invocation, run: Run) -> Finding | None:
    """``docker-compose run|exec``: the v1 command name."""
    return _compose(inv, run, inv.args)


# -- kubectl, oc, lxc ------------------------------------------------------------------------

_KUBECTL_GLOBAL_ARG = word_set(
    "-n --namespace --context --kubeconfig --cluster --user -s --server --token --as "
    "--as-group --as-uid --request-timeout --cache-dir --certificate-authority "
    "--client-certificate --client-key --tls-server-name -v --v --log-file --profile"
)
_KUBECTL_EXEC = opts(
    "cnfip",
    "stdin tty quiet",
    "container namespace filename pod-running-timeout context kubeconfig",
    {"c": "container", "n": "namespace", "f": "filename"},
)
_KUBECTL_RUNS = frozenset({"exec", "run", "debug", "rsh"})


def _rule_kubectl(inv: Invocation, run: Run) -> Finding | None:
    args = inv.args
    i, n = 0, len(args)
    while i < n and args[i].text.startswith("-"):
        t = args[i].text
        i += 2 if t in _KUBECTL_GLOBAL_ARG else 1
    if i >= n or args[i].text not in _KUBECTL_RUNS:
        return None
    sub = args[i].text
    rest = args[i + 1 :]
    where = f"{inv.shown} {sub}"
    dash = next((k for k, w in enumerate(rest) if w.text == "--"), None)
    if dash is not None:
        return _inside(run, rest[dash + 1 :], where)
    if sub in ("exec", "rsh"):  # the old form: kubectl exec POD CMD...
        parsed = parse_opts(rest, _KUBECTL_EXEC, stop_at_operand=True)
        return _inside(run, parsed.operands[1:], where)
    return None


def _rule_lxc(inv: Invocation, run: Run) -> Finding | None:
    args = [w.text for w in inv.args]
    if "exec" not in args or "--" not in args:
        return None
    dash = args.index("--")
    return _inside(run, inv.args[dash + 1 :], f"{inv.shown} exec")


# -- pipelines --------------------------------------------------------------------------------


def _volume_list_into_rm(stages: Sequence[Sequence[Invocation | None]], run: Run) -> Finding | None:
    """``docker volume ls -q | xargs docker volume rm``: every volume, unless a stage in
    between (``grep``, ``head``...) narrows the list."""
    listing = False
    for stage in stages:
        for inv in stage:
            if inv is None:
                continue
            texts = [w.text for w in inv.args]
            if inv.name == "docker" and _every_volume(texts):
                listing = True
            elif inv.name in _NARROWING:
                listing = False
            elif inv.name == "parallel":  # docker volume ls -q | parallel docker volume rm
                at = next((k for k, t in enumerate(texts) if canon(t) == "docker"), len(texts))
                texts = texts[at + 1 :]
            if listing and inv.name in ("docker", "parallel") and _removes_volumes(texts):
                shown = _shown(texts)
                return Finding(
                    "docker-prune",
                    shown,
                    f"{shown!r} deletes every volume that 'docker volume ls' lists",
                )
    return None


def _removes_volumes(texts: Sequence[str]) -> bool:
    i, n = 0, len(texts)
    while i < n and texts[i].startswith("-"):
        i += 2 if texts[i] in _DOCKER_GLOBAL_ARG else 1
    return texts[i : i + 2] in (["volume", "rm"], ["volume", "remove"])


RULES: dict[str, tuple[Rule, ...]] = {
    "docker": (_rule_docker,),
    "docker-compose": (_rule_compose,),
    "kubectl": (_rule_kubectl,),
    "oc": (_rule_kubectl,),
    "lxc": (_rule_lxc,),
    "incus": (_rule_lxc,),
}
PIPELINES: tuple[PipelineRule, ...] = (_volume_list_into_rm,)
