"""``python -m interpose``: the ``interpose`` command."""

import sys

from .cli import main

sys.exit(main())
