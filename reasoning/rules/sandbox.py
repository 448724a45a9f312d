"""The evaluation-time guards around rdflib's SPARQL and pyshacl (belt and braces).

The upload checks (:mod:`reasoning.rules.check`) refuse every SPARQL text that
would reach outside the case or does not parse. These guards hold even if
something slipped past them (a version stored before the checks, a bug in a
check), and :func:`install` puts them in place once per process (idempotent;
:func:`~reasoning.rules.shapes.load_rules` and the rule engine call it):

- **No SERVICE.** rdflib's documented extension point for algebra
  evaluation (``CUSTOM_EVALS``) refuses every ``SERVICE`` clause with
  :class:`OutsideCall` before rdflib's own evaluation could send it.
- **No FROM loading.** ``SPARQL_LOAD_GRAPHS`` is switched off, so
  ``FROM`` / ``FROM NAMED`` never fetch a graph.
- **No network from a rule.** A Python audit hook (``sys.addaudithook``)
  refuses sockets, URL requests and new processes in a thread that is inside
  :func:`no_outside_calls` (the rule engine evaluates inside it); other
  threads are not affected.
- **No backtracking regular expressions.** SPARQL's ``regex`` and
  ``replace`` (rdflib) and SHACL's ``sh:pattern`` (pyshacl) run on RE2
  (``google-re2``): matching takes time linear in the text, so a
  catastrophic pattern such as ``^(a+)+$`` cannot hold the interpreter for
  seconds. RE2 has no backreferences or look-around; a pattern using them
  is refused at upload (:func:`regex_problem`) and, if met at evaluation,
  is a SPARQL error (the filter is false), never a 500.

Nothing here imports code of ours beyond :mod:`reasoning.errors`.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import re2

from reasoning.errors import UnsafeContent

__all__ = ["OutsideCall", "install", "no_outside_calls", "regex_problem"]

#: Audit events that reach outside the process (sockets, URLs, other programs).
_OUTSIDE_EVENTS: Final = frozenset({
    "socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
    "socket.sendto", "urllib.Request", "http.client.connect", "ftplib.connect",
    "smtplib.connect", "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn",
    "os.spawn", "os.startfile", "webbrowser.open",
})
#: RE2's memory budget per compiled pattern (its default is 8 MiB); a larger pattern is refused.
_RE2_MAX_MEM: Final = 2 << 20
_FLAG_LETTERS: Final = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))

_guard = threading.local()
_installed = False
_install_lock = threading.Lock()


class OutsideCall(UnsafeContent):
    """A rule tried to reach outside the case (SERVICE, a socket, a URL) and was stopped."""


@contextmanager
def no_outside_calls() -> Iterator[None]:
    """Within the block, this thread cannot open sockets, fetch URLs or start processes."""
    install()
    before = getattr(_guard, "active", False)
    _guard.active = True
    try:
        yield
    finally:
        _guard.active = before


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event in _OUTSIDE_EVENTS and getattr(_guard, "active", False):
        raise OutsideCall(f"a decision rule tried to reach outside the service ({event}); "
                          "refused", event=event)


def _refuse_service(ctx: Any, part: Any) -> Any:
    if getattr(part, "name", None) == "ServiceGraphPattern":
        raise OutsideCall("a decision rule holds a SPARQL SERVICE clause; it is not evaluated",
                          event="SERVICE")
    raise NotImplementedError  # rdflib's protocol: evaluate this part as usual


def _options(flags: int) -> tuple[str, Any]:
    letters = "".join(letter for flag, letter in _FLAG_LETTERS if flags & flag)
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _RE2_MAX_MEM
    return (f"(?{letters})" if letters else ""), options


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str, flags: int) -> Any:
    prefix, options = _options(int(flags))
    return re2.compile(prefix + pattern, options)


def regex_problem(pattern: str, flags: int = 0) -> str | None:
    """Why RE2 cannot run ``pattern`` (None when it can): the upload check of a pattern."""
    try:
        _compiled(pattern, flags)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(
            exc.args[0], bytes) else str(exc)
        return (f"the regular expression {pattern[:80]!r} is not supported ({reason}): "
                "rules run regular expressions on RE2, which has no backreferences or "
                "look-around and bounds a pattern's size")
    return None


class _SparqlRegex:
    """What rdflib's SPARQL operators use of :mod:`re`, on RE2; a bad pattern is a SPARQL error."""

    IGNORECASE, MULTILINE, DOTALL = re.IGNORECASE, re.MULTILINE, re.DOTALL
    I, M, S = re.IGNORECASE, re.MULTILINE, re.DOTALL

    @staticmethod
    def _get(pattern: str, flags: int) -> Any:
        from rdflib.plugins.sparql.sparql import SPARQLError

        try:
            return _compiled(str(pattern), int(flags))
        except re2.error:
            raise SPARQLError(f"unsupported regular expression {str(pattern)[:80]!r}") from None

    def search(self, pattern: str, text: str, flags: int = 0) -> Any:
        return self._get(pattern, flags).search(str(text))

    def sub(self, pattern: str, repl: str, text: str, flags: int = 0) -> str:
        result: str = self._get(pattern, flags).sub(str(repl), str(text))
        return result

    def compile(self, pattern: str, flags: int = 0) -> Any:
        try:
            return _compiled(str(pattern), int(flags))
        except re2.error as exc:
            raise re.error(str(exc)) from None


def install() -> None:
    """Put the guards in place (once per process; later calls do nothing)."""
    global _installed
    if _installed:
        return
    with _install_lock:
        if _installed:
            return
        import pyshacl.constraints.core.string_based_constraints as shacl_strings
        from rdflib.plugins import sparql
        from rdflib.plugins.sparql import operators

        sparql.SPARQL_LOAD_GRAPHS = False
        sparql.CUSTOM_EVALS["tenet-no-service"] = _refuse_service
        engine = _SparqlRegex()
        # rdflib and pyshacl offer no setting for the regex engine: their module's `re` is RE2.
        setattr(operators, "re", engine)  # noqa: B010 - a module attribute, replaced on purpose
        setattr(shacl_strings, "re", engine)  # noqa: B010 - as above
        sys.addaudithook(_audit)
        _installed = True
