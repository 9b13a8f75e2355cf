"""Check digits of terminology identifiers, and why an identifier is malformed.

SNOMED CT identifiers (SCTIDs) end in a Verhoeff check digit, after a two-digit partition
(``00`` a concept, ``01`` a description, ``02`` a relationship; ``10``/``11``/``12`` the same
in an extension, with a seven-digit namespace before the partition). LOINC numbers
(``2345-7``) end in a mod 10 check digit (Luhn's) after a hyphen; LOINC's other codes (parts
``LP…``, answers ``LA…``, answer lists ``LL…``, groups ``LG…``) have a final digit too, but
not that one, so only their shape is checked.

``sctid_problem`` and ``loinc_problem`` say what is wrong with a code (None when it is
well-formed); a provider's ``why_unknown`` builds its message from them.

>>> verhoeff_digit("2229800"), verhoeff_valid("22298006"), verhoeff_valid("22298007")
('6', True, False)
>>> mod10_digit("2345"), sctid_problem("22298006") is None, loinc_problem("2345-7") is None
('7', True, True)
"""

from __future__ import annotations

import re

# Verhoeff's tables: multiplication in the dihedral group D5, and the position permutation.
_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 2, 3, 4, 0, 6, 7, 8, 9, 5),
    (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7),
    (4, 0, 1, 2, 3, 9, 5, 6, 7, 8),
    (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2),
    (7, 6, 5, 9, 8, 2, 1, 0, 4, 3),
    (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)
_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 5, 7, 6, 2, 8, 3, 0, 9, 4),
    (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7),
    (9, 4, 5, 3, 1, 2, 6, 8, 7, 0),
    (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5),
    (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)
_INV = (0, 4, 3, 2, 1, 5, 6, 7, 8, 9)

#: SNOMED CT partitions: what an identifier with those two digits before its check digit is.
PARTITIONS = {
    "00": "concept",
    "01": "description",
    "02": "relationship",
    "10": "concept",
    "11": "description",
    "12": "relationship",
}
_LOINC_NUMBER = re.compile(r"^([0-9]{1,7})-([0-9])$")
_LOINC_OTHER = re.compile(r"^(LP|LA|LL|LG)[0-9]{1,9}-[0-9]$", re.IGNORECASE)
_LOINC_KINDS = {"LP": "part", "LA": "answer", "LL": "answer list", "LG": "group"}


def _verhoeff(digits: str, offset: int) -> int:
    check = 0
    for i, char in enumerate(reversed(digits)):
        check = _D[check][_P[(i + offset) % 8][int(char)]]
    return check


def verhoeff_digit(digits: str) -> str:
    """The Verhoeff check digit to append to a string of digits."""
    return str(_INV[_verhoeff(digits, 1)])


def verhoeff_valid(digits: str) -> bool:
    """Whether a string of digits ends in its right Verhoeff check digit."""
    return digits.isascii() and digits.isdigit() and _verhoeff(digits, 0) == 0


def mod10_digit(digits: str) -> str:
    """LOINC's mod 10 check digit of a number (Luhn's: every other digit from the right,
    starting with the last, is doubled and its digits summed)."""
    total = 0
    for i, char in enumerate(reversed(digits)):
        value = int(char) * (2 if i % 2 == 0 else 1)
        total += value // 10 + value % 10
    return str((10 - total % 10) % 10)


def sctid_problem(code: str) -> str | None:
    """Why ``code`` is not a well-formed SNOMED CT concept id, or None when it is one.

    >>> print(sctid_problem("22298007"))  # doctest: +NORMALIZE_WHITESPACE
    its check digit is wrong: the Verhoeff check digit of 2229800 is 6
    (22298006 would be well-formed)
    >>> sctid_problem("22298010")
    'it is a SNOMED CT description id (partition 01), not a concept id'
    """
    if not (code.isascii() and code.isdigit()):
        return "a SNOMED CT concept id (SCTID) has only the digits 0-9"
    if not 6 <= len(code) <= 18:
        return f"a SNOMED CT concept id (SCTID) has 6 to 18 digits, not {len(code)}"
    if code.startswith("0"):
        return "a SNOMED CT concept id (SCTID) does not start with 0"
    if not verhoeff_valid(code):
        right = verhoeff_digit(code[:-1])
        return (
            f"its check digit is wrong: the Verhoeff check digit of {code[:-1]} is {right} "
            f"({code[:-1]}{right} would be well-formed)"
        )
    partition = code[-3:-1]
    kind = PARTITIONS.get(partition)
    if kind is None:
        return (
            f"its partition {partition} (the two digits before the check digit) is none of "
            "SNOMED CT's"
        )
    if kind != "concept":
        return f"it is a SNOMED CT {kind} id (partition {partition}), not a concept id"
    return None


def sctid_namespace(code: str) -> str | None:
    """The extension namespace of a well-formed concept id in the long format (partition
    10), else None (a core concept id)."""
    return code[-10:-3] if code[-3:-1] == "10" and len(code) >= 11 else None


def loinc_problem(code: str) -> str | None:
    """Why ``code`` is not a well-formed LOINC code, or None when it is one.

    >>> print(loinc_problem("2345-8"))  # doctest: +NORMALIZE_WHITESPACE
    its check digit is wrong: the mod 10 check digit of LOINC number 2345 is 7
    (2345-7 would be well-formed)
    >>> loinc_problem("2345")
    'a LOINC number ends in a hyphen and its mod 10 check digit (2345-7 perhaps)'
    """
    number = _LOINC_NUMBER.match(code)
    if number is not None:
        right = mod10_digit(number[1])
        if right != number[2]:
            return (
                f"its check digit is wrong: the mod 10 check digit of LOINC number {number[1]} "
                f"is {right} ({number[1]}-{right} would be well-formed)"
            )
        return None
    if _LOINC_OTHER.match(code):
        return None
    if code.isascii() and code.isdigit() and len(code) <= 7:
        return (
            f"a LOINC number ends in a hyphen and its mod 10 check digit "
            f"({code}-{mod10_digit(code)} perhaps)"
        )
    return (
        "a LOINC code is a number, a hyphen and a check digit (2345-7), or LP, LA, LL or LG "
        "and the same"
    )


def loinc_kind(code: str) -> str:
    """What a well-formed LOINC code names: a term (a LOINC number), a part, an answer…"""
    return _LOINC_KINDS.get(code[:2].upper(), "term")
