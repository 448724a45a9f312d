"""The registered token-controller families, in the order the composer runs them.

Each entry builds one family's controller from a request's compiled specs
(``compile.compile_steering``), or None when the request does not need it.
The order is the composer's fixed order for every hook (``steering``'s
module doc says why it matters): adding a family is a new module with a
``Controller`` subclass and its builder, plus one line here; a constraint-form
family also adds its compile step (the function that returns its spec) as one
line of ``compile.FORM_FAMILIES``. The two orders differ on purpose: the
compile order decides which step controls an id first and which conflict is
refused first, the composer order which controller acts first at each token.
"""

from __future__ import annotations

from inference.decoder.controllers.capitals import build_capitals
from inference.decoder.controllers.charset import build_charset
from inference.decoder.controllers.citing import build_citing
from inference.decoder.controllers.class_closings import build_class_closings
from inference.decoder.controllers.class_openings import build_class_openings
from inference.decoder.controllers.closing_texts import build_closings
from inference.decoder.controllers.count_limits import build_bounds, build_word_pace
from inference.decoder.controllers.count_maxima import build_tally
from inference.decoder.controllers.count_minima import build_minima
from inference.decoder.controllers.count_piece_minima import build_floors
from inference.decoder.controllers.hashtags import build_hashtags
from inference.decoder.controllers.initials import build_initials
from inference.decoder.controllers.keywords import build_keywords
from inference.decoder.controllers.landing import build_landing
from inference.decoder.controllers.lexical import build_forbidden
from inference.decoder.controllers.lines import build_lines
from inference.decoder.controllers.openings import build_openings
from inference.decoder.controllers.piece_sentences import build_piece_sentences
from inference.decoder.controllers.placeholders import build_placeholders
from inference.decoder.controllers.placing import build_placing
from inference.decoder.controllers.protocol import Builder
from inference.decoder.controllers.sentence_close import build_sentence_close
from inference.decoder.controllers.sentence_ends import build_sentence_ends
from inference.decoder.controllers.sentence_marks import build_sentence_marks
from inference.decoder.controllers.sentence_steps import build_sentence_steps
from inference.decoder.controllers.sentence_types import build_sentence_types
from inference.decoder.controllers.sentence_words import build_sentence_words
from inference.decoder.controllers.shares import build_shares
from inference.decoder.controllers.spans import build_spans
from inference.decoder.controllers.stating import build_stating
from inference.decoder.controllers.verb_opening import build_verb_openings

__all__ = ["CONTROLLERS"]

CONTROLLERS: tuple[Builder, ...] = (
    build_stating,  # the decision sentence is inserted before any other route claims the row
    build_bounds,  # counted maxima masked first; minima hold the stop
    build_charset,  # masses move to allowed variants before planning
    build_citing,  # citation mode routes first; its bracket opens at the exit
    build_sentence_close,  # the closing demand, read by the pacers after it
    build_landing,  # every budget lands on a sentence end (after the minimum's own demand)
    build_placeholders,  # a due placeholder is taken before a due keyword
    build_forbidden,  # a forced end waits for a clean place
    build_placing,  # the k-th word: its text forced where the model starts that word
    build_openings,  # the k-th sentence / line: its opening text forced where the piece begins
    build_class_openings,  # every / the k-th piece opening with a case or a digit: its first character masked
    build_verb_openings,  # the answer opening with a verb: its first word spelled from a list of verbs
    build_closings,  # every / the k-th piece: its closing text forced where the model would end it
    build_class_closings,  # every piece ends with an item of a class (an emoji): the model's pick where it ends
    build_tally,  # capped form counts masked or checked per candidate; no list line
    build_floors,  # per-piece minima: no short piece closes; withdraws a close demand from those before it
    build_minima,  # whole-answer minima of characters / letters (paced) and distinct words (stop held)
    build_sentence_marks,  # every sentence ends with one mark: the other terminals masked
    build_sentence_types,  # sentences counted by type: each ends with its round's mark, the stop at a round's end
    build_sentence_steps,  # each sentence a step longer: its end masked short of the length, no word past it
    build_sentence_ends,  # the k-th sentence ends with a text: its terminals masked until the text is written
    build_sentence_words,  # the k-th sentence holds a text: no end before it, its first token favoured more per word
    build_piece_sentences,  # sentences per paragraph: a short one's exit masked, a full one ended
    build_shares,  # a share of the sentences ends with one mark: the other terminals masked while it is owed
    build_spans,  # delimited spans: opened and closed where the model ends a word, capped by their openings
    build_hashtags,  # a hashtag minimum: '#' paced where a word ends, a word right after it
    build_lines,  # a line count: breaks masked at the maximum, paced where a line owes its share
    build_keywords,  # paced insertions; capped counts checked per candidate
    build_capitals,  # paced after the keywords, over the budget they leave
    build_initials,  # words starting with given letters, paced as the capital words are
    build_word_pace,  # every token adds a word once the minimum falls behind
)
