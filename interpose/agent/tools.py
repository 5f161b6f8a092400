"""Real tools for the reference agent: ``exec``, ``read`` and ``write`` in a scratch directory.

They really run: ``exec`` starts a process, ``read`` and ``write`` touch files.  That is
the point of the demo — the pipeline stands between the model and effects that matter.
``read`` and ``write`` refuse paths that resolve outside ``Toolbox.root``; commands start
there with a minimal environment (``HOME`` is the root, no inherited secrets) but are not
sandboxed — keeping them from reaching further is the pipeline's guards' job.

::

    box = Toolbox(Path("/tmp/scratch"))
    await box.tools["exec"]({"command": "ls"})   # {"exit_code": 0, "stdout": ..., "stderr": ""}
    agent = Agent(pipe, model, box.tools, schemas=box.schemas)
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.text import TextReceiveStream

from ..external.command.claude_env import exported_env

__all__ = ["Tool", "Toolbox"]

Tool = Callable[[dict[str, Any]], Awaitable[Any]]

_PATH_KEYS = ("path", "file_path", "file")  # the keys the guards read, in the same order
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


class Toolbox:
    """The ``exec``, ``read`` and ``write`` tools, confined to ``root``.

    Args:
        root: the scratch directory; it must exist.
        timeout: seconds a command may run before its process group is killed.
        max_output: characters kept of a command's stdout/stderr and of a file read; the
            rest is replaced by a ``[… N more characters]`` marker.
        env: the environment of commands; default a minimal one (PATH, HOME=root, LANG).
            The variables a Claude Code settings file's SessionStart hooks export
            (``CLAUDE_ENV_FILE``) are added for the calls of their session.

    Raises:
        NotADirectoryError: ``root`` is not a directory.
        ValueError: ``timeout`` or ``max_output`` is not positive.
    """

    def __init__(
        self,
        root: Path,
        *,
        timeout: float = 10.0,
        max_output: int = 4000,
        env: Mapping[str, str] | None = None,
    ) -> None:
        root = Path(root).resolve()
        if not root.is_dir():
            raise NotADirectoryError(f"tool root {root} is not a directory")
        if timeout <= 0 or max_output <= 0:
            raise ValueError("timeout and max_output must be positive")
        self.root = root
        self.timeout = timeout
        self.max_output = max_output
        self.env = dict(env) if env is not None else _minimal_env(root)
        self.tools: dict[str, Tool] = {
            "exec": self.exec,
            "read": self.read,
            "write": self.write,
        }
        self.schemas: list[dict[str, Any]] = [
            {
                "name": "exec",
                "description": (
                    f"Run a command in the project directory (timeout {timeout:g}s). "
                    "Returns exit_code, stdout and stderr."
                ),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "command": {
                            "description": "a shell command line, or an argv list",
                            "anyOf": [
                                {"type": "string"},
                                {"type": "array", "items": {"type": "string"}},
                            ],
                        }
                    },
                    "required": ["command"],
                },
            },
            {
                "name": "read",
                "description": "Read a text file of the project (path relative to it).",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
            },
            {
                "name": "write",
                "description": "Write a text file of the project, creating directories.",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["path", "content"],
                },
            },
        ]

    def __repr__(self) -> str:
        return f"<Toolbox root={str(self.root)!r} tools={sorted(self.tools)}>"

    # -- the tools ----------------------------------------------------------------------

    async def exec(self, args: dict[str, Any]) -> dict[str, Any]:
        """Run ``args["command"]`` (a shell string, or an argv list) in the root.

        Returns ``{"exit_code", "stdout", "stderr"}``; a command past the timeout has its
        whole process group killed, a negative exit code and a note in stderr.

        Raises:
            ValueError: no command, or a command that is neither a string nor a list of
                strings.
            OSError: the program could not be started.
        """
        command = args.get("command")
        if isinstance(command, str) and command.strip():
            argv: str | list[str] = command
        elif (
            isinstance(command, list) and command and all(isinstance(part, str) for part in command)
        ):
            argv = list(command)
        else:
            raise ValueError(
                f"exec needs 'command': a non-empty string or list of strings, got {command!r}"
            )
        limit = self.max_output
        buffers: list[list[str]] = [[], []]
        sizes = [0, 0]

        async def drain(stream: anyio.abc.ByteReceiveStream, index: int) -> None:
            # keep the first `limit` characters, count (and drop) the rest
            async for chunk in TextReceiveStream(stream, errors="replace"):
                room = limit - sizes[index]
                if room > 0:
                    buffers[index].append(chunk[:room])
                sizes[index] += len(chunk)

        timed_out = False
        async with await anyio.open_process(
            argv,
            stdin=subprocess.DEVNULL,
            cwd=self.root,
            # plus what a Claude settings file's SessionStart hooks exported
            # (CLAUDE_ENV_FILE) for this call's session
            env=exported_env(self.env),
            start_new_session=True,  # its own process group, so a timeout kills it all
        ) as process:
            with anyio.move_on_after(self.timeout) as scope:
                async with anyio.create_task_group() as tg:
                    assert process.stdout is not None
                    assert process.stderr is not None
                    tg.start_soon(drain, process.stdout, 0)
                    tg.start_soon(drain, process.stderr, 1)
                    await process.wait()
            if scope.cancelled_caught:
                timed_out = True
                _kill_group(process)
                with anyio.CancelScope(shield=True):
                    await process.wait()
        stdout, stderr = (_clip("".join(buffers[i]), sizes[i], limit) for i in range(2))
        if timed_out:
            shown = argv if isinstance(argv, str) else shlex.join(argv)
            stderr += f"\n[killed: {shown!r} ran longer than {self.timeout:g}s]"
        return {"exit_code": process.returncode, "stdout": stdout, "stderr": stderr}

    async def read(self, args: dict[str, Any]) -> str:
        """Read a text file under the root (``path``, or ``file_path`` / ``file``).

        Raises:
            ValueError: no path given.
            PermissionError: the path resolves outside the root.
            FileNotFoundError, IsADirectoryError: as ``open`` raises them.
        """
        path = self._resolve(args)
        text = await anyio.Path(path).read_text(encoding="utf-8", errors="replace")
        return _clip(text[: self.max_output], len(text), self.max_output)

    async def write(self, args: dict[str, Any]) -> dict[str, Any]:
        """Write ``content`` to a file under the root, creating its directories.

        Returns ``{"path": <relative path>, "bytes": <bytes written>}``.

        Raises:
            ValueError: no path, or ``content`` is not a string.
            PermissionError: the path resolves outside the root.
        """
        content = args.get("content", "")
        if not isinstance(content, str):
            raise ValueError(f"write needs 'content' as a string, got {type(content).__name__}")
        path = self._resolve(args)
        await anyio.Path(path.parent).mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8")
        await anyio.Path(path).write_bytes(data)
        return {"path": path.relative_to(self.root).as_posix(), "bytes": len(data)}

    # -- helpers ------------------------------------------------------------------------

    def _resolve(self, args: dict[str, Any]) -> Path:
        raw = next((v for k in _PATH_KEYS if isinstance(v := args.get(k), str)), None)
        if not raw:
            raise ValueError("a file tool needs 'path' (or 'file_path' / 'file')")
        # resolve() follows symlinks, so a link pointing out of the root is caught too
        path = (self.root / raw).resolve()
        if path != self.root and self.root not in path.parents:
            raise PermissionError(f"{raw!r} is outside the tool root")
        return path


def _minimal_env(root: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", _DEFAULT_PATH),
        "HOME": str(root),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
    }


def _clip(text: str, total: int, limit: int) -> str:
    return text if total <= limit else f"{text}\n[… {total - limit} more characters]"


def _kill_group(process: anyio.abc.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):  # gone, or no killpg
        try:
            process.kill()
        except ProcessLookupError:
            pass
