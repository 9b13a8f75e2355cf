"""``$compare`` of two value sets: ``engine`` (by normalised definition, else by expansion)
and ``result`` (the ``Comparison`` it gives)."""
