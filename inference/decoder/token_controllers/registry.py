"""The constraint families: one entry each, pairing its compile step and its controller's builder.

``FAMILIES`` lists them in the order the composer runs their controllers at every hook
(``steering``'s module doc says why it matters). ``build`` makes a family's controller from a
request's compiled specs, or None when the request does not need it. ``compile`` (a family the
typed form reads) is the family's compile step: it reads the compile context
(``compile.context.CompileContext``: the hard constraints, the layout, the specs compiled before
it), adds the ids it controls and returns the family's spec (None: not needed, or not
controllable here); ``compile.compile_steering`` runs the steps in ``compile_rank`` order after
its shared stages. The other families' specs come from those shared stages
(``compile.stages``: the character policy, the counted bounds and forbidden words, citations,
keywords, capital words; a stated decision is the rules stage's).

The two orders differ on purpose: the compile order decides which step controls an id first and
which conflict is refused first (a step reads what the steps before it settled, e.g. the floors
read the tally's caps, the openings yield to a placed word), the composer order which controller
acts first at each token. Adding a family is one module under ``controllers/`` (its spec, its
``Controller``, its ``build_*`` and its ``compile_*`` step) plus one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from inference.decoder.token_controllers.capitals import build_capitals
from inference.decoder.token_controllers.charset import build_charset
from inference.decoder.token_controllers.citing import build_citing
from inference.decoder.token_controllers.class_closings import (
    build_class_closings,
    compile_class_closing,
)
from inference.decoder.token_controllers.class_openings import (
    build_class_openings,
    compile_class_opening,
)
from inference.decoder.token_controllers.closing_texts import build_closings, compile_closing
from inference.decoder.token_controllers.count_limits import build_bounds, build_word_pace
from inference.decoder.token_controllers.count_maxima import build_tally, compile_tally
from inference.decoder.token_controllers.count_minima import build_minima, compile_minima
from inference.decoder.token_controllers.count_piece_minima import build_floors, compile_floors
from inference.decoder.token_controllers.hashtags import build_hashtags, compile_hashtags
from inference.decoder.token_controllers.initials import build_initials, compile_initials
from inference.decoder.token_controllers.keywords import build_keywords
from inference.decoder.token_controllers.landing import build_landing
from inference.decoder.token_controllers.lexical import build_forbidden
from inference.decoder.token_controllers.lines import build_lines, compile_lines
from inference.decoder.token_controllers.openings import build_openings, compile_opening
from inference.decoder.token_controllers.piece_sentences import (
    build_piece_sentences,
    compile_piece_sentences,
)
from inference.decoder.token_controllers.placeholders import build_placeholders
from inference.decoder.token_controllers.placing import build_placing, compile_placement
from inference.decoder.token_controllers.protocol import Builder
from inference.decoder.token_controllers.sentence_close import build_sentence_close
from inference.decoder.token_controllers.sentence_ends import (
    build_sentence_ends,
    compile_sentence_end,
)
from inference.decoder.token_controllers.sentence_marks import (
    build_sentence_marks,
    compile_sentence_mark,
)
from inference.decoder.token_controllers.sentence_steps import (
    build_sentence_steps,
    compile_sentence_steps,
)
from inference.decoder.token_controllers.sentence_types import (
    build_sentence_types,
    compile_sentence_types,
)
from inference.decoder.token_controllers.sentence_words import (
    build_sentence_words,
    compile_sentence_word,
)
from inference.decoder.token_controllers.shares import build_shares, compile_sentence_share
from inference.decoder.token_controllers.spans import build_spans, compile_spans
from inference.decoder.token_controllers.stating import build_stating
from inference.decoder.token_controllers.verb_opening import (
    build_verb_openings,
    compile_verb_opening,
)

if TYPE_CHECKING:
    from inference.decoder.compile.context import CompileContext

__all__ = ["FAMILIES", "Family", "compile_steps"]


@dataclass(frozen=True)
class Family:
    """One constraint family: its name (the key of its spec in the compile context), its
    controller's builder and, for a family with a compile step of its own, that step and its
    place in the compile order (``compile_rank``, lower first)."""

    name: str
    build: Builder
    compile: Callable[[CompileContext], Any] | None = None
    compile_rank: int = 0


FAMILIES: tuple[Family, ...] = (
    # the decision sentence is inserted before any other route claims the row
    Family("stating", build_stating),
    # counted maxima masked first; minima hold the stop
    Family("bounds", build_bounds),
    # masses move to allowed variants before planning
    Family("charset", build_charset),
    # citation mode routes first; its bracket opens at the exit
    Family("citing", build_citing),
    # the closing demand, read by the pacers after it
    Family("sentence_close", build_sentence_close),
    # every budget lands on a sentence end (after the minimum's own demand)
    Family("landing", build_landing),
    # a due placeholder is taken before a due keyword
    Family("placeholders", build_placeholders),
    # a forced end waits for a clean place
    Family("forbidden", build_forbidden),
    # the k-th word: its text forced where the model starts that word
    Family("placement", build_placing, compile_placement, 20),
    # the k-th sentence / line: its opening text forced where the piece begins
    Family("opening", build_openings, compile_opening, 80),
    # every / the k-th piece opening with a case or a digit: its first character masked
    Family("class_opening", build_class_openings, compile_class_opening, 70),
    # the answer opening with a verb: its first word spelled from a list of verbs
    Family("verb_opening", build_verb_openings, compile_verb_opening, 60),
    # every / the k-th piece: its closing text forced where the model would end it
    Family("closing", build_closings, compile_closing, 130),
    # every piece ends with an item of a class (an emoji): the model's pick where it ends
    Family("class_closing", build_class_closings, compile_class_closing, 140),
    # capped form counts masked or checked per candidate; no list line
    Family("tally", build_tally, compile_tally, 10),
    # per-piece minima: no short piece closes; withdraws a close demand from those before it
    Family("floors", build_floors, compile_floors, 30),
    # whole-answer minima of characters / letters (paced) and distinct words (stop held)
    Family("minima", build_minima, compile_minima, 40),
    # every sentence ends with one mark: the other terminals masked
    Family("sentence_mark", build_sentence_marks, compile_sentence_mark, 100),
    # sentences counted by type: each ends with its round's mark, the stop at a round's end
    Family("sentence_types", build_sentence_types, compile_sentence_types, 160),
    # each sentence a step longer: its end masked short of the length, no word past it
    Family("sentence_steps", build_sentence_steps, compile_sentence_steps, 150),
    # the k-th sentence ends with a text: its terminals masked until the text is written
    Family("sentence_end", build_sentence_ends, compile_sentence_end, 110),
    # the k-th sentence holds a text: no end before it, its first token favoured more per word
    Family("sentence_word", build_sentence_words, compile_sentence_word, 115),
    # sentences per paragraph: a short one's exit masked, a full one ended
    Family("piece_sentences", build_piece_sentences, compile_piece_sentences, 120),
    # a share of the sentences ends with one mark: the other terminals masked while it is owed
    Family("sentence_share", build_shares, compile_sentence_share, 170),
    # delimited spans: opened and closed where the model ends a word, capped by their openings
    Family("spans", build_spans, compile_spans, 90),
    # a hashtag minimum: '#' paced where a word ends, a word right after it
    Family("hashtags", build_hashtags, compile_hashtags, 180),
    # a line count: breaks masked at the maximum, paced where a line owes its share
    Family("lines", build_lines, compile_lines, 190),
    # paced insertions; capped counts checked per candidate
    Family("keywords", build_keywords),
    # paced after the keywords, over the budget they leave
    Family("capitals", build_capitals),
    # words starting with given letters, paced as the capital words are
    Family("initials", build_initials, compile_initials, 50),
    # every token adds a word once the minimum falls behind
    Family("word_pace", build_word_pace),
)


@cache
def compile_steps() -> tuple[Family, ...]:
    """The families with a compile step of their own, in the compile order."""
    return tuple(sorted((f for f in FAMILIES if f.compile is not None), key=lambda f: f.compile_rank))
