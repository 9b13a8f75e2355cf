"""``python -m workbench``: the ``workbench`` command (as ``python -m workbench.cli``), for
an environment whose scripts folder is not on the PATH (a pipeline's task, a notebook's
``!python -m workbench validate ...``)."""

from workbench.cli.main import main

main()
