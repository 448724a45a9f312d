"""The readers that turn a prompt's wording into constraint readings (:class:`.found.Found`).

``en/`` reads English over the spaCy parse, ``zh/`` Chinese over the jieba
segmentation, ``common/`` holds the readers whose English and Chinese halves
share one table (sentence types, word shapes, answer rules such as a mark
set or a CSV layout). Within a language each module reads one family of
requirement: ``named`` the catalog's named kinds, ``form`` counts, cases,
wraps, layouts, positions and copies onto the compositional form, and
``amounts``, ``pieces``, ``sequence``, ``structure``, ``word_rules``,
``choice`` ... what their names say; ``context`` is the state the readers
of a language share.

:mod:`.registry` lists every reader of each language in the order they run
and is the one entry point (:func:`.registry.read`); :mod:`.accounting` then
checks each reading against the words of its clause and :mod:`.unrecognised`
reports what no reader took. Shared by the readers: :mod:`.lexicon` (the
unit, layout, case and change words of both languages), :mod:`.found` (the
reading), :mod:`.sentence_bounds` and :mod:`.patterns`.
"""
