"""The middleware onion: the layers of a stage compiled once around its core.

``build_onion`` turns a stage's middleware steps (``chain.compile_steps`` with
``wrap=False``) into one ``app(ctx)``; the comment below says how a call runs
through it.  The interceptor loops are in ``chain``.
"""

from __future__ import annotations

import types
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any

import anyio

from ..errors import AbortTurn, HardAbort, MiddlewareError
from .chain import Step
from .hooks import OnError

__all__ = ["App", "LayerFailure", "build_onion"]

_ABORTS = (AbortTurn, HardAbort)


# -- the middleware onion -------------------------------------------------------------
#
# A hand-written onion costs, per layer, one plain call (the next layer's function) and
# one coroutine (the layer's middleware).  The compiled onion keeps that shape while the
# user's API stays ``await call_next()``: a *frame* holds the call's context, and each
# layer's ``call_next`` is a plain function, built once per frame, that reads the
# context from the frame and *returns* the next layer's coroutine, which the
# middleware's own ``await`` then runs.  No closure, partial or wrapper coroutine is
# made per layer per call: a call takes a frame from the chain's pool, sets its
# context, and gives it back when it ends.
#
# A layer with ``on_error="raise"`` and no timeout, with no guarded layer outside it,
# costs exactly that.  A guarded layer (``block`` or ``skip``, or any timeout) must
# catch what its own middleware raises before the layer around it sees it, and resume
# that layer as if ``call_next()`` had returned: that takes a frame of its own between
# the two, so its ``call_next`` returns a small generator that runs the middleware's
# coroutine and settles its failures (``yield from``: the coroutine's suspensions go
# straight to the event loop).  Nothing else is done per layer: "did it call
# ``call_next()``" is one position noted on the frame when a layer is entered.
#
# An exception that leaves the inner layers or the core has had its policy applied
# already (an on_error="raise" failure, a bad argument, the LLM call's own error): an
# outer guarded layer lets it through unchanged instead of applying its own policy to
# it.  The one that is passing through is noted on the context (a slot set only on the
# way out, so calls that do not fail pay nothing), and the layer compares identities.
#
# ``call_next`` is valid while the middleware that received it runs (as in ASGI): a
# frame goes back to its pool when the call returns, so a ``call_next`` kept and called
# after that would run the onion of whichever call holds the frame then.  A call that
# ends with an exception does not give its frame back.

App = Callable[[Any], Awaitable[None]]
LayerFailure = Callable[[Step, Exception, Any], Awaitable[OnError]]
Entry_ = Callable[[], Any]

# frames kept per compiled onion for reuse: as many as calls of it ran at once, bounded
_POOL_LIMIT = 64


class _Frame:
    """One call's place in an onion: its context, and the position of the innermost
    layer entered (the core's is the number of layers), for the guarded layers."""

    __slots__ = ("ctx", "reached", "start")

    def __init__(self) -> None:
        self.ctx: Any = None
        self.reached = 0
        self.start: Entry_ = _never


def _never() -> Any:  # pragma: no cover - replaced when the frame is built
    raise RuntimeError("an onion frame used before it was built")


def _escapes(ctx: Any, exc: BaseException) -> None:
    ctx._escaping = exc


def _escaping(ctx: Any) -> BaseException | None:
    return getattr(ctx, "_escaping", None)


def _plain_entry(f: _Frame, fn: Callable[..., Any], inner: Entry_) -> Entry_:
    # the hand-written onion's layer: one call, and the middleware's coroutine
    def enter() -> Any:
        return fn(f.ctx, inner)

    return enter


def _core_entry(f: _Frame, core: App, index: int, marks: bool) -> Entry_:
    if index < 0:  # no guarded layer: nobody reads positions or escapes

        def run() -> Any:
            return core(f.ctx)

        return run
    if marks:  # the core notes what escapes it itself

        def enter() -> Any:
            f.reached = index
            return core(f.ctx)

        return enter

    @types.coroutine
    def marked() -> Generator[Any, Any, None]:
        f.reached = index
        ctx = f.ctx
        try:
            yield from core(ctx)  # type: ignore[misc]
        except Exception as exc:
            _escapes(ctx, exc)
            raise

    return marked


def _marked_entry(f: _Frame, fn: Callable[..., Any], inner: Entry_, index: int) -> Entry_:
    # a plain layer inside a guarded one: its failures reach the caller ("raise"), so
    # the guarded layer around it must know them from its own
    @types.coroutine
    def enter() -> Generator[Any, Any, None]:
        f.reached = index
        ctx = f.ctx
        try:
            yield from fn(ctx, inner)
        except Exception as exc:
            _escapes(ctx, exc)
            raise

    return enter


def _guarded_entry(
    f: _Frame, step: Step, inner: Entry_, failed: LayerFailure, index: int
) -> Entry_:
    fn, timeout = step.call, step.timeout

    @types.coroutine
    def settle(ctx: Any, exc: Exception) -> Generator[Any, Any, None]:
        if exc is _escaping(ctx):
            raise exc  # from inside: its policy was applied there
        called = f.reached > index
        try:
            policy = yield from failed(step, exc, ctx).__await__()
        except Exception as raised:  # on_error="raise": on to the caller as itself
            _escapes(ctx, raised)
            raise
        # "skip": the layer counts as absent, so the rest of the onion still runs
        if policy == "skip" and not called:
            yield from inner()

    if timeout is None:

        async def enter() -> None:
            f.reached = index
            ctx = f.ctx
            try:
                await fn(ctx, inner)
                if f.reached == index and not ctx.has_result():
                    raise MiddlewareError(ctx.stage)
            except _ABORTS as exc:
                exc.source = exc.source or step.id
                raise
            except Exception as exc:
                await settle(ctx, exc)

        return enter

    @types.coroutine
    def timed() -> Generator[Any, Any, None]:
        f.reached = index
        ctx = f.ctx
        try:
            # the middleware's awaits are delegated through this generator
            with anyio.fail_after(timeout):  # noqa: ASYNC100
                yield from fn(ctx, inner)
            if f.reached == index and not ctx.has_result():
                raise MiddlewareError(ctx.stage)
        except _ABORTS as exc:
            exc.source = exc.source or step.id
            raise
        except Exception as exc:
            yield from settle(ctx, exc)

    return timed


def build_onion(
    steps: Sequence[Step], core: App, failed: LayerFailure, *, core_marks: bool = False
) -> App:
    """Wrap ``core`` in the middleware ``steps`` (outermost first) and return the app.

    A layer with ``on_error="raise"`` and no timeout runs unguarded.  Guarded layers
    apply their policy only to what their own code raised: whatever comes out of
    ``call_next()`` goes on unchanged.  For that, the core notes on the context the
    exception it lets out (``core_marks``: it does so itself; otherwise it is marked
    when some layer is guarded), and so do plain layers inside a guarded one.
    """
    steps = tuple(steps)
    guarded = [not (s.on_error == "raise" and s.timeout is None) for s in steps]
    # the outermost guarded layer: every layer inside it notes its position
    first_guard = guarded.index(True) if any(guarded) else len(steps)

    def frame() -> _Frame:
        f = _Frame()
        entry = _core_entry(f, core, len(steps) if any(guarded) else -1, core_marks)
        for i in reversed(range(len(steps))):
            if guarded[i]:
                entry = _guarded_entry(f, steps[i], entry, failed, i)
            elif i > first_guard:
                entry = _marked_entry(f, steps[i].call, entry, i)
            else:
                entry = _plain_entry(f, steps[i].call, entry)
        f.start = entry
        return f

    pool: list[_Frame] = []

    async def app(ctx: Any) -> None:
        f = pool.pop() if pool else frame()
        f.ctx = ctx
        await f.start()
        # given back only after a call that ended normally: after an exception (a
        # cancellation among them) some layer's coroutine may still hold it
        f.ctx = None
        if len(pool) < _POOL_LIMIT:
            pool.append(f)

    return app
