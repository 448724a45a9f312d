"""The case graph: the facts one request states, as RDF over the domain ontology.

Modules (import them directly):

- ``vocabulary``: the IRIs of the decision vocabulary (``ontologies/decisions.ttl``).
- ``quantities``: :func:`find_quantities`, typed literals (money, dates, ...).
- ``lexicon``: :class:`CaseLexicon`, what one ontology version offers the case
  builder (property labels, classes, case inputs, actions).
- ``build``: :func:`build_case`, request text -> :class:`CaseGraph`.
- ``amend``: :func:`amend_request` / :func:`restore_spans`, the request re-read with amended premises.
- ``model``: :class:`CaseGraph`, :class:`CaseFact`, :class:`CaseEntity`.
"""
