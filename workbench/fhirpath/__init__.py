"""FHIRPath: the expressions of SQL on FHIR views, parsed with lark into ``nodes``.

``parse(text)`` reads an expression (FHIRPath N1 with long numbers and Pathling's Coding
literal) into the frozen dataclasses of ``nodes``; ``unparse(node)`` writes one back.

>>> unparse(parse("name.where(use='official').family"))
"name.where(use = 'official').family"
"""

from workbench.fhirpath.errors import FhirPathError
from workbench.fhirpath.parser import parse
from workbench.fhirpath.unparse import unparse

__all__ = ["FhirPathError", "parse", "unparse"]
