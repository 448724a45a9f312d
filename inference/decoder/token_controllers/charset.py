"""Character policies: which characters the whole answer may contain.

``no_comma``, ``all_lowercase``, ``all_capitals`` and a script-bound
``response_language`` are properties of every character of the answer, so
they compile to one ``CharPolicy``. The policy gives

- a static ``[V]`` mask of the complete tokens whose every character passes
  (applied with one vector operation per step);
- whether an unfinished UTF-8 tail can still become an allowed character, so
  a token that carries only part of a multi-byte character (byte-fallback BPE
  pieces) can be checked lazily against what it may still become;
- a text transform (drop commas, fold case) that names the allowed variant of
  a masked token, so its probability moves there instead of vanishing.

Guarantee: a text built only from tokens the policy admits (with fragments
admitted by ``fragment_ok``) contains no character the policy forbids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.token_controllers.protocol import Context, Controller, SteerState, spec_of
from inference.decoder.vocab import VocabTables, letter_script

__all__ = ["CharPolicy", "Charset", "SoftPolicy", "build_charset", "split_utf8", "tail_completes"]

# The verifier of ``no_comma`` also refuses the full-width comma (its module doc).
_COMMAS = ",\uff0c"


@dataclass(frozen=True)
class CharPolicy:
    """What characters may appear. ``case`` is ``"lower"``, ``"upper"`` or None."""

    no_comma: bool = False
    case: str | None = None
    scripts: frozenset[str] | None = None

    @property
    def active(self) -> bool:
        return self.no_comma or self.case is not None or self.scripts is not None

    def ok_char(self, ch: str) -> bool:
        """True when ``ch`` may appear anywhere in the answer."""
        if self.no_comma and ch in _COMMAS:
            return False
        if self.case == "lower" and ch.isupper():
            return False
        if self.case == "upper" and ch.islower():
            return False
        if self.scripts is not None and ch.isalpha():
            return letter_script(ch) in self.scripts
        return True

    def ok_text(self, text: str) -> bool:
        return all(self.ok_char(ch) for ch in text)

    def transform(self, text: str) -> str:
        """The allowed spelling of ``text`` (commas dropped, case folded)."""
        if self.no_comma:
            for comma in _COMMAS:
                text = text.replace(comma, "")
        if self.case == "lower":
            text = text.lower()
        elif self.case == "upper":
            text = text.upper()
        return text

    def allowed_mask(self, tables: VocabTables) -> torch.Tensor:
        """``[V]`` bool: complete, non-special tokens whose characters all pass."""

        def build() -> dict[str, torch.Tensor]:
            values = [self.ok_text(t) for t in tables.texts]
            mask = torch.tensor(values, dtype=torch.bool, device=tables.device)
            return {"mask": mask & ~tables.fragment & ~tables.special}

        return tables.kept(f"policy-mask-{self.key}-v1", build)["mask"]

    @property
    def key(self) -> str:
        """The policy in a stable spelling (names the tables kept for it on disk)."""
        scripts = "any" if self.scripts is None else "+".join(sorted(self.scripts))
        return f"comma{int(self.no_comma)}-case{self.case or 'any'}-scripts{scripts}"

    def completes(self, tables: VocabTables, tail: bytes) -> bool:
        """Whether the unfinished UTF-8 ``tail`` can still become an allowed
        non-ASCII character (see :func:`tail_completes`). Judged once per
        tail and kept: a fragment meets the same few tails again and again."""
        return tables.cached(  # type: ignore[no-any-return]
            ("policy-tail", self, tail), lambda: tail_completes(tail, self.ok_char))

    def fragment_ok(self, tables: VocabTables, pending: bytes, token: bytes) -> bool:
        """Whether ``pending + token`` keeps every complete character allowed and
        leaves a tail that can still become an allowed character."""
        data = pending + token
        text, tail = split_utf8(data)
        if text is None:
            return False
        if not self.ok_text(text):
            return False
        return not tail or self.completes(tables, tail)

    def variants(self, tables: VocabTables, banned: torch.Tensor) -> torch.Tensor:
        """``[V]`` long map from a banned token to its allowed variant (or -1)."""
        key = f"policy-{self.key}"  # the banned set follows from the whole policy
        return tables.variant_map(self.transform, key, banned)


def split_utf8(data: bytes) -> tuple[str | None, bytes]:
    """Decode the longest complete prefix of ``data``; return it and the tail.

    The tail is the start of one unfinished character (a lead byte and fewer
    continuation bytes than it announces); None is returned for the text
    when the bytes are invalid anywhere else.
    """
    for cut in range(min(3, len(data)) + 1):
        head, tail = data[: len(data) - cut], data[len(data) - cut :]
        if tail and not _is_char_start(tail):
            continue
        try:
            return head.decode("utf-8"), tail
        except UnicodeDecodeError:
            continue
    return None, b""


# Characters past U+2FFFF (the unassigned planes 3-13 and private use) are never
# worth a walk: no policy or measure admits one that a lower plane would not.
_CEILING = 0x30000
_FLOORS = {2: 0x80, 3: 0x800, 4: 0x10000}


def tail_completes(tail: bytes, accept: Callable[[str], bool]) -> bool:
    """Whether the unfinished UTF-8 ``tail`` (a lead byte and fewer continuation
    bytes than it announces) can still become a character ``accept`` admits.

    Two-, three- and four-byte characters alike (U+0080..U+2FFFF; emoji and
    the CJK extensions are four-byte). Only the code points whose encoding
    starts with ``tail`` are walked: at most 4,096 for a lone three-byte lead,
    65,536 for a lone four-byte one. A whole character or a stray byte is no
    tail (False). Callers keep the answer per tail: it never changes.
    """
    lead = tail[0]
    size = 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if 0xF0 <= lead < 0xF8 else 0
    if len(tail) >= size:
        return False
    bits = lead & (0x7F >> size)
    for byte in tail[1:]:
        bits = (bits << 6) | (byte & 0x3F)
    rest = 6 * (size - len(tail))
    low, high = bits << rest, (bits + 1) << rest
    for code in range(max(low, _FLOORS[size]), min(high, _CEILING)):
        if 0xD800 <= code <= 0xDFFF:
            continue
        ch = chr(code)
        if ch.encode("utf-8").startswith(tail) and accept(ch):
            return True
    return False


def _is_char_start(tail: bytes) -> bool:
    lead = tail[0]
    need = 2 if 0xC2 <= lead <= 0xDF else 3 if 0xE0 <= lead <= 0xEF else 4 if 0xF0 <= lead <= 0xF4 else 0
    return len(tail) < need and all(0x80 <= b <= 0xBF for b in tail[1:])


@dataclass(frozen=True)
class SoftPolicy:
    """A character policy of soft constraints: banned tokens lose ``penalty`` nats."""

    policy: CharPolicy
    penalty: float = 2.0


class Charset(Controller):
    """The character policy at decode time: masses of banned tokens move to
    their allowed variant (the case-folded token, the token without the
    comma), soft bans cost ``SoftPolicy.penalty``, and byte fragments are
    checked on the characters they complete (see the module doc). The static
    mask of allowed tokens is the layout's (``CompiledLayout.policy_mask``)."""

    def __init__(self, tables: VocabTables, policy: CharPolicy, soft: SoftPolicy | None) -> None:
        self.tables = tables
        self.policy = policy
        #: (banned tokens, the variants they move to, each banned token's variant slot)
        self._variants: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
        if policy.no_comma or policy.case:
            allowed = policy.allowed_mask(tables) if policy.active else ~tables.special
            banned = ~allowed & ~tables.special & ~tables.fragment
            vmap = policy.variants(tables, banned)
            src = torch.nonzero(vmap >= 0).flatten()
            dst = vmap[src]
            keep = allowed[dst]
            src, dst = src[keep], dst[keep]
            targets, slots = torch.unique(dst, return_inverse=True)
            self._variants = (src, targets, slots)
        self._soft: torch.Tensor | None = None
        if soft is not None and soft.policy.active:
            soft_bad = ~soft.policy.allowed_mask(tables) & ~tables.special & ~tables.fragment
            self._soft = soft_bad.to(torch.float32) * -soft.penalty

    def shift(self, lp: torch.Tensor) -> torch.Tensor:
        if self._variants is not None:
            # Only the variants' columns change: their probability gains the banned tokens'
            # (a few thousand columns, not an exp and a log over the whole vocabulary).
            src, targets, slots = self._variants
            moved = lp.new_zeros((lp.shape[0], targets.shape[0])).index_add_(1, slots, lp[:, src].exp())
            lp = lp.index_copy(1, targets, torch.logaddexp(lp[:, targets], moved.log()))
        if self._soft is not None:
            lp = lp + self._soft
        return lp

    def check_pieced(self, state: SteerState, memo: Any, raw: bytes, text: str, tail: bytes) -> bool:
        return not self.policy.active or self.policy.fragment_ok(self.tables, state.pending, raw)


def build_charset(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The character policy's controller, when a hard or a soft policy is active."""
    policy = next((s for s in specs if isinstance(s, CharPolicy)), CharPolicy())
    soft = spec_of(specs, SoftPolicy)
    if not policy.active and (soft is None or not soft.policy.active):
        return None
    return Charset(ctx.tables, policy, soft)
