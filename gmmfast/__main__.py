"""``python -m gmmfast``: the ``gmmfast`` command, with Ctrl-C while it starts as one line."""
import sys

try:
    from .cli import main
    code = main()
except KeyboardInterrupt:   # Ctrl-C before main could catch it (importing the command)
    code = 130
    print("gmmfast: interrupted", file=sys.stderr)
sys.exit(code)
