"""``Sandbox``: run one command (an argv or a shell string) under a policy.

Per run: the policy is resolved for the working directory (``plan.py``), the filtering
proxy is started when the network mode needs it, a pids cgroup is made when running as
root, bubblewrap is started with the command line ``bwrap.py`` builds, its output read
(bounded), and what was refused collected as ``Violation``\\ s.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack

import anyio
import anyio.abc
import anyio.to_thread

from ..errors import SandboxUnavailable
from .bwrap import Inner, bwrap_argv, sandbox_env
from .limits import PidsCgroup, sweep
from .plan import Plan, resolve
from .policy import SandboxPolicy
from .probe import Capabilities, probe
from .proxy import LOOPBACK_HOSTS, ProxyService
from .violations import Violation, from_stderr

__all__ = ["Command", "Sandbox", "SandboxResult"]

log = logging.getLogger("interpose.sandbox")

Command = str | Sequence[str]


@dataclasses.dataclass(frozen=True)
class SandboxResult:
    """How a sandboxed command ended.

    Attributes:
        exit_code: its exit status (negative: killed by that signal).
        stdout: its output, decoded (at most ``Limits.output`` bytes of it).
        stderr: its error output, likewise.
        violations: what the sandbox refused, as far as it could tell.
        timed_out: the time limit killed it.
        sandboxed: False when the sandbox could not be applied and the policy let the
            command run without it (``required = false``).
        duration: seconds from start to exit.
    """

    exit_code: int
    stdout: str
    stderr: str
    violations: tuple[Violation, ...] = ()
    timed_out: bool = False
    sandboxed: bool = True
    duration: float = 0.0


class Sandbox:
    """Runs commands under one ``SandboxPolicy``.

    Args:
        policy: what the commands may touch (default: ``SandboxPolicy()``).
        bwrap: the bubblewrap executable, a name on PATH or a path.
        on_violation: called with each violation as it is found.
    """

    def __init__(
        self,
        policy: SandboxPolicy | None = None,
        *,
        bwrap: str = "bwrap",
        on_violation: Callable[[Violation], None] | None = None,
    ) -> None:
        self.policy = policy if policy is not None else SandboxPolicy()
        self.bwrap = bwrap
        self.on_violation = on_violation
        self._caps: Capabilities | None = None

    def __repr__(self) -> str:
        return f"Sandbox({self.policy!r})"

    def capabilities(self) -> Capabilities:
        """What this machine can apply (``probe``: found once, then cached)."""
        return probe(self.bwrap)

    def check(self) -> Capabilities:
        """The capabilities, when the sandbox can run or need not.

        Raises:
            SandboxUnavailable: it cannot run here and the policy requires it.
        """
        caps = self.capabilities()
        if caps.problems and self.policy.required:
            raise SandboxUnavailable(caps.problems)
        return caps

    def plan(self, cwd: str | os.PathLike[str] | None = None, home: str | None = None) -> Plan:
        """The policy resolved for a command run in ``cwd`` (default: the current
        directory) with ``$HOME`` = ``home`` (default: this process's)."""
        return resolve(self.policy, cwd or os.getcwd(), home or os.path.expanduser("~"))

    def argv(
        self,
        command: Command,
        *,
        cwd: str | os.PathLike[str] | None = None,
        home: str | None = None,
        proxy_dir: str | None = None,
    ) -> list[str]:
        """The whole command line that runs ``command`` in the sandbox (for callers that
        start the process themselves, such as the MCP gateway; the network proxy, when
        the policy needs one, is theirs to serve in ``proxy_dir``).

        Raises:
            SandboxUnavailable: as ``check``.
        """
        caps = self.check()
        if caps.bwrap is None:
            return shell_argv(command)
        inner = Inner(proxy_dir=proxy_dir, prlimit=caps.prlimit)
        return bwrap_argv(self.plan(cwd, home), shell_argv(command), bwrap=caps.bwrap, inner=inner)

    def run_sync(
        self,
        command: Command,
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> SandboxResult:
        """``run`` for sync code (in a new event loop; not inside a running one)."""
        return anyio.run(functools.partial(self.run, command, cwd=cwd, env=env, stdin=stdin))

    async def run(
        self,
        command: Command,
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> SandboxResult:
        """Run ``command`` (an argv, or a string run by ``bash -c``) in the sandbox and
        wait for it (at most ``limits.time`` seconds: then it is killed, and everything
        it started with it).

        Args:
            cwd: its working directory (default: the current one).
            env: its environment (default: this process's); its ``HOME`` is the home
                the policy's ``~`` means.
            stdin: bytes for its standard input (default: none, it reads EOF).

        Raises:
            SandboxUnavailable: the sandbox cannot be applied here and the policy
                requires it; nothing was run.
            ValueError: ``cwd`` is not a directory.
        """
        if self._caps is None:  # the probe runs bubblewrap once: not in the event loop
            self._caps = await anyio.to_thread.run_sync(self.capabilities)
        caps = self._caps
        if caps.problems and self.policy.required:
            raise SandboxUnavailable(caps.problems)
        argv = shell_argv(command)
        base_env = dict(os.environ if env is None else env)
        plan = self.plan(cwd, base_env.get("HOME"))
        sandboxed = not caps.problems
        if not sandboxed:
            log.warning("running %r WITHOUT the sandbox: %s", command, "; ".join(caps.problems))
        return await _Run(self, plan, caps, base_env).go(argv, stdin, sandboxed)


def shell_argv(command: Command) -> list[str]:
    """An argv as is; a string as ``bash -c STRING`` (``sh`` without bash)."""
    if isinstance(command, str):
        return [shutil.which("bash") or "/bin/sh", "-c", command]
    argv = list(command)
    if not argv or not all(isinstance(a, str) for a in argv):
        raise TypeError(f"a command is a string or a non-empty list of strings, got {command!r}")
    return argv


class _Run:
    """One run's state: the proxy, the cgroup, what was refused."""

    def __init__(
        self, sandbox: Sandbox, plan: Plan, caps: Capabilities, env: dict[str, str]
    ) -> None:
        self.sandbox = sandbox
        self.plan = plan
        self.caps = caps
        self.env = env
        self.violations: list[Violation] = []

    def refused(self, violation: Violation) -> None:
        self.violations.append(violation)
        if self.sandbox.on_violation is not None:
            self.sandbox.on_violation(violation)

    async def go(self, command: list[str], stdin: bytes | None, sandboxed: bool) -> SandboxResult:
        plan, caps = self.plan, self.caps
        async with AsyncExitStack() as stack:
            argv, env, cgroup = command, self.env, None
            if sandboxed:
                proxy_dir = await self.proxy(stack) if plan.network != "none" else None
                if caps.pids_cgroup is not None and plan.limits.processes:
                    sweep()  # what earlier runs left to remove
                    cgroup = PidsCgroup(caps.pids_cgroup, plan.limits.processes)
                    stack.callback(cgroup.close)
                inner = Inner(proxy_dir=proxy_dir, prlimit=caps.prlimit, nproc=cgroup is None)
                assert caps.bwrap is not None
                argv = bwrap_argv(plan, command, bwrap=caps.bwrap, inner=inner)
                argv = (cgroup.prefix() if cgroup is not None else []) + argv
                env = sandbox_env(plan, self.env, proxy=proxy_dir is not None)
            result = await self.execute(argv, env, stdin)
            if cgroup is not None and cgroup.hit():
                self.refused(_limit(f"the process limit ({plan.limits.processes}) was hit"))
        return dataclasses.replace(result, violations=tuple(self.violations), sandboxed=sandboxed)

    async def proxy(self, stack: AsyncExitStack) -> str:
        """Serve the filtering proxy until ``stack`` closes; its socket's directory."""
        allowed = LOOPBACK_HOSTS if self.plan.network == "loopback" else self.plan.domains
        service = ProxyService(allowed, self.refused)
        stack.callback(shutil.rmtree, service.directory, True)
        tg = await stack.enter_async_context(anyio.create_task_group())
        await service.start(tg)
        stack.push_async_callback(service.aclose)  # on the way out: stop serving first
        return service.directory

    async def execute(
        self, argv: list[str], env: dict[str, str], stdin: bytes | None
    ) -> SandboxResult:
        limits = self.plan.limits
        started = time.perf_counter()
        process = await anyio.open_process(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            env=env,
            cwd=self.plan.cwd,
            start_new_session=True,
        )
        out, err = bytearray(), bytearray()
        timed_out = False
        async with process:
            with anyio.move_on_after(limits.time) as scope:
                async with anyio.create_task_group() as tg:
                    if process.stdout is not None:
                        tg.start_soon(_drain, process.stdout, out, limits.output)
                    if process.stderr is not None:
                        tg.start_soon(_drain, process.stderr, err, limits.output)
                    if process.stdin is not None and stdin is not None:
                        await process.stdin.send(stdin)
                        await process.stdin.aclose()
                await process.wait()
            if scope.cancelled_caught:
                timed_out = True
                _kill_group(process.pid)
                with anyio.CancelScope(shield=True):
                    await process.wait()
        stderr = err.decode(errors="replace")
        for violation in from_stderr(stderr, self.plan):
            self.refused(violation)
        if timed_out:
            self.refused(
                _limit(f"the time limit ({limits.time:g}s) was hit: the sandbox was killed")
            )
        return SandboxResult(
            exit_code=process.returncode if process.returncode is not None else -9,
            stdout=out.decode(errors="replace"),
            stderr=stderr,
            timed_out=timed_out,
            duration=time.perf_counter() - started,
        )


async def _drain(stream: anyio.abc.ByteReceiveStream, into: bytearray, limit: int) -> None:
    """Read ``stream`` to its end, keeping the first ``limit`` bytes."""
    async for chunk in stream:
        if len(into) < limit:
            into += chunk[: limit - len(into)]


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _limit(detail: str) -> Violation:
    return Violation(kind="limit", detail=detail)
