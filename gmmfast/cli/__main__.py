"""``python -m gmmfast.cli``: the ``gmmfast`` command, run as ``python -m gmmfast`` runs it."""
import runpy

runpy.run_module("gmmfast", run_name="__main__")
