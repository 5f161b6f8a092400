"""The approvals inbox: ``interpose inbox`` serves a web page and its JSON API over an
approval store (the fleet's, on Redis), for a person to decide what agents ask.

- ``app``: the Starlette app (the page, its static files, the API, the event stream);
- ``backend``: what the HTTP layer does with an ``ApprovalStore`` (JSON in and out, the
  store's refusals as 4xx);
- ``security``: the guard in front of it all (Host check, token, CSRF / same-origin);
- ``serve``: uvicorn on a socket bound here, and the command's run.

The page is plain HTML, CSS and JavaScript in ``static/`` (package data, no build step).
Needs Starlette and uvicorn (the ``mcp`` extra).
"""

from .app import build_app
from .backend import StoreBackend
from .security import Tokens, read_tokens
from .serve import running, serve_inbox

__all__ = ["StoreBackend", "Tokens", "build_app", "read_tokens", "running", "serve_inbox"]
