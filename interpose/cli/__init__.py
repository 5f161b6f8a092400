"""The ``interpose`` command: ``interpose demo``, ``interpose bench``, ``interpose check``,
``interpose run-hook-test``, ``interpose init``, ``interpose schema``, ``interpose replay``,
``interpose mcp-proxy``, ``interpose inbox``, ``interpose tail``, ``interpose audit``.

Bad input to any of them is one line on stderr naming what is wrong, and exit code 2: a
subcommand raises ``UsageError`` (or argparse rejects the arguments), never a traceback.

Every subcommand's argument handling lives here, one module per subcommand or family;
what a subcommand does lives in its own package (the demo in ``interpose.agent``, the
replay in ``interpose.replay``, the proxy in ``interpose.adapters.mcp``):

- ``_common``: the shared rules (``UsageError`` for bad input, the help formatter that
  keeps one line per exit code, argument types);
- ``_main``: ``main()`` and the parser with every subcommand;
- ``demo``, ``bench``, ``check`` (check, init, schema), ``hook_test`` (run-hook-test),
  ``replay``, ``mcp_proxy``, ``inbox``: one module each, ``add_parser`` and ``run``;
- ``tail`` and ``audit``: ``interpose.bus.fleet_cli.add_parsers`` (a public name of the
  bus layer, which imports nothing from here), wired in by ``_main``.
"""

from ._main import main

__all__ = ["main"]
