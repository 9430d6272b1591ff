"""``python -m flows.cli``: the kinefit command line."""

from flows.cli.app import main

main()
