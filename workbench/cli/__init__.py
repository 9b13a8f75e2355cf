"""The ``workbench`` command line: an adapter that reads files, builds a Workbench and calls
its public methods (see ``main.py``)."""
