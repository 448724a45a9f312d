"""``ConstraintSteering``: the token controllers of one request, composed.

One object implements the ``Steering`` protocol for a request: a character
policy (commas, case, script), a layout of literal / free / formal segments
(the structure), counted bounds (words, sentences, a letter, placeholders),
forbidden words, keywords (``controllers.keywords``) and a minimum of
capital words (``controllers.capitals``). Per step and per beam row:

1. masses of tokens the character policy bans move to their allowed variant
   (the case-folded token, the token without the comma), then the bans apply
   (one batched vector operation for all rows);
2. in a literal segment, and while a keyword is being inserted, only the
   next token of the literal or keyword stays (score 0: the choice was made
   when it began);
3. in a free segment, the segment's character class and the upper bounds
   mask the row; the stop tokens' mass (EOS, a newline ending a line, ``>``
   ending a title) moves to the token that begins what must come next (the
   next literal, an opening ``[`` for a missing placeholder, or EOS); lower
   bounds hold the stop back; an exhausted bound or budget forces it; when
   the budget left is tight for the sentences a minimum still owes (fewer
   than ``_TOKENS_PER_SENTENCE`` per sentence), the gate segment keeps only
   tokens that end the current sentence once it has a word (unless the
   other masks leave none of them, then the row stays as it was);
4. in a formal segment, the llguidance matcher's bitmask masks the row;
5. when lazy checks are needed (forbidden words, capped keywords, byte fragments of
   multi-byte characters) the best ``TOP_K`` survivors are checked one by one
   and the row is cut to those that pass. A byte fragment is judged on the
   characters it completes (case, commas, script, words, sentences, the
   counted letter), and an unfinished character is budgeted as the worst it
   can become (a Han character is one more word), so a bound holds under
   both IFEval's word count and our verifier's;
6. inside a citation (``[`` opened while a ``cite_sources`` requirement is
   owed) only the tokens spelling a shown evidence id and ``]`` stay; the
   shown ids are one branch's (``for_evidence`` binds a branch's own ids).

Guarantees (beyond the protocol's): every kept token passes every check; a
row is never left without a finite entry: when nothing passes, the state's
forced exit (the next literal or EOS) is allowed and the state records the
violation it causes in ``violations``, so it is reported, never silent.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from inference.decoder.controllers.capitals import CAPITAL_WORD_TOKENS, Capitals, capital_starts
from inference.decoder.controllers.charset import CharPolicy, split_utf8
from inference.decoder.controllers.citing import Citations
from inference.decoder.controllers.counts import Counts, Later, Limits, count_text, good_last_word
from inference.decoder.controllers.keywords import Keywords
from inference.decoder.controllers.lexical import ForbiddenWords
from inference.decoder.controllers.sentences import SentenceRoom, sentence_plan
from inference.decoder.controllers.template import Formal, Free, Literal, Segment
from inference.decoder.vocab import VocabTables, joins_run

__all__ = ["TOP_K", "ConstraintSteering", "SteerState"]

TOP_K = 32
_MAX_LAZY_ROUNDS = 4
_NEG_INF = float("-inf")
_PLACEHOLDER_CAP = 8
_PLACEHOLDER_TOKENS = _PLACEHOLDER_CAP + 2  # budget kept for one forced placeholder ("[", text, "]")
_MIN_SEGMENT_TOKENS = 2
_CITATION_TOKENS = 5  # budget kept for one forced citation (" [", "E", digits, "]")
_CITING_ROLES = ("body", "postscript")
_RUNNING_TEXT = ("body",)  # roles where an owed keyword is inserted when it is due
_TOKENS_PER_SENTENCE = 6  # below this many budget tokens per missing sentence, close the current one
_WORDS_PER_SENTENCE = 3  # likewise for the words a maximum leaves
_WORD_PACE_SLACK = 3  # budget tokens kept beyond one per owed word (a closing period, an end)
_KEYWORD_BONUS = 1.0  # log-probability added to the first token of an owed keyword
_KEYWORD_COMMIT_CHARS = 3  # a chosen first token commits to its keyword once it spells this much of it


@dataclass(frozen=True, slots=True)
class SteerState:
    """One beam's controller state. Immutable: ``advance`` returns a new one."""

    text: str = ""
    pending: bytes = b""
    n_tokens: int = 0
    seg: int = 0
    lit_pos: int = 0
    seg_tokens: int = 0
    seg_deadline: int | None = None
    seg_worded: bool = False  # the current part has written a letter (a part must hold a word)
    bracket_tokens: int = 0
    counts: Counts = field(default_factory=Counts)
    cite: str | None = None  # inside a citation: the text after its "["
    cited: frozenset[str] = frozenset()
    insert: tuple[int, ...] = ()  # the rest of a keyword being inserted: forced next
    keyword_counts: tuple[int, ...] = ()  # each keyword's occurrences in ``text``
    capital_count: int = 0  # capital words in ``text``
    caps_open: bool = False  # inside a word begun in capitals while capital words are owed
    matcher: Any = None
    finished: bool = False
    violations: tuple[str, ...] = ()


@dataclass(frozen=True)
class _CompiledSegment:
    segment: Segment
    tokens: tuple[int, ...] = ()  # literal tokens
    allowed: torch.Tensor | None = None  # free: [V] bool class mask
    fragments: torch.Tensor | None = None  # free: [V] bool byte fragments of the class
    stop: torch.Tensor | None = None  # free: [V] bool stop tokens
    target: int = -1  # the token that leaves this segment
    reserve: Counts = field(default_factory=Counts)  # what later literals add
    reserve_tokens: int = 0  # tokens later segments need at least
    free_after: int = 0  # free segments after this one
    bodies_after: int = 0  # body free segments after this one
    sentences: SentenceRoom = field(default_factory=SentenceRoom)  # sentences later segments add at least
    later_keywords: tuple[int, ...] = ()  # each keyword's occurrences in later literals
    later_capitals: int = 0  # capital words in later literals


class ConstraintSteering:
    """Token controllers compiled from a request's constraints (see module doc).

    Build it with ``inference.decoder.compile.compile_steering``; the
    constructor takes already-validated parts.
    """

    def __init__(
        self,
        tables: VocabTables,
        *,
        segments: tuple[Segment, ...],
        policy: CharPolicy,
        soft_policy: CharPolicy | None = None,
        soft_penalty: float = 2.0,
        limits: Limits | None = None,
        forbidden: ForbiddenWords | None = None,
        citations: Citations | None = None,
        keywords: Keywords | None = None,
        capitals: Capitals | None = None,
        max_new_tokens: int | None = None,
        controlled: frozenset[str] = frozenset(),
        assisted: frozenset[str] = frozenset(),
        uncontrolled: frozenset[str] = frozenset(),
    ) -> None:
        self.tables = tables
        self.policy = policy
        self.limits = limits if limits is not None else Limits()
        self.forbidden = forbidden
        self.citations = citations
        self.keywords = keywords
        self.capitals = capitals
        self.max_new_tokens = max_new_tokens
        self.controlled = controlled
        self.assisted = assisted
        self.uncontrolled = uncontrolled
        self.eos = tables.eos_ids[0]
        self._eos_mask = torch.zeros(tables.size, dtype=torch.bool, device=tables.device)
        self._eos_mask[list(tables.eos_ids)] = True
        self._policy_mask = policy.allowed_mask(tables) if policy.active else ~tables.special
        banned = ~self._policy_mask & ~tables.special & ~tables.fragment
        self._variants: tuple[torch.Tensor, torch.Tensor] | None = None
        if policy.no_comma or policy.case:
            vmap = policy.variants(tables, banned)
            src = torch.nonzero(vmap >= 0).flatten()
            dst = vmap[src]
            keep = self._policy_mask[dst]
            self._variants = (src[keep], dst[keep])
        self._soft: torch.Tensor | None = None
        if soft_policy is not None and soft_policy.active:
            soft_bad = ~soft_policy.allowed_mask(tables) & ~tables.special & ~tables.fragment
            self._soft = soft_bad.to(torch.float32) * -soft_penalty
        # Byte fragments carry characters the static tables cannot describe
        # (their letters, words, commas appear only once completed), so any
        # policy or upper bound checks them one by one on the completed text.
        self._lazy_fragments = policy.active or self.limits.has_max
        self._fragment_list: list[bool] = tables.fragment.tolist()
        self._fragment_ids = torch.nonzero(tables.fragment).flatten()
        self._continuation: torch.Tensor = tables.cached("continuation", lambda: _continuation(tables))
        self._word_end: torch.Tensor = tables.cached("word-end", lambda: _word_end(tables))
        self._ends_sentence: torch.Tensor = tables.cached("ends-sentence", lambda: _ends_sentence(tables))
        self._terminal: torch.Tensor = tables.cached("terminal", lambda: _terminal(tables))
        self._fresh_word: torch.Tensor = tables.cached("fresh-word", lambda: _fresh_word(tables))
        # Tokens that add a word (IFEval's \w+ runs): fresh, and after a word character.
        self._adds_word = tables.word_runs >= 1
        self._adds_word_after_word = (tables.word_runs - tables.starts_wordchar.to(torch.int32)) >= 1
        self._keyword_tokens = self._compile_keywords()
        self._keyword_starts = self._keyword_start_map()
        self._keyword_bonus = tuple(
            tuple(t for t, found in self._keyword_starts.items() if any(i == j and eligible for j, _, eligible in found))
            for i in range(len(self._keyword_tokens))
        )
        self._keyword_reserve = tuple(
            count_text(" " + k.text, self.limits.letter) for k in (keywords.items if keywords else ())
        )
        self._keyword_need = sum(k.at_least for k in keywords.items) if keywords else 0
        self._keyword_capped = keywords is not None and keywords.has_max
        self._capital_starts = capital_starts(tables, spaced=False) if capitals is not None else None
        self._capital_starts_spaced = capital_starts(tables, spaced=True) if capitals is not None else None
        # Per-token checks of the best candidates: forbidden words, capped keywords.
        self._checks_tokens = forbidden is not None or self._keyword_capped
        self._open_bracket = self._bracket_token(" [")
        self._open_bracket_bare = self._bracket_token("[")
        self._close_bracket = self._bracket_token("]")
        self._segments = self._compile(segments)
        self._gate = max(
            (i for i, c in enumerate(self._segments) if isinstance(c.segment, Free) and c.segment.gate),
            default=-1,
        )
        self._cite_open = [t for t in (self._open_bracket, self._open_bracket_bare) if t >= 0]
        none = torch.zeros(tables.size, dtype=torch.bool, device=tables.device)
        self._allowed_stack = torch.stack(
            [c.allowed if c.allowed is not None else none for c in self._segments] or [none]
        )  # [S, V]
        self._fragment_stack = torch.stack(
            [c.fragments if c.fragments is not None else none for c in self._segments] or [none]
        )  # [S, V]: fragments the segment's class admits (checked lazily)
        self._stop_stack = torch.stack(
            [c.stop if c.stop is not None else none for c in self._segments] or [none]
        )  # [S, V]
        # Stop tokens as padded index lists: the stop mass is a gather, not a [V] pass.
        stop_lists = [torch.nonzero(m).flatten() for m in self._stop_stack]
        width = max(1, max(len(x) for x in stop_lists))
        self._stop_index = torch.zeros(len(stop_lists), width, dtype=torch.long, device=tables.device)
        self._stop_valid = torch.zeros(len(stop_lists), width, dtype=torch.bool, device=tables.device)
        for i, idx in enumerate(stop_lists):
            self._stop_index[i, : len(idx)] = idx
            self._stop_valid[i, : len(idx)] = True
        self._shifts = torch.arange(32, dtype=torch.int32)
        self._has_formal = any(isinstance(s.segment, Formal) for s in self._segments)
        self._matcher_proto: Any = None
        if self._has_formal:
            self._matcher_proto = self._first_matcher()

    # --- construction -------------------------------------------------

    def _bracket_token(self, text: str) -> int:
        ids = self.tables.encode(text)
        return ids[0] if len(ids) == 1 else -1

    def _literal_tokens(self, text: str) -> tuple[int, ...]:
        return tuple(self.tables.encode(text))

    def _free_masks(self, seg: Free) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(allowed, stop, fragments) masks of a free segment, each ``[V]`` bool."""
        t = self.tables
        allowed = self._policy_mask.clone()
        if self._lazy_fragments:
            allowed &= ~t.fragment
        allowed &= ~t.has_star & ~t.has_angle & ~t.special
        if self.limits.min_placeholders is None:
            allowed &= ~t.has_bracket
        else:
            empty = torch.tensor(["[]" in x for x in t.texts], dtype=torch.bool, device=t.device)
            allowed &= ~empty
        stop = self._eos_mask.clone()
        if not seg.multiline:
            stop |= t.has_newline
            allowed &= ~t.has_newline
        if seg.role in ("title", "heading"):
            stop |= t.has_angle | t.has_star
        fragments = t.fragment & ~t.special & ~t.has_star & ~t.has_angle & ~t.has_bracket
        if not seg.multiline:
            fragments &= ~t.has_newline
        return allowed, stop, fragments

    def _compile(self, segments: tuple[Segment, ...]) -> tuple[_CompiledSegment, ...]:
        out: list[_CompiledSegment] = []
        letter = self.limits.letter
        plan = sentence_plan(segments, self.limits.max_sentences)
        for index, seg in enumerate(segments):
            later = segments[index + 1 :]
            later_literals = [s.text for s in later if isinstance(s, Literal)]
            reserve = count_text("".join(later_literals), letter)
            # Free text between literals keeps their words apart: count them apart.
            reserve = dataclasses.replace(reserve, units=sum(count_text(x).units for x in later_literals))
            reserve_tokens = sum(
                len(self._literal_tokens(s.text)) if isinstance(s, Literal) else _MIN_SEGMENT_TOKENS
                for s in later
            )
            free_after = sum(1 for s in later if isinstance(s, Free))
            later_keywords = self._literal_keywords(later_literals)
            later_capitals = sum(self.capitals.count(text) for text in later_literals) if self.capitals else 0
            bodies_after = sum(1 for s in later if isinstance(s, Free) and s.role == "body")
            if isinstance(seg, Literal):
                out.append(_CompiledSegment(seg, tokens=self._literal_tokens(seg.text)))
                continue
            following = later[0] if later else None
            if isinstance(following, Literal):
                target = self._literal_tokens(following.text)[0]
            else:
                target = self.eos
            room = plan[index]
            assert room is not None
            if isinstance(seg, Formal):
                out.append(
                    _CompiledSegment(
                        seg,
                        target=target,
                        reserve=reserve,
                        reserve_tokens=reserve_tokens,
                        sentences=room,
                        later_keywords=later_keywords,
                        later_capitals=later_capitals,
                    )
                )
                continue
            allowed, stop, fragments = self._free_masks(seg)
            if target != self.eos:
                allowed[target] = False
            out.append(
                _CompiledSegment(
                    seg,
                    allowed=allowed,
                    fragments=fragments,
                    stop=stop,
                    target=target,
                    reserve=reserve,
                    reserve_tokens=reserve_tokens,
                    free_after=free_after,
                    bodies_after=bodies_after,
                    sentences=room,
                    later_keywords=later_keywords,
                    later_capitals=later_capitals,
                )
            )
        return tuple(out)

    def _literal_keywords(self, literals: Sequence[str]) -> tuple[int, ...]:
        """Each keyword's occurrences in ``literals``, counted one literal at a time."""
        if self.keywords is None:
            return ()
        per_literal = [self.keywords.counts(text) for text in literals]
        return tuple(sum(col) for col in zip(*per_literal)) if per_literal else (0,) * len(self.keywords.items)

    def _compile_keywords(self) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
        """Per keyword, its tokens after a word (" risk") and after whitespace ("risk").
        A keyword that begins with a Han character is written without a space
        before it either way (Chinese and Japanese text has none)."""
        if self.keywords is None:
            return ()
        out = []
        for k in self.keywords.items:
            first = k.text[0]
            lead = "" if first.isalnum() and not joins_run(first) else " "
            out.append((self._literal_tokens(lead + k.text), self._literal_tokens(k.text)))
        return tuple(out)

    def _keyword_start_map(self) -> dict[int, tuple[tuple[int, tuple[int, ...], bool], ...]]:
        """First token -> (keyword, the tokens that finish it, whether the model's
        own choice of it commits to the keyword: it spells enough of it)."""
        starts: dict[int, list[tuple[int, tuple[int, ...], bool]]] = {}
        for i, variants in enumerate(self._keyword_tokens):
            assert self.keywords is not None
            enough = min(_KEYWORD_COMMIT_CHARS, len(self.keywords.items[i].text))
            for tokens in variants:
                if tokens:
                    eligible = len(self.tables.texts[tokens[0]].strip()) >= enough
                    starts.setdefault(tokens[0], []).append((i, tokens[1:], eligible))
        return {t: tuple(found) for t, found in starts.items()}

    def _first_matcher(self) -> Any:
        from llguidance import LLMatcher

        for comp in self._segments:
            if isinstance(comp.segment, Formal):
                matcher = LLMatcher(self.tables.llg_tokenizer, comp.segment.grammar, log_level=0)
                if matcher.is_error():
                    from reasoning.errors import InvalidInput

                    raise InvalidInput(f"the format grammar is invalid: {matcher.get_error()}")
                return matcher
        return None

    @property
    def device(self) -> torch.device:
        """Where the tables live (``compile_steering(device=...)``), and so where the
        beam search selects tokens under this steering."""
        return self.tables.device

    # --- branches -----------------------------------------------------

    def for_evidence(self, ids: Sequence[str]) -> ConstraintSteering:
        """This steering for a branch whose prompt shows the evidence ``ids``.

        Each evidence branch sees only its own facts, so its citations may
        name only those. The copy shares every compiled table, mask and
        grammar (nothing is compiled again); only the citation controller is
        rebound. Without one, or with the same ids, it is ``self`` (so the
        beam search still steers all branches in one call).

        A branch that shows fewer ids than the ``cite_sources`` minimum
        cannot meet it: it is steered to cite every id it shows (none when it
        shows none), its ``unmet`` reports "citations", and the constraint
        counts as assisted, not controlled, for it. Whether some branch can
        meet it is the caller's check (``compile.branch_steerings``).
        """
        if self.citations is None:
            return self
        shown = tuple(dict.fromkeys(str(i) for i in ids))
        if shown == self.citations.ids:
            return self
        bound = copy.copy(self)
        bound.citations = self.citations.for_ids(shown)
        if not bound.citations.reachable:
            sources = frozenset(self.citations.sources)
            bound.controlled = self.controlled - sources
            bound.assisted = self.assisted | sources
            bound.uncontrolled = self.uncontrolled - sources
        return bound

    # --- protocol -----------------------------------------------------

    def initial_state(self) -> SteerState:
        state = SteerState(
            matcher=self._matcher_proto.deep_copy() if self._has_formal else None,
            keyword_counts=(0,) * len(self._keyword_tokens),
        )
        return self._enter(state, 0)

    def apply(self, states: list[Any], logprobs: torch.Tensor) -> torch.Tensor:
        """Adjusted log-probabilities. ``logprobs: [B, V]``; returns ``[B, V]``.

        Rows are planned in Python (a few attribute reads per beam), then
        masked together: the per-step cost is a fixed number of ``[B, V]``
        tensor operations plus, with lazy checks, ``O(TOP_K)`` per row.
        """
        lp = logprobs.float()
        if self._variants is not None:
            src, dst = self._variants
            probs = lp.exp()  # [B, V]
            probs.index_add_(1, dst, probs[:, src])
            lp = probs.log()
        if self._soft is not None:
            lp = lp + self._soft
        plans = [self._plan(state) for state in states]
        free = [r for r, plan in enumerate(plans) if plan.kind == "free"]
        if len(free) == len(plans):
            out = self._free_rows(states, plans, lp)  # [B, V]: the common case, no copy
        else:
            out = torch.full_like(lp, _NEG_INF)  # [B, V]
            if free:
                out[free] = self._free_rows([states[r] for r in free], [plans[r] for r in free], lp[free])
        for r, plan in enumerate(plans):
            if plan.kind == "only":
                out[r, plan.exit] = 0.0
            elif plan.kind == "formal":
                out[r] = self._formal_row(states[r], plan, lp[r])
            elif plan.kind == "cite":
                assert self.citations is not None and states[r].cite is not None
                ids = self.citations.next_tokens(self.tables, states[r].cite, states[r].cited)
                out[r, ids] = lp[r, ids]
        checked = [r for r, plan in enumerate(plans) if plan.kind != "only"]
        if checked:
            alive = (out[checked].amax(dim=-1) > _NEG_INF).tolist()
            for r, ok in zip(checked, alive):
                if not ok:
                    out[r, plans[r].exit] = 0.0
        return out.to(logprobs.dtype)

    def advance(self, state: Any, token_id: int) -> SteerState:
        assert isinstance(state, SteerState)
        if state.finished:
            return state
        comp = self._segments[state.seg] if state.seg < len(self._segments) else None
        if token_id in self.tables.eos_ids:
            return self._finish(state, ended_by_model=True)
        if (
            comp is not None
            and state.cite is None
            and not state.insert
            and not isinstance(comp.segment, Literal)
            and token_id == comp.target
        ):
            if not self._holds_text(state):
                state = dataclasses.replace(state, violations=state.violations + ("empty_part",))
            state = self._enter(state, state.seg + 1)
            comp = self._segments[state.seg]
        new = self._append(state, token_id)
        if self.citations is not None:
            new = self._track_citation(state, new, token_id, comp)
        if state.insert:
            new = dataclasses.replace(new, insert=state.insert[1:])
        elif token_id in self._keyword_starts and comp is not None and isinstance(comp.segment, Free):
            new = dataclasses.replace(new, insert=self._commit(state, token_id))
        if self._capital_starts is not None:
            new = dataclasses.replace(new, caps_open=self._caps_open(state, token_id))
        if comp is None:
            return new
        if isinstance(comp.segment, Literal):
            pos = state.lit_pos + 1
            if pos >= len(comp.tokens):
                return self._enter(dataclasses.replace(new, lit_pos=0), state.seg + 1)
            return dataclasses.replace(new, lit_pos=pos)
        if isinstance(comp.segment, Formal) and new.matcher is not None:
            matcher = new.matcher.deep_copy()
            if not matcher.consume_token(token_id):
                new = dataclasses.replace(new, violations=new.violations + ("format",))
            new = dataclasses.replace(new, matcher=matcher)
        bracket = new.bracket_tokens + 1 if new.counts.bracket_open else 0
        worded = new.seg_worded or any(ch.isalpha() for ch in new.text[len(state.text) :])
        return dataclasses.replace(
            new, seg_tokens=new.seg_tokens + 1, bracket_tokens=bracket, seg_worded=worded
        )

    # --- state transitions --------------------------------------------

    def _append(self, state: SteerState, token_id: int) -> SteerState:
        text, tail = split_utf8(state.pending + self.tables.token_bytes[token_id])
        chunk = text if text is not None else ""
        counts = state.counts.add(chunk, self.limits.letter)
        text = state.text + chunk
        found = state.keyword_counts
        if self.keywords is not None and chunk:
            found = self.keywords.counts_after(found, state.text, chunk)
        capitals = state.capital_count
        if self.capitals is not None and chunk:
            capitals = self.capitals.count_after(capitals, state.text, chunk)
        return dataclasses.replace(
            state,
            text=text,
            pending=tail,
            n_tokens=state.n_tokens + 1,
            counts=counts,
            keyword_counts=found,
            capital_count=capitals,
        )

    def _caps_open(self, state: SteerState, token_id: int) -> bool:
        """Whether the word after ``token_id`` is one begun in capitals that must stay so."""
        assert self._capital_starts is not None
        if bool(self._capital_starts[token_id]):
            return self._capitals_owed(state) > 0
        return state.caps_open and bool(self.tables.starts_wordchar[token_id])

    def _commit(self, state: SteerState, token_id: int) -> tuple[int, ...]:
        """The tokens forced after ``token_id`` when it begins an owed keyword
        (none when it does not). The model's own choice commits only when the
        token spells enough of the keyword; the steering's exit always does."""
        owed = self._keyword_owed(state)
        if state.cite is not None or state.counts.bracket_open or not any(owed):
            return ()
        plan: _Plan | None = None
        for i, rest, eligible in self._keyword_starts[token_id]:
            if not owed[i]:
                continue
            if not eligible:
                plan = plan or self._plan(state)
                if token_id not in (plan.exit, plan.keyword):
                    continue
            return rest
        return ()

    def _enter(self, state: SteerState, seg: int) -> SteerState:
        """Move to segment ``seg``; a finished layout finishes the state."""
        if seg >= len(self._segments):
            return dataclasses.replace(state, seg=seg, lit_pos=0)
        comp = self._segments[seg]
        deadline = None
        if isinstance(comp.segment, Free):
            if comp.segment.cap_tokens is not None:
                deadline = state.n_tokens + comp.segment.cap_tokens
            if self.max_new_tokens is not None:
                room = self.max_new_tokens - state.n_tokens - comp.reserve_tokens
                share = room // (1 + comp.bodies_after) if comp.segment.role == "body" else room
                budget_deadline = state.n_tokens + max(_MIN_SEGMENT_TOKENS, share)
                deadline = budget_deadline if deadline is None else min(deadline, budget_deadline)
        return dataclasses.replace(
            state, seg=seg, lit_pos=0, seg_tokens=0, seg_deadline=deadline, seg_worded=False
        )

    def _holds_text(self, state: SteerState) -> bool:
        """Whether the current segment, a part, has text of its own: a word
        with a letter (a bullet of bare digits or punctuation is no text; a
        forced first word counts for the part that follows it). Formal and
        literal segments always do."""
        if state.seg >= len(self._segments):
            return True
        segment = self._segments[state.seg].segment
        if not isinstance(segment, Free) or segment.after_word:
            return True
        return state.seg_worded

    def _finish(self, state: SteerState, *, ended_by_model: bool) -> SteerState:
        problems = list(state.violations)
        if state.seg < len(self._segments) and not (
            state.seg == len(self._segments) - 1
            and not isinstance(self._segments[state.seg].segment, Literal)
        ):
            problems.append("structure")
        elif not self._holds_text(state):
            problems.append("empty_part")
        counts = state.counts
        if counts.firm_run == "armed":
            # The text ends here: a final "word." counts for every judge.
            counts = dataclasses.replace(counts, firm_sentences=counts.firm_sentences + 1)
        if not self.limits.mins_met(counts):
            problems.append("minimum")
        if self.citations is not None and (state.cite is not None or self.citations.missing(state.cited)):
            problems.append("citations")
        if state.matcher is not None and not state.matcher.is_accepting():
            problems.append("format")
        if self.forbidden is not None and not self.forbidden.ends_ok(state.text):
            problems.append("forbidden_words")
        if self.keywords is not None:
            none_later = (0,) * len(self.keywords.items)
            found = self.keywords.counts(state.text)
            if any(self.keywords.owed(found, none_later)) or self.keywords.exceeded(found, none_later):
                problems.append("keywords")
        if self.capitals is not None and self.capitals.owed(self.capitals.count(state.text), 0):
            problems.append("capitals")
        return dataclasses.replace(state, finished=True, violations=tuple(dict.fromkeys(problems)))

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        """What the text fails of the controlled requirements, were it to end now.

        Empty when none. The beam search calls it on the answer it returns,
        finished or cut by the token budget, to report rather than hide a
        violation ("structure", "empty_part", "minimum", "citations", "format",
        "forbidden_words", "keywords", "capitals"). "empty_part": a part of the layout (a response, a
        paragraph, a title, a postscript...) holds no word, so its structure
        is broken even where the text passes other checks.
        """
        return state.violations if state.finished else self._finish(state, ended_by_model=False).violations

    # --- masking -----------------------------------------------------

    def _plan(self, state: SteerState) -> _Plan:
        """What a row needs: one forced token, a free-text mask or a grammar mask."""
        if state.finished or state.seg >= len(self._segments):
            return _Plan("only", self.eos)
        comp = self._segments[state.seg]
        if isinstance(comp.segment, Literal):
            return _Plan("only", comp.tokens[state.lit_pos])
        if state.cite is not None:
            return _Plan("cite", self._close_bracket if self._close_bracket >= 0 else self.eos, seg=state.seg)
        if state.insert:
            return _Plan("only", state.insert[0], seg=state.seg)
        missing = self._cite_owed(state)
        budget_out = self.max_new_tokens is not None and (
            self.max_new_tokens - state.n_tokens
            <= comp.reserve_tokens + 2 + _CITATION_TOKENS * missing + self._insert_tokens_owed(state)
        )
        if isinstance(comp.segment, Formal):
            return _Plan("formal", comp.target, seg=state.seg, forced=budget_out)
        seg = comp.segment
        assert isinstance(seg, Free)
        counts = state.counts
        exit_token = comp.target
        need_placeholder = (
            seg.gate
            and self.limits.min_placeholders is not None
            and counts.placeholders < self.limits.min_placeholders
        )
        if counts.bracket_open:
            exit_token = self._close_bracket
        elif (seg.gate and missing and self._cite_open) or need_placeholder:
            # An owed citation or placeholder opens with a bracket where the model would stop.
            exit_token = self._open_bracket_bare if state.text[-1:].isspace() else self._open_bracket
        if exit_token < 0:
            exit_token = comp.target
        keyword = self._keyword_exit(state) if exit_token == comp.target and seg.role in _RUNNING_TEXT else -1
        if keyword >= 0 and seg.gate:
            # A forced end writes an owed keyword first. The model's own wish
            # to stop is only held back (the pacing below inserts the keyword),
            # so the keywords spread through the text instead of piling up at
            # its end.
            exit_token = keyword
        may_stop = state.seg_tokens >= 1 and not state.pending and self._holds_text(state)
        capitals = self._capitals_owed(state) if seg.role in _RUNNING_TEXT else 0
        if seg.gate and not counts.bracket_open and (
            missing or keyword >= 0 or capitals or not self.limits.mins_met(counts)
        ):
            may_stop = may_stop and exit_token not in (comp.target, keyword)
            may_stop = may_stop and not capitals
        forced = budget_out or (state.seg_deadline is not None and state.n_tokens >= state.seg_deadline)
        if counts.bracket_open and state.bracket_tokens >= _PLACEHOLDER_CAP:
            forced = True
        if self.limits.has_max and not counts.bracket_open:
            forced = forced or self.limits.must_close(counts, self._later(state))
        # A forced end waits while the text ends in a forbidden word (one more
        # word character, e.g. "risk" -> "risky", makes it safe to stop).
        ends_clean = self.forbidden is None or self.forbidden.ends_ok(state.text)
        if forced and not state.pending and ends_clean:
            if capitals and not counts.bracket_open and exit_token == comp.target:
                # The budget kept room for the owed capital words: one begins now.
                return _Plan("free", exit_token, seg=state.seg, forced=True, capitals="now")
            return _Plan("only", exit_token)
        opens = exit_token in (self._open_bracket, self._open_bracket_bare)
        due = need_placeholder and opens and not state.pending and self._placeholder_due(state)
        last = state.text[-1:]
        if due and (last == "" or not last.isalnum() or self._placeholder_urgent(state)):
            return _Plan("only", exit_token)
        keyword_due = keyword >= 0 and not state.pending and ends_clean and self._keyword_due(state)
        if keyword_due and (last == "" or not joins_run(last) or self._insert_urgent(state)):
            return _Plan("only", keyword)
        caps = ""
        if capitals and not state.pending and not counts.bracket_open and self._capitals_due(state):
            caps = "now" if last == "" or not joins_run(last) or self._insert_urgent(state) else "due"
        close = ""
        if seg.gate and not counts.bracket_open and not state.pending:
            close = self._sentences_short(state, missing)
        if close and keyword >= 0 and ends_clean:
            # Owed text is written before the sentence ends, not after it.
            return _Plan("only", keyword)
        if close and capitals:
            caps, close = "now", ""
        words = seg.gate and not state.pending and self._words_short(state)
        return _Plan(
            "free",
            exit_token,
            seg=state.seg,
            may_stop=may_stop,
            forced=forced,
            close=close,
            placeholder=due,
            words=words,
            keyword=keyword if keyword_due else -1,
            capitals=caps,
        )

    def _words_short(self, state: SteerState) -> bool:
        """Whether the word minimum needs a new word from (nearly) every token the budget has left.

        A model that spends its tokens on markup, numbers or long words can
        reach the end of the budget short of the minimum; from this point on
        every token must add a word (``_Plan.words``), so the minimum is met
        whenever one word per token can still meet it.
        """
        need = self.limits.min_words
        if need is None or self.max_new_tokens is None:
            return False
        owed = need - state.counts.words - self._reserve(state).words
        if owed <= 0:
            return False
        comp = self._segments[state.seg]
        left = self.max_new_tokens - state.n_tokens - comp.reserve_tokens - self._owed_tokens(state)
        return owed >= left - _WORD_PACE_SLACK

    def _placeholder_due(self, state: SteerState) -> bool:
        """Whether an owed placeholder must open now (the exit is then ``[``).

        Placeholders are paced over the token budget: the k-th is due once
        k / (minimum + 1) of the budget is spent, so they spread through the
        text instead of waiting for the model to stop (a model that never
        stops would get at most one). A due placeholder opens at once after
        whitespace or punctuation; after a letter the row may only finish its
        word or open the placeholder as the next word (``_Plan.placeholder``).
        When the budget left holds only the owed placeholders, one opens at
        once, wherever the text is.
        """
        need = self.limits.min_placeholders
        have = state.counts.placeholders
        if need is None or self.max_new_tokens is None or have >= need:
            return False
        usable = self._placeholder_budget(state)
        return self._placeholder_urgent(state) or state.n_tokens >= usable * (have + 1) / (need + 1)

    def _placeholder_urgent(self, state: SteerState) -> bool:
        """Whether the budget left holds only the placeholders still owed."""
        need = self.limits.min_placeholders
        if need is None or self.max_new_tokens is None:
            return False
        owed = need - state.counts.placeholders
        return self._placeholder_budget(state) - state.n_tokens <= owed * _PLACEHOLDER_TOKENS

    def _placeholder_budget(self, state: SteerState) -> int:
        """The tokens placeholders are paced over: the paced budget less the owed keywords and capital words."""
        return self._paced_budget(state) - self._insert_tokens_owed(state)

    def _paced_budget(self, state: SteerState) -> int:
        """The tokens insertions are paced over: the budget less what later literals need."""
        assert self.max_new_tokens is not None
        return self.max_new_tokens - self._segments[state.seg].reserve_tokens - 2

    # --- keywords -----------------------------------------------------

    def _keyword_owed(self, state: SteerState) -> tuple[int, ...]:
        """Occurrences each keyword still needs (the later literals' own counted)."""
        if self.keywords is None or state.seg >= len(self._segments):
            return ()
        return self.keywords.owed(state.keyword_counts, self._segments[state.seg].later_keywords)

    def _keyword_tokens_owed(self, state: SteerState) -> int:
        """Budget tokens the owed keywords need (each inserted after a word)."""
        if self._keyword_need == 0:
            return 0
        owed = self._keyword_owed(state)
        return sum(n * len(spaced) for n, (spaced, _) in zip(owed, self._keyword_tokens))

    def _insert_tokens_owed(self, state: SteerState) -> int:
        """Budget tokens kept for the owed keywords and capital words."""
        return self._keyword_tokens_owed(state) + CAPITAL_WORD_TOKENS * self._capitals_owed(state)

    def _owed_tokens(self, state: SteerState) -> int:
        """Budget tokens kept for what the text still owes: citations, keywords, capital words."""
        return _CITATION_TOKENS * self._cite_owed(state) + self._insert_tokens_owed(state)

    # --- capital words ------------------------------------------------

    def _capitals_owed(self, state: SteerState) -> int:
        """Capital words still needed (the later literals' own counted)."""
        if self.capitals is None or state.seg >= len(self._segments):
            return 0
        return self.capitals.owed(state.capital_count, self._segments[state.seg].later_capitals)

    def _capitals_due(self, state: SteerState) -> bool:
        """Whether an owed capital word should begin now (paced as keywords are)."""
        if self.capitals is None or self.max_new_tokens is None:
            return False
        owed = self._capitals_owed(state)
        if owed == 0:
            return False
        usable = self._paced_budget(state) - self._keyword_tokens_owed(state)
        return self._paced_due(state, usable, self.capitals.need - owed, self.capitals.need)

    def _keyword_exit(self, state: SteerState) -> int:
        """The first token of the first owed keyword, as it is written here
        (bare after whitespace or at the start, else after a space); -1 if none."""
        if self._keyword_need == 0 or state.counts.bracket_open:
            return -1
        for n, (spaced, bare) in zip(self._keyword_owed(state), self._keyword_tokens):
            if n:
                after_space = state.text == "" or state.text[-1].isspace()
                tokens = bare if after_space else spaced
                return tokens[0] if tokens else -1
        return -1

    def _keyword_due(self, state: SteerState) -> bool:
        """Whether an owed keyword should be inserted now: the k-th of N once
        k / (N + 1) of the budget is spent (see the module doc of ``keywords``)."""
        if self.max_new_tokens is None:
            return False
        owed = sum(self._keyword_owed(state))
        if owed == 0:
            return False
        return self._paced_due(state, self._paced_budget(state), self._keyword_need - owed, self._keyword_need)

    def _paced_due(self, state: SteerState, usable: int, have: int, need: int) -> bool:
        """Whether the next of ``need`` paced insertions (``have`` written) is due:
        the k-th once k / (need + 1) of ``usable`` tokens is spent, or at once
        when the budget is urgent."""
        return self._insert_urgent(state) or state.n_tokens >= usable * (have + 1) / (need + 1)

    def _insert_urgent(self, state: SteerState) -> bool:
        """Whether the budget left holds little more than the owed keywords and capital words."""
        if self.max_new_tokens is None:
            return False
        return self._paced_budget(state) - state.n_tokens <= self._insert_tokens_owed(state) + 1

    def _sentences_short(self, state: SteerState, missing_cites: int) -> str:
        """Whether the token budget (or the words a maximum) left is too tight
        for the sentences still owed, so the current sentence should end now:
        "end" when it has a word and either ends in a word a period may follow
        (``good_last_word``) or in an end that only waits for whitespace
        (``Counts.firm_run``); "word" when such a word must come first (the
        text ends in a single letter, a number, an abbreviation); "" when
        there is room."""
        need = self.limits.min_sentences
        if need is None or self.max_new_tokens is None:
            return ""
        comp = self._segments[state.seg]
        counts = state.counts
        missing = need - counts.firm_sentences - comp.reserve.firm_sentences
        if missing <= 0:
            return ""
        left = (
            self.max_new_tokens - state.n_tokens - comp.reserve_tokens - 2
            - _CITATION_TOKENS * missing_cites - self._insert_tokens_owed(state)
        )
        if state.seg_deadline is not None:
            left = min(left, state.seg_deadline - state.n_tokens)
        words_left = None
        if self.limits.max_words is not None:
            words_left = self.limits.max_words - comp.reserve.units - 2 * comp.free_after - counts.units
        if left > _TOKENS_PER_SENTENCE * missing and (words_left is None or words_left > _WORDS_PER_SENTENCE * missing):
            return ""
        if counts.firm_run == "armed" or (counts.sentence_words > 0 and good_last_word(counts.word_tail)):
            return "end"
        return "word"

    def _free_rows(self, states: list[SteerState], plans: list[_Plan], lp: torch.Tensor) -> torch.Tensor:
        """Masked rows of beams in free segments. ``lp: [R, V]`` -> ``[R, V]``."""
        seg_ids = torch.tensor([p.seg for p in plans], device=lp.device)
        base = self._allowed_stack[seg_ids]  # [R, V]
        allowed = base & ~self._over_rows(states) if self.limits.has_max else base.clone()
        open_rows = [r for r, s in enumerate(states) if s.counts.bracket_open]
        if open_rows:
            allowed[open_rows] &= ~self.tables.has_newline
        if self.citations is not None and self._cite_open:
            citing = [r for r, (s, p) in enumerate(zip(states, plans)) if self._may_open_citation(s, p)]
            if citing:
                rows_idx = torch.tensor(citing, device=lp.device).unsqueeze(1)
                allowed[rows_idx, torch.tensor(self._cite_open, device=lp.device)] = True
        fragments = self._fragment_stack[seg_ids]  # [R, V]
        word_ends = [
            r for r, (s, p) in enumerate(zip(states, plans))
            if s.seg_tokens == 0 and self._free_segment(p.seg).after_word
        ]
        if word_ends:
            allowed[word_ends] &= self._word_end
            fragments[word_ends] &= self._word_end
        for r, (s, p) in enumerate(zip(states, plans)):
            if p.placeholder:
                # The next word is the placeholder: finish this word or open it.
                allowed[r] &= self.tables.fragment
                allowed[r, p.exit] = True
            if not self._holds_text(s):
                # A part's sentence holds a word before it ends (no "1." paragraph).
                allowed[r] &= ~self._terminal
            if p.capitals == "now" or (p.capitals == "due" and not self._continues_word(lp[r], allowed[r])):
                # A capital word begins with the next token, if any is allowed.
                assert self._capital_starts is not None and self._capital_starts_spaced is not None
                after_space = s.text == "" or s.text[-1].isspace()
                caps = (self._capital_starts if after_space else self._capital_starts_spaced) & base[r]
                if self.limits.has_max:
                    # The word kept in reserve for this capital word is spent on it.
                    caps &= ~self._over_rows([s], writing_capital=True)[0]
                if bool(caps.any()):
                    allowed[r] = caps
                    fragments[r] = False
                elif p.forced:
                    # No capital word can begin: the forced end is taken.
                    allowed[r] = False
                    allowed[r, p.exit] = True
            elif s.caps_open:
                # A word begun in capitals ends or continues without a lowercase letter.
                allowed[r] &= ~self.tables.starts_wordchar | ~self.tables.has_lower
                fragments[r] &= ~self.tables.starts_wordchar
            if p.words:
                # The word minimum is behind the budget: every token adds a word, if any can.
                adding = allowed[r] & (self._adds_word_after_word if s.counts.in_word else self._adds_word)
                if bool(adding.any()):
                    allowed[r] = adding
                    fragments[r] = False
            if p.close:
                # Only tokens that end the sentence, or first a fresh word a
                # period may follow; unless none of them is allowed.
                armed = s.counts.firm_run == "armed"
                ending = self.tables.closes_sentence if armed else self._ends_sentence
                closing = allowed[r] & (ending if p.close == "end" else self._fresh_word)
                if bool(closing.any()):
                    allowed[r] = closing
                    fragments[r] = False
        rows = torch.where(allowed, lp, _NEG_INF)  # [R, V]
        stopping = [r for r, p in enumerate(plans) if p.may_stop]
        if stopping:
            index = torch.tensor(stopping, device=lp.device)
            stop_idx = self._stop_index[seg_ids[index]]  # [S, W]
            stop_lp = lp[index].gather(1, stop_idx).masked_fill(~self._stop_valid[seg_ids[index]], _NEG_INF)
            stop_mass = torch.logsumexp(stop_lp, dim=-1)  # [S]
            exits = torch.tensor([plans[r].exit for r in stopping], device=lp.device)
            current = rows[index, exits]
            extra = torch.where(
                torch.tensor([states[r].counts.bracket_open for r in stopping], device=lp.device),
                lp[index, exits],
                torch.full_like(current, _NEG_INF),
            )
            rows[index, exits] = torch.logaddexp(torch.logaddexp(current, stop_mass), extra)
        if self._keyword_need:
            self._steer_keywords(states, plans, rows)
        if self._checks_tokens or self._lazy_fragments or any(s.pending for s in states):
            rows = self._lazy(states, plans, rows, lp, fragments)
        return rows

    def _continues_word(self, lp: torch.Tensor, allowed: torch.Tensor) -> bool:
        """Whether the row's likeliest allowed token continues the word the text ends in
        (``lp, allowed: [V]``): then the word is not finished yet."""
        best = int(lp.masked_fill(~allowed, _NEG_INF).argmax())
        return bool(self.tables.starts_wordchar[best])

    def _steer_keywords(self, states: list[SteerState], plans: list[_Plan], rows: torch.Tensor) -> None:
        """Favour the first tokens of owed keywords; insert a due one where the
        model ends its word (its likeliest token does not continue the word).
        ``rows: [R, V]``, changed in place."""
        for r, (state, plan) in enumerate(zip(states, plans)):
            if plan.keyword >= 0 and not bool(self.tables.starts_wordchar[int(rows[r].argmax())]):
                rows[r] = _NEG_INF
                rows[r, plan.keyword] = 0.0
                continue
            owed = self._keyword_owed(state)
            ids = [t for n, starts in zip(owed, self._keyword_bonus) if n for t in starts]
            if ids and not state.counts.bracket_open:
                rows[r, ids] += _KEYWORD_BONUS

    def _cite_owed(self, state: SteerState) -> int:
        """Citations still owed by the time the gate segment ends (0 after it);
        never more than the shown ids left to cite (see ``Citations.owed``)."""
        if self.citations is None or state.seg > self._gate:
            return 0
        return self.citations.owed(state.cited)

    def _reserve(self, state: SteerState, *, writing_capital: bool = False) -> Counts:
        """What later literals, owed citations and capital words (one word each) and owed
        keywords will still add."""
        reserve = self._segments[state.seg].reserve
        # One word each; a capital word being begun now is no longer in reserve.
        missing = self._cite_owed(state) + self._capitals_owed(state) - int(writing_capital)
        words, units, letter = reserve.words + missing, reserve.units + missing, reserve.letter
        for n, counted in zip(self._keyword_owed(state), self._keyword_reserve):
            words, units, letter = words + n * counted.words, units + n * counted.units, letter + n * counted.letter
        if (words, units, letter) == (reserve.words, reserve.units, reserve.letter):
            return reserve
        return dataclasses.replace(reserve, words=words, units=units, letter=letter)

    def _later(self, state: SteerState, *, writing_capital: bool = False) -> Later:
        """What the rest of the layout adds, for the upper bounds (see ``Later``)."""
        comp = self._segments[state.seg]
        owes = bool(self._capitals_owed(state) - int(writing_capital) > 0 or any(self._keyword_owed(state)))
        return Later(self._reserve(state, writing_capital=writing_capital), comp.free_after, comp.sentences, owes)

    def _may_open_citation(self, state: SteerState, plan: _Plan) -> bool:
        """A free row may open a citation while one is owed, in running text."""
        assert self.citations is not None
        if not self.citations.owed(state.cited) or state.counts.bracket_open or state.pending:
            return False
        if self._free_segment(plan.seg).role not in _CITING_ROLES:
            return False
        if not self.limits.has_max:
            return True
        # The citation's id is one more word; the reserve counted it only at the gate.
        comp = self._segments[plan.seg]
        after = state.counts.add(" [E1]", self.limits.letter)
        return not self.limits.exceeded(after, Later(comp.reserve, comp.free_after, comp.sentences))

    def _track_citation(self, before: SteerState, new: SteerState, token_id: int, comp: Any) -> SteerState:
        """Enter, continue or close citation mode after ``token_id``."""
        assert self.citations is not None
        if before.cite is not None:
            inside = before.cite + self.tables.texts[token_id]
            done = self.citations.completed(inside)
            if done is not None:
                return dataclasses.replace(new, cite=None, cited=new.cited | {done})
            return dataclasses.replace(new, cite=inside)
        opens = (
            token_id in self._cite_open
            and isinstance(comp, _CompiledSegment)
            and isinstance(comp.segment, Free)
            and comp.segment.role in _CITING_ROLES
            and self.citations.owed(before.cited) > 0
            and not before.counts.bracket_open
        )
        return dataclasses.replace(new, cite="") if opens else new

    def _free_segment(self, seg: int) -> Free:
        segment = self._segments[seg].segment
        assert isinstance(segment, Free)
        return segment

    def _over_rows(self, states: list[SteerState], *, writing_capital: bool = False) -> torch.Tensor:
        """``[R, V]`` bool: tokens that would break an upper bound, per row."""
        rows = []
        for state in states:
            over = self.limits.over_max(self.tables, state.counts, self._later(state, writing_capital=writing_capital))
            assert over is not None
            rows.append(over)
        return torch.stack(rows)

    def _formal_row(self, state: SteerState, plan: _Plan, lp: torch.Tensor) -> torch.Tensor:
        matcher = state.matcher
        accepting = matcher.is_accepting()
        row = torch.full_like(lp, _NEG_INF)
        if matcher.is_stopped() or (plan.forced and accepting):
            row[plan.exit] = 0.0
            return row
        bits = torch.frombuffer(bytearray(matcher.compute_bitmask()), dtype=torch.int32)
        mask = ((bits.unsqueeze(1) >> self._shifts) & 1).flatten()[: self.tables.size].bool()
        mask = mask.to(self.tables.device)
        allowed = mask & ~self._eos_mask & self._policy_mask
        if self.limits.has_max:
            # Upper bounds hold inside a formal answer too (a JSON string is text).
            allowed &= ~self._over_rows([state])[0]
        if self._lazy_fragments:
            allowed |= mask & self.tables.fragment
        row = lp.masked_fill(~allowed, _NEG_INF)
        if accepting:
            stop_mass = torch.logsumexp(lp.masked_fill(~self._eos_mask, _NEG_INF), dim=0)
            row[plan.exit] = torch.logaddexp(row[plan.exit], stop_mass)
        if self._checks_tokens or self._lazy_fragments or state.pending:
            row = self._lazy([state], [plan], row.unsqueeze(0), lp.unsqueeze(0), None)[0]
        return row

    def _lazy(
        self,
        states: list[SteerState],
        plans: list[_Plan],
        rows: torch.Tensor,
        lp: torch.Tensor,
        fragments: torch.Tensor | None,
    ) -> torch.Tensor:
        """Cut each row to its best candidates that pass the per-token checks.

        ``rows, lp: [R, V]``. ``fragments: [R, V]`` are the byte fragments
        each free row's class admits: with lazy fragments they are masked
        out of ``rows`` and come back from ``lp`` here (None for a formal
        row, whose grammar mask already holds them). Two kinds of rows are
        narrowed first so that their candidates can pass: mid-character only
        continuation bytes can follow (all of them are examined), and after
        an open forbidden word only a word character (see ``lexical``).
        """
        pool = rows
        if self._lazy_fragments and fragments is not None:
            # Fragments are a few hundred tokens: merge them in by index, not over [R, V].
            idx = self._fragment_ids
            pool = rows.clone()
            pool[:, idx] = torch.maximum(rows[:, idx], lp[:, idx].masked_fill(~fragments[:, idx], _NEG_INF))
        pending = [r for r, s in enumerate(states) if s.pending]
        if pending:
            source = lp if fragments is not None else rows
            follow = self._continuation if fragments is None else self._continuation & fragments[pending]
            pool[pending] = source[pending].masked_fill(~follow, _NEG_INF)
        if self.forbidden is not None:
            open_rows = [r for r, s in enumerate(states) if self.forbidden.ends_open(s.text)]
            if open_rows:
                pool[open_rows] = pool[open_rows].masked_fill(~self.tables.starts_wordchar, _NEG_INF)
        k = min(pool.shape[-1], TOP_K * _MAX_LAZY_ROUNDS)
        values, indices = torch.topk(pool, k, dim=-1)  # [R, k]
        keep_rows: list[int] = []
        keep_cols: list[int] = []
        keep_vals: list[float] = []
        for r, (vals, idxs) in enumerate(zip(values.tolist(), indices.tolist())):
            found = 0
            held = self._keywords_held(states[r])
            for value, idx in zip(vals, idxs):
                if value == _NEG_INF:
                    break
                if self._token_passes(states[r], idx, closing=plans[r].forced, held=held):
                    keep_rows.append(r)
                    keep_cols.append(idx)
                    keep_vals.append(value)
                    found += 1
                    if found >= TOP_K:
                        break
        kept = torch.full_like(rows, _NEG_INF)
        if keep_rows:
            kept[keep_rows, keep_cols] = torch.tensor(keep_vals, dtype=kept.dtype, device=kept.device)
        return kept

    def _keywords_held(self, state: SteerState) -> tuple[int, ...] | None:
        """Occurrences of each capped keyword that the rest of the answer will
        bring (see ``Keywords.held``); None when no keyword is capped here."""
        if not self._keyword_capped or state.seg >= len(self._segments):
            return None
        assert self.keywords is not None
        return self.keywords.held(self._keyword_owed(state), self._segments[state.seg].later_keywords)

    def _token_passes(
        self, state: SteerState, idx: int, *, closing: bool = False, held: tuple[int, ...] | None = None
    ) -> bool:
        """Whether token ``idx`` may follow ``state`` (``closing``: the segment
        is past its end and waits only for a clean place to stop; ``held``:
        ``_keywords_held(state)``, computed once per row)."""
        tables = self.tables
        if idx in tables.eos_ids:
            return not state.pending and (self.forbidden is None or self.forbidden.ends_ok(state.text))
        raw = tables.token_bytes[idx]
        tail = b""
        if state.pending or self._fragment_list[idx]:
            text, tail = split_utf8(state.pending + raw)
            if text is None:
                return False
            if self.policy.active and not self.policy.fragment_ok(tables, state.pending, raw):
                return False
            if self.limits.has_max and not self._fits(state, text, tail):
                return False
        else:
            text = tables.texts[idx]
        if self.forbidden is not None:
            if not self.forbidden.token_ok(state.text, text):
                return False
            if (tail or closing) and self.forbidden.ends_open(state.text[-self.forbidden.window :] + text):
                return False
        if held is not None:
            assert self.keywords is not None
            if not self.keywords.may_append(state.keyword_counts, state.text, text, held):
                return False
        return True

    def _fits(self, state: SteerState, text: str, tail: bytes) -> bool:
        """Whether the upper bounds hold after ``text`` and, for an unfinished
        ``tail``, after whatever character it becomes (a Han character is the
        worst case for words, a space or "。" for sentences, the letter for itself)."""
        if state.seg >= len(self._segments):
            return True
        letter = self.limits.letter
        after = state.counts.add(text, letter)
        probes = [after]
        if tail:
            probes += [after.add(ch, letter) for ch in ("\u4e00", " ", "\u3002")]
            if letter is not None and not letter.isascii():
                probes.append(after.add(letter, letter))
        later = self._later(state)
        return not any(self.limits.exceeded(c, later) for c in probes)


def _continuation(tables: VocabTables) -> torch.Tensor:
    """``[V]`` bool: tokens that can follow an unfinished character (they start
    with a continuation byte; a few dozen, so a pending row checks them all)."""
    values = [bool(raw) and 0x80 <= raw[0] <= 0xBF for raw in tables.token_bytes]
    return torch.tensor(values, dtype=torch.bool, device=tables.device) & tables.fragment


_ENDS_SENTENCE = re.compile(r"[.!?][!?]*[\"'\u201d\u2019)\]]*(?:\s.*)?|[\u3002\uff01\uff1f].*", re.DOTALL)


def _ends_sentence(tables: VocabTables) -> torch.Tensor:
    """``[V]`` bool: tokens that end a sentence just after a word for every
    judge: one ``.``, ``!`` or ``?`` (more ``!?`` and closers may follow), then
    nothing or whitespace; or a ``。！？`` (never an ellipsis)."""
    values = [_ENDS_SENTENCE.fullmatch(t) is not None for t in tables.texts]
    return torch.tensor(values, dtype=torch.bool, device=tables.device)


def _fresh_word(tables: VocabTables) -> torch.Tensor:
    """``[V]`` bool: tokens that are a space and a whole word a period may
    follow for every judge (``good_last_word``: two letters or more, no
    abbreviation)."""
    values = [t[:1] == " " and t[1:].isalpha() and good_last_word(t[1:]) for t in tables.texts]
    return torch.tensor(values, dtype=torch.bool, device=tables.device)


def _terminal(tables: VocabTables) -> torch.Tensor:
    """``[V]`` bool: tokens holding a sentence terminal (``.!?。！？``)."""
    values = [any(ch in ".!?\u3002\uff01\uff1f" for ch in t) for t in tables.texts]
    return torch.tensor(values, dtype=torch.bool, device=tables.device)


def _word_end(tables: VocabTables) -> torch.Tensor:
    """``[V]`` bool: tokens that end a forced word (whitespace or ``.,?!'"``
    first, where IFEval's first-word rule stops reading)."""
    values = [bool(t) and (t[0].isspace() or t[0] in ".,?!'\"") for t in tables.texts]
    return torch.tensor(values, dtype=torch.bool, device=tables.device)


@dataclass(frozen=True, slots=True)
class _Plan:
    """One row's plan for this step: ``kind`` is "only", "free" or "formal"."""

    kind: str
    exit: int
    seg: int = 0
    may_stop: bool = False
    forced: bool = False
    close: str = ""  # the current sentence must "end" (owed sentences, tight budget) or get a "word" to end on
    placeholder: bool = False  # a placeholder is due: the next word must be one
    words: bool = False  # the word minimum is behind the budget: every token must add a word
    keyword: int = -1  # a keyword is due: its first token, written at the next word boundary
    capitals: str = ""  # a capital word is "now" (the next token begins one) or "due" (at the next word end)
