"""Validation of codes: ``engine`` (the engine's validation calls: a request's switches,
languages, supplements and status notes), ``batch`` (``CodingCheck``: validate_code's one
decision, for one coding or many codes of one system at once), ``coding`` (a coding against
a compiled value set or a code system), ``plain`` (the plainly valid members of a value set:
the rule and its index), ``whole`` (whole release code systems read column-wise) and
``versions`` (the versions a coding or an include names, checked)."""
