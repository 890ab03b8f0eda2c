"""``python -m gmmfast.cli``: the ``gmmfast`` command."""
import sys

from . import main

sys.exit(main())
