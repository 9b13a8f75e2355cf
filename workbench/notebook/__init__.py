"""Notebook adapters: the pandas accessor, widgets and HTML views. They translate and
delegate to the engine; none of them holds terminology logic."""
