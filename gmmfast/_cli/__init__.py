"""Subcommands of the gmmfast command line, one module each (see gmmfast.cli)."""
