"""The graph is buildable from whatever params extraction or a profile produce."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning.constraints.model import Constraint, Hardness, Kind, Origin, Span
from reasoning.graph import build_graph, node_link
from reasoning.graph.relations import EdgeKind

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True),
    st.text(max_size=30),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
param_keys = st.sampled_from(
    [
        "n",
        "relation",
        "keyword",
        "keywords",
        "words",
        "letter",
        "language",
        "phrase",
        "prompt_to_repeat",
        "not_before",
        "not_after",
        "min",
        "decimals",
        "options",
        "splitter",
        "nth",
        "first_word",
        "marker",
    ]
)
constraints = st.builds(
    lambda kind, params, hardness, origin: (kind, params, hardness, origin),
    st.sampled_from(list(Kind)),
    st.dictionaries(param_keys, values, max_size=4),
    st.sampled_from(list(Hardness)),
    st.sampled_from(list(Origin)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(constraints, max_size=6), st.text(max_size=60))
def test_build_graph_never_raises_and_keeps_its_invariants(
    items: list[tuple[Kind, dict[str, Any], Hardness, Origin]], prompt: str
) -> None:
    built = [
        Constraint(
            id=f"c{i}",
            kind=k,
            params=p,
            hardness=h,
            origin=o,
            source=Span(start=0, end=min(i, len(prompt)), text=prompt[: min(i, len(prompt))]),
        )
        for i, (k, p, h, o) in enumerate(items)
    ]
    graph = build_graph(built, prompt=prompt)
    ids = {c.id for c in built}
    assert all(e.source in ids and e.target in ids and e.source != e.target for e in graph.edges)
    inactive = set(graph.inactive)
    for conflict in graph.conflicts:
        assert conflict.a not in inactive and conflict.b not in inactive
        pair = {conflict.a, conflict.b}
        assert not any({e.source, e.target} == pair for e in graph.edges_of(EdgeKind.OVERRIDES))
    node_link(graph)
