"""Per-tokenizer tables that let controllers decide with vector operations.

Every token controller asks the same questions of every token ("does it
contain a comma?", "does it start a new word?", "which scripts do its letters
belong to?"). Answering them per step in Python would cost a loop over the
vocabulary; instead ``vocab_tables`` answers them once per tokenizer and
device and caches the result, so a controller's per-step work is a handful of
``[V]`` tensor operations.

Guarantees:
- ``token_bytes[i]`` is exactly what token ``i`` appends to the output (taken
  from llguidance's byte-level decoder, so byte-fallback pieces of multi-byte
  characters are exact, not replacement characters);
- the boolean tables describe the token's *complete* characters; a token whose
  bytes are not valid UTF-8 on their own is flagged in ``fragment`` and is
  never described as letter-free;
- special tokens (chat markers, padding) are flagged in ``special`` and EOS
  ids are listed in ``eos_ids``;
- with a ``cache_dir`` (the model cache, at load) the tables are built once per
  tokenizer and kept on disk, keyed by the digest of the tokenizer's full
  definition and the logits width: a later load, in any process, reads them
  (a 262,144-token vocabulary takes seconds to describe token by token, a
  fraction of that to read). A file that cannot be read is rebuilt and
  replaced; the tables read equal the tables built. Tables derived from them
  later (``VocabTables.kept``: a policy's mask, a variant map, the sentence-run
  tables) are kept beside them under a versioned name, so a first request on a
  large vocabulary reads them instead of walking every token again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import unicodedata
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

from reasoning.constraints.textstats import count_words

__all__ = [
    "WORD_RE",
    "VocabTables",
    "joins_run",
    "kept_dir_of",
    "letter_script",
    "scan_sentences",
    "script_prefixes",
    "vocab_tables",
]

log = logging.getLogger("tenet.inference")

WORD_RE = re.compile(r"\w+")
_TERMINAL = ".!?"
_CJK_TERMINAL = "\u3002\uff01\uff1f"  # 。！？
_CLOSERS = "\"'\u201d\u2019)]"
_CLOSES_SENTENCE = re.compile(r"[\"'\u201d\u2019)\]]*\s")


def scan_sentences(text: str, run: str = "") -> tuple[int, str]:
    """Sentence ends in ``text`` by our verifier's rule, and the open run after it.

    ``reasoning.constraints.textstats`` ends a sentence at a run of
    ``.!?。！？`` (closing quotes and brackets may follow) before whitespace,
    and at any run holding ``。！？``. ``run`` carries a run across token
    boundaries: ``"armed"`` (ASCII terminals, waiting for whitespace),
    ``"counted"`` (a CJK run, already counted) or ``""``. Abbreviations are
    not exempted, so the count is never below the verifier's.
    """
    ends = 0
    for ch in text:
        if ch in _CJK_TERMINAL:
            ends += run != "counted"
            run = "counted"
        elif ch in _TERMINAL:
            run = run or "armed"
        elif ch in _CLOSERS and run:
            continue
        elif ch.isspace() and run == "armed":
            ends += 1
            run = ""
        else:
            run = ""
    return ends, run


@lru_cache(maxsize=65536)
def letter_script(ch: str) -> str:
    """The script of a letter or mark, from its Unicode name ("LATIN", "CJK", ...).

    Non-letters (digits, punctuation, spaces, symbols) return ``"COMMON"``.
    """
    if not (unicodedata.category(ch)[0] in "LM"):
        return "COMMON"
    name = unicodedata.name(ch, "")
    if not name:
        return "UNKNOWN"
    head = name.split(" ", 1)[0]
    if head in ("FULLWIDTH", "HALFWIDTH"):
        return "LATIN" if "LATIN" in name else head
    return head


def joins_run(ch: str) -> bool:
    """Whether ``ch`` continues a word of the verifier's rule across a boundary.

    ``reasoning.constraints.textstats.count_words`` counts ``\\w`` runs but
    every Han character alone; so two adjacent characters form one word
    exactly when both are word characters that are not Han. Doubling the
    character tells which case it is with the counter itself (one word: a
    joining character; two: Han; none: not a word character).
    """
    return count_words(ch + ch) == 1


@lru_cache(maxsize=32)
def script_prefixes(scripts: frozenset[str]) -> frozenset[bytes]:
    """Proper UTF-8 byte prefixes of the BMP characters of ``scripts``.

    Used to decide whether a byte fragment can still become a character of
    an allowed script once later tokens complete it.
    """
    prefixes: set[bytes] = set()
    for code in range(0x80, 0x10000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        ch = chr(code)
        if letter_script(ch) in scripts:
            encoded = ch.encode("utf-8")
            for cut in range(1, len(encoded)):
                prefixes.add(encoded[:cut])
    return frozenset(prefixes)


@dataclass(frozen=True, eq=False)
class VocabTables:
    """Precomputed facts about every token of one tokenizer (``[V]`` tensors)."""

    size: int
    device: torch.device
    eos_ids: tuple[int, ...]
    token_bytes: tuple[bytes, ...]
    texts: tuple[str, ...]
    scripts: tuple[frozenset[str], ...]
    special: torch.Tensor  # [V] bool
    fragment: torch.Tensor  # [V] bool: bytes are not complete UTF-8 on their own
    has_comma: torch.Tensor
    has_upper: torch.Tensor
    has_lower: torch.Tensor
    has_letter: torch.Tensor  # any alphabetic character
    has_digit: torch.Tensor
    has_newline: torch.Tensor
    has_star: torch.Tensor
    has_dquote: torch.Tensor
    has_angle: torch.Tensor
    has_bracket: torch.Tensor  # '[' or ']'
    has_non_latin_letter: torch.Tensor
    starts_space: torch.Tensor
    word_runs: torch.Tensor  # [V] int32: number of \w+ runs (IFEval's words)
    starts_wordchar: torch.Tensor
    word_units: torch.Tensor  # [V] int32: words by our verifier's rule (each Han character one)
    starts_unit_char: torch.Tensor  # first char is a word char that joins a run (not Han)
    ends_wordchar: torch.Tensor
    sentence_ends: torch.Tensor  # [V] int32: sentence ends inside the token (``scan_sentences``)
    closes_sentence: torch.Tensor  # closers then whitespace first: ends an armed run before it
    ends_terminal: torch.Tensor  # last char in .!?
    llg_tokenizer: Any
    hf_tokenizer: Any
    #: Where tables derived later are kept on disk (``kept``); None keeps them in this process.
    kept_dir: Path | None = None
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens (the tokenizer's own split)."""
        ids: list[int] = self.hf_tokenizer.encode(text, add_special_tokens=False)
        return ids

    def cached(self, key: Any, build: Any) -> Any:
        """Memoise a derived table (a class mask, a variant map) on these tables."""
        with self._lock:
            if key not in self._cache:
                self._cache[key] = build()
            return self._cache[key]

    def kept(self, name: str, build: Callable[[], dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        """A derived table (named tensors) memoised here and kept on disk beside these tables.

        ``name`` must say everything the table depends on beyond the tokenizer,
        a version of the rule that builds it included (a changed rule takes a
        new name, so an older file is never read for it). A file that cannot
        be read is rebuilt and replaced; what is read equals what was built.
        """

        def load_or_build() -> dict[str, torch.Tensor]:
            path = None if self.kept_dir is None else self.kept_dir / f"{name}.pt"
            if path is not None:
                try:
                    data = torch.load(path, map_location="cpu", weights_only=True)
                    return {k: v.to(self.device) for k, v in data.items()}
                except FileNotFoundError:
                    pass
                except Exception:  # a damaged or foreign file is rebuilt and replaced
                    log.warning("derived vocabulary table %s is unreadable; rebuilding it", path, exc_info=True)
            built = build()
            if path is not None:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    aside = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
                    torch.save({k: v.cpu() for k, v in built.items()}, aside)
                    os.replace(aside, path)
                except OSError:
                    log.warning("could not keep the derived vocabulary table at %s", path, exc_info=True)
            return {k: v.to(self.device) for k, v in built.items()}

        return self.cached(("kept", name), load_or_build)  # type: ignore[no-any-return]

    def holding(self, chars: str | frozenset[str]) -> torch.Tensor:
        """``[V]`` bool: tokens whose text holds any of the characters ``chars`` (memoised per set)."""
        wanted = frozenset(chars)

        def build() -> torch.Tensor:
            values = [any(ch in wanted for ch in t) for t in self.texts]
            return torch.tensor(values, dtype=torch.bool, device=self.device)

        table: torch.Tensor = self.cached(("holding", wanted), build)
        return table

    def char_counts(self, char: str) -> torch.Tensor:
        """``[V]`` int32: occurrences of ``char`` in each token's case-folded text."""

        def build() -> torch.Tensor:
            values = [t.lower().count(char) for t in self.texts]
            return torch.tensor(values, dtype=torch.int32, device=self.device)

        return self.cached(("chars", char), build)  # type: ignore[no-any-return]

    def script_mask(self, scripts: frozenset[str]) -> torch.Tensor:
        """``[V]`` bool: complete tokens whose letters all belong to ``scripts``."""

        def build() -> torch.Tensor:
            allowed = scripts | {"COMMON"}
            values = [bool(s) and s <= allowed for s in self.scripts]
            mask = torch.tensor(values, dtype=torch.bool, device=self.device)
            return mask & ~self.fragment

        return self.cached(("script", scripts), build)  # type: ignore[no-any-return]

    def variant_map(self, transform: Any, key: str, banned: torch.Tensor) -> torch.Tensor:
        """``[V]`` long: for each banned token, the token that carries the same text
        after ``transform`` (exact token if the vocabulary has it, else the first
        token of its tokenisation when that is a prefix of the transformed text);
        ``-1`` where there is none or the token is allowed. ``key`` names the
        transform and the banned set (a file name's characters): the map is kept
        on disk under it (``kept``).
        """

        def build() -> torch.Tensor:
            lookup = self.cached("lookup", lambda: _text_lookup(self.texts, self.fragment))
            out = torch.full((self.size,), -1, dtype=torch.long)
            todo: list[tuple[int, str]] = []
            for idx in torch.nonzero(banned.cpu()).flatten().tolist():
                if self.fragment[idx] or self.special[idx]:
                    continue
                target = transform(self.texts[idx])
                if not target or target == self.texts[idx]:
                    continue
                exact = lookup.get(target)
                if exact is not None:
                    out[idx] = exact
                else:
                    todo.append((idx, target))
            if todo:
                encoded = self.hf_tokenizer([t for _, t in todo], add_special_tokens=False)
                for (idx, target), ids in zip(todo, encoded["input_ids"]):
                    if ids and target.startswith(self.texts[ids[0]]):
                        out[idx] = ids[0]
            return out.to(self.device)

        return self.kept(f"variant-{key}-v1", lambda: {"map": build()})["map"]


def _text_lookup(texts: tuple[str, ...], fragment: torch.Tensor) -> dict[str, int]:
    lookup: dict[str, int] = {}
    frag = fragment.cpu().tolist()
    for idx, text in enumerate(texts):
        if not frag[idx] and text not in lookup:
            lookup[text] = idx
    return lookup


_tables_lock = threading.Lock()
#: Tables by (tokenizer content, device): a tokenizer loaded again from the same files (another
#: model load in the process) finds the tables built for the first one.
_tables: dict[tuple[str, str], VocabTables] = {}
#: id(tokenizer) -> (a weak reference to it, its content key): the per-decode lookup stays a
#: dict hit, and an id reused by a later object is recognised by the dead reference.
_keys: dict[int, tuple[weakref.ref[Any], str]] = {}


def vocab_tables(
    tokenizer: Any,
    device: torch.device | str = "cpu",
    vocab_size: int | None = None,
    cache_dir: Path | None = None,
) -> VocabTables:
    """The tables of ``tokenizer`` on ``device``, built once per tokenizer content and cached.

    ``vocab_size`` is the model's logits width when it differs from
    ``len(tokenizer)`` (padded embeddings); extra ids are flagged special.
    Two tokenizer objects with the same vocabulary, special tokens and
    normalisation share one set of tables (they tokenise identically).
    ``cache_dir``: where the tables are kept on disk across processes (see the
    module docstring); None keeps them in this process only.
    """
    dev = torch.device(device)
    with _tables_lock:
        content = _content_key(tokenizer)
        key = (content, str(dev))
        found = _tables.get(key)
        if found is None:
            size = max(vocab_size or 0, len(tokenizer))
            path = _disk_path(cache_dir, content, size)
            described = _read(path) if path is not None else None
            if described is None:
                described = _describe_all(tokenizer, size)
                if path is not None:
                    _write(path, described)
            found = _assemble(tokenizer, described, dev, None if path is None else path.with_suffix(".derived"))
            _tables[key] = found
        return found


def kept_dir_of(tokenizer: Any) -> Path | None:
    """Where tables derived from ``tokenizer``'s are kept on disk: the directory of the tables
    :func:`vocab_tables` built for the same tokenizer content with a ``cache_dir`` (on any
    device), or None when none was (nothing is then kept on disk)."""
    with _tables_lock:
        content = _content_key(tokenizer)
        for (key, _), tables in _tables.items():
            if key == content and tables.kept_dir is not None:
                return tables.kept_dir
    return None


def _content_key(tokenizer: Any) -> str:
    """What identifies ``tokenizer``'s tables: a digest of a fast tokenizer's full definition
    (vocabulary, merges, added and special tokens, normaliser) plus its length and EOS, or the
    object itself for a tokenizer without a serialisable backend. Called under the lock."""
    known = _keys.get(id(tokenizer))
    if known is not None and known[0]() is tokenizer:
        return known[1]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    try:
        definition = backend.to_str() if backend is not None else None
    except Exception:  # noqa: BLE001 - a backend that cannot serialise is keyed by identity
        definition = None
    if definition is None:
        key = f"object:{id(tokenizer)}"
    else:
        digest = hashlib.sha256(definition.encode("utf-8"))
        digest.update(repr((len(tokenizer), tokenizer.eos_token_id,
                            sorted(tokenizer.all_special_ids))).encode("utf-8"))
        key = f"sha256:{digest.hexdigest()}"
    try:
        _keys[id(tokenizer)] = (weakref.ref(tokenizer), key)
    except TypeError:
        pass  # not weakly referenceable: the digest is recomputed on each call
    return key


@dataclass(frozen=True)
class _Described:
    """Every token's bytes and facts, before they become tensors on a device."""

    size: int
    eos_ids: tuple[int, ...]
    token_bytes: tuple[bytes, ...]
    scripts: tuple[frozenset[str], ...]
    columns: dict[str, torch.Tensor]  # by ``_COLUMNS``, on the CPU


#: Bumped whenever what is described per token changes: older files are then rebuilt.
_DISK_FORMAT = 1


def _disk_path(cache_dir: Path | None, content: str, size: int) -> Path | None:
    if cache_dir is None or not content.startswith("sha256:"):
        return None  # a tokenizer keyed by identity has no content to key a file by
    name = f"{content.removeprefix('sha256:')}-{size}-v{_DISK_FORMAT}.pt"
    return cache_dir / "vocab-tables" / name


def _read(path: Path) -> _Described | None:
    """The described tokens kept at ``path``, or None when absent or unreadable."""
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
        if data["format"] != _DISK_FORMAT:
            return None
        flat, ends = data["token_bytes"].numpy().tobytes(), data["ends"].tolist()
        token_bytes = tuple(flat[a:b] for a, b in zip([0, *ends[:-1]], ends))
        names: list[list[str]] = json.loads(data["script_names"])
        scripts = tuple(frozenset(names[i]) for i in data["script_index"].tolist())
        columns = {name: data["columns"][name] for name in _COLUMNS}
        described = _Described(
            size=int(data["size"]),
            eos_ids=tuple(int(i) for i in data["eos_ids"].tolist()),
            token_bytes=token_bytes,
            scripts=scripts,
            columns=columns,
        )
    except FileNotFoundError:
        return None
    except Exception:  # a damaged or foreign file is rebuilt and replaced
        log.warning("vocabulary tables at %s are unreadable; rebuilding them", path, exc_info=True)
        return None
    return described if len(described.token_bytes) == described.size else None


def _write(path: Path, described: _Described) -> None:
    """Keep ``described`` at ``path`` (written aside, then renamed: a reader never sees half)."""
    names = sorted({tuple(sorted(s)) for s in described.scripts})
    index = {frozenset(n): i for i, n in enumerate(names)}
    lengths = torch.tensor([len(b) for b in described.token_bytes], dtype=torch.int64)
    data = {
        "format": _DISK_FORMAT,
        "size": described.size,
        "eos_ids": torch.tensor(described.eos_ids, dtype=torch.int64),
        "token_bytes": torch.frombuffer(bytearray(b"".join(described.token_bytes)), dtype=torch.uint8),
        "ends": torch.cumsum(lengths, 0),
        "script_names": json.dumps([list(n) for n in names]),
        "script_index": torch.tensor([index[s] for s in described.scripts], dtype=torch.int32),
        "columns": described.columns,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        aside = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        torch.save(data, aside)
        os.replace(aside, path)
    except OSError:
        log.warning("could not keep the vocabulary tables at %s", path, exc_info=True)


def _assemble(
    tokenizer: Any, described: _Described, device: torch.device, kept_dir: Path | None = None
) -> VocabTables:
    import llguidance.hf

    texts = tuple(raw.decode("utf-8", errors="replace") for raw in described.token_bytes)
    cols = {name: t.to(device) for name, t in described.columns.items()}
    return VocabTables(
        size=described.size,
        device=device,
        eos_ids=described.eos_ids,
        token_bytes=described.token_bytes,
        texts=texts,
        scripts=described.scripts,
        special=cols["special"],
        fragment=cols["fragment"],
        has_comma=cols["has_comma"],
        has_upper=cols["has_upper"],
        has_lower=cols["has_lower"],
        has_letter=cols["has_letter"],
        has_digit=cols["has_digit"],
        has_newline=cols["has_newline"],
        has_star=cols["has_star"],
        has_dquote=cols["has_dquote"],
        has_angle=cols["has_angle"],
        has_bracket=cols["has_bracket"],
        has_non_latin_letter=cols["has_non_latin_letter"],
        starts_space=cols["starts_space"],
        word_runs=cols["word_runs"],
        starts_wordchar=cols["starts_wordchar"],
        word_units=cols["word_units"],
        starts_unit_char=cols["starts_unit_char"],
        ends_wordchar=cols["ends_wordchar"],
        sentence_ends=cols["sentence_ends"],
        closes_sentence=cols["closes_sentence"],
        ends_terminal=cols["ends_terminal"],
        llg_tokenizer=llguidance.hf.from_tokenizer(tokenizer),
        hf_tokenizer=tokenizer,
        kept_dir=kept_dir,
    )


def _describe_all(tokenizer: Any, size: int) -> _Described:
    """Every token's bytes and facts, token by token (the work the disk cache saves)."""
    import llguidance.hf

    llg = llguidance.hf.from_tokenizer(tokenizer)
    special_ids = set(tokenizer.all_special_ids)
    for idx in getattr(tokenizer, "added_tokens_decoder", {}):
        special_ids.add(int(idx))
    eos = tokenizer.eos_token_id
    eos_ids = tuple(sorted({eos} if isinstance(eos, int) else set(eos)))

    token_bytes: list[bytes] = []
    scripts: list[frozenset[str]] = []
    cols: dict[str, list[Any]] = {name: [] for name in _COLUMNS}
    known = len(tokenizer)  # once: a fast tokenizer counts its whole vocabulary for len()
    for idx in range(size):
        raw = b"" if idx >= known or idx in special_ids else llg.decode_bytes([idx])
        token_bytes.append(raw)
        try:
            text = raw.decode("utf-8")
            frag = False
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            frag = True
        letter_scripts = frozenset(letter_script(c) for c in text if c.isalpha())
        scripts.append(letter_scripts if letter_scripts else frozenset({"COMMON"}))
        _describe(text, frag, idx in special_ids or idx >= known, cols)

    integers = {"word_runs", "word_units", "sentence_ends"}
    columns = {
        name: torch.tensor(cols[name], dtype=torch.int32 if name in integers else torch.bool)
        for name in _COLUMNS
    }
    return _Described(
        size=size,
        eos_ids=eos_ids,
        token_bytes=tuple(token_bytes),
        scripts=tuple(scripts),
        columns=columns,
    )


_COLUMNS = (
    "special",
    "fragment",
    "has_comma",
    "has_upper",
    "has_lower",
    "has_letter",
    "has_digit",
    "has_newline",
    "has_star",
    "has_dquote",
    "has_angle",
    "has_bracket",
    "has_non_latin_letter",
    "starts_space",
    "word_runs",
    "starts_wordchar",
    "word_units",
    "starts_unit_char",
    "ends_wordchar",
    "sentence_ends",
    "closes_sentence",
    "ends_terminal",
)


def _describe(text: str, frag: bool, special: bool, cols: dict[str, list[Any]]) -> None:
    """Append one token's facts to the column lists (the order of ``_COLUMNS``)."""
    cols["special"].append(special)
    cols["fragment"].append(frag)
    cols["has_comma"].append("," in text or "，" in text or "、" in text)
    cols["has_upper"].append(any(c.isupper() for c in text))
    cols["has_lower"].append(any(c.islower() for c in text))
    cols["has_letter"].append(any(c.isalpha() for c in text) or frag)
    cols["has_digit"].append(any(c.isdigit() for c in text))
    cols["has_newline"].append("\n" in text or "\r" in text)
    cols["has_star"].append("*" in text)
    cols["has_dquote"].append('"' in text)
    cols["has_angle"].append("<" in text or ">" in text)
    cols["has_bracket"].append("[" in text or "]" in text)
    cols["has_non_latin_letter"].append(
        frag or any(c.isalpha() and letter_script(c) != "LATIN" for c in text)
    )
    cols["starts_space"].append(bool(text) and text[0].isspace())
    cols["word_runs"].append(len(WORD_RE.findall(text)))
    cols["starts_wordchar"].append(bool(text) and bool(WORD_RE.match(text[0])))
    cols["word_units"].append(count_words(text))
    cols["starts_unit_char"].append(bool(text) and joins_run(text[0]))
    cols["ends_wordchar"].append(bool(text) and bool(WORD_RE.match(text[-1])))
    cols["sentence_ends"].append(scan_sentences(text)[0])
    cols["closes_sentence"].append(_CLOSES_SENTENCE.match(text) is not None)
    cols["ends_terminal"].append(bool(text) and text[-1] in _TERMINAL)
