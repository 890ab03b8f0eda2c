"""``python -m gmmfast.cli``: the ``gmmfast`` command."""
import sys

try:
    from . import main
    code = main()
except KeyboardInterrupt:   # Ctrl-C before main could catch it (importing the command)
    code = 130
    print("gmmfast: interrupted", file=sys.stderr)
sys.exit(code)
