"""``python -m workbench.cli``: the ``workbench`` command."""

from workbench.cli.main import main

main()
