"""Binding checks: the bindings of StructureDefinitions (``Workbench.bindings``) and every
bound coded value of FHIR data checked against them (``Workbench.check_bindings``).

Modules: ``structures`` (StructureDefinitions reduced), ``store`` (those held),
``catalog`` (the bindings frame), ``plan`` (definitions compiled for walking), ``walk``
(resources walked into rows), ``judge`` (rows answered and decided), ``report``
(``BindingReport``), ``check`` (the check), ``api`` (from a Workbench).
"""
