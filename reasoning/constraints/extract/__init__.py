"""The readers that turn a prompt's wording into constraint readings (:class:`~reasoning.constraints.extract.found.Found`).

``en/`` reads English over the spaCy parse, ``zh/`` Chinese over the jieba
segmentation, ``common/`` holds the readers whose English and Chinese halves
share one table (a reader of sentence types, of word shapes, of answer rules
such as a mark set or a CSV layout). Within a language each module reads one
family of requirement: ``named`` the catalog's named kinds, ``form`` counts,
cases, wraps, layouts, positions and copies onto the compositional form, and
``amounts``, ``pieces``, ``sequence``, ``structure``, ``word_rules``,
``choice`` ... what their names say. :mod:`.registry` lists every
reader of each language in the order they run and is the one entry point
(:func:`.registry.read`); :mod:`reasoning.constraints.extract.accounting` then checks each reading against
the words of its clause and :mod:`reasoning.constraints.extract.unrecognised` reports what no reader took.
"""
