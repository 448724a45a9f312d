"""Decision rules: SHACL Advanced Features rules declared in the domain ontology.

Modules (import them directly; this ``__init__`` stays light because the
upload path imports :mod:`reasoning.rules.check` from the evidence core):

- ``check``: :func:`check_rules`, the upload-time checks (parse, CONSTRUCT
  only, no SERVICE / FROM / LOAD / updates) giving one ``RuleReport`` each,
  and :func:`check_sparql_texts`, the same checker over every SPARQL text and
  ``sh:pattern`` of the ontology (targets, constraints, functions).
- ``sandbox``: the evaluation-time guards (no SERVICE, no FROM loading, no
  network from the evaluating thread, RE2 for regular expressions).
- ``shapes``: :func:`load_rules`, the rules loaded into pyshacl once per version.
- ``engine``: :class:`RuleBook` (one per ontology version) and its
  :meth:`RuleBook.evaluate` over a case graph within a time limit.
- ``model``: the :class:`Decision` value objects.
- ``claims``: :func:`check_claim`, the symbolic check of one sentence against
  a decision.
- ``decide``: :class:`DecisionEngine`, the entry point: request text in,
  :class:`Decision` out.
- ``grounds``: :func:`realise_grounds`, the decision's grounds as sentences
  (English and Chinese) from the ontology's labels (``phrasing``).
- ``nearest``: the nearest rule of a ``no_rule_applies`` case and what a
  missing input would decide, found by dropping conditions of the rules'
  patterns (``relax``) and said by ``whynot``.
"""
