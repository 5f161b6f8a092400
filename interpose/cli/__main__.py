"""``python -m interpose.cli``: the ``interpose`` command."""

import sys

from ._main import main

sys.exit(main())
