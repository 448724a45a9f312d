"""The compositional constraint form: every textual requirement as one of six shapes.

``count(unit, filter) relation n``, ``position(unit, k, predicate)``,
``wrap(unit, left, right)``, ``structure(layout)``, ``copy(text, change)`` and
``spread(unit, per, max_diff | max_ratio)``
(:mod:`.model`), each checked by one generic verifier (:mod:`.verify`) on a
complete text and, where the quantity is monotone, on a partial one. The
catalog's named kinds (IFEval's families among them) are instances of the
form (:mod:`.kinds`): ``all_capitals`` is "no lowercase letter, at least one
capital", ``word_count`` is ``count(words)``; the generic kinds ``count``,
``position``, ``wrap``, ``structure``, ``copy`` and ``spread`` carry any other instance.
"""

from __future__ import annotations

from reasoning.constraints.form.kinds import GENERIC_KINDS, canonical, form_of, params_of
from reasoning.constraints.form.model import (
    ROUGHLY_EQUAL,
    Copy,
    Count,
    Filter,
    Form,
    Layout,
    Measure,
    Position,
    Predicate,
    Spread,
    Structure,
    Unit,
    WordClass,
    Wrap,
)
from reasoning.constraints.form.verify import Check, check

__all__ = [
    "GENERIC_KINDS",
    "ROUGHLY_EQUAL",
    "Check",
    "Copy",
    "Count",
    "Filter",
    "Form",
    "Layout",
    "Measure",
    "Position",
    "Predicate",
    "Spread",
    "Structure",
    "Unit",
    "WordClass",
    "Wrap",
    "canonical",
    "check",
    "form_of",
    "params_of",
]
