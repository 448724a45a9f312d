"""The long-prefill case of ``bench.robustness``: a long CJK prompt beside short requests.

:func:`run_long_prefill` serves ``tenet serve`` with the bundled model (its own data
directory, the model cache ``bench.service`` uses) and

- times ``SHORT`` ("Say hi.", 16 new tokens, the request ``bench.service`` sends) alone a
  few times: ``short_request_p50_s_alone``;
- sends one long Chinese prompt (``LONG_TOKENS`` of the model's tokens, just within the
  default ``TENET_MAX_PROMPT_TOKENS``; 8 new tokens, greedy) and, while it runs, the short request
  again and again, one after another: ``short_request_p50_s_beside_long_prefill`` is the
  median of those that finished while the long one was still running
  (``short_during_long``; the figure is null if none did; ``short_requests_s`` are all of
  them, the last possibly finished after the long one), ``long_request_s`` how long the
  long one took;
- then sends ``BURST`` short requests at once: ``burst_refused`` counts the 429s admission
  gave them (a per-request mean inflated by the long one refused most of such a burst);
- a Chinese prompt of 7,900 characters (within the character limit, about 14,000 tokens)
  must be a 413 whose problem names the token limit: ``token_limit_refused``.

Every status is returned, to be counted with the other hostile cases for ``five_xx``.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

import httpx

from bench.service import MODEL_CACHE, free_port, start_server, stop_server, wait_ready

__all__ = ["LONG_TOKENS", "SHORT", "run_long_prefill"]

SHORT: Final = {"prompt": "Say hi.", "options": {"max_new_tokens": 16}}
#: Tokens of the long prompt (the default TENET_MAX_PROMPT_TOKENS is 4096).
LONG_TOKENS: Final = 4000
BURST: Final = 8
_SENTENCE: Final = "请根据我们的反洗钱规则说明这笔跨境转账是否需要上报并列出理由。"


def _long_prompt(chars: int) -> str:
    text = (_SENTENCE * (chars // len(_SENTENCE) + 1))[: chars - 6]
    return text + "请简要回答。"


def _prompt_of(tokens: int) -> tuple[str, int]:
    """The longest :func:`_long_prompt` of at most ``tokens`` of the bundled model's tokens."""
    from transformers import AutoTokenizer

    from inference.loader import prepare_cache

    tokenizer = AutoTokenizer.from_pretrained(prepare_cache("bundled", MODEL_CACHE))

    def count(chars: int) -> int:
        return len(tokenizer.encode(_long_prompt(chars), add_special_tokens=False))

    low, high = 16, 8000
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if count(mid) <= tokens else (low, mid - 1)
    return _long_prompt(low), count(low)


def _short(http: httpx.Client, headers: dict[str, str]) -> tuple[int, float]:
    started = time.perf_counter()
    status = http.post("/v1/reason", headers=headers, json=SHORT).status_code
    return status, time.perf_counter() - started


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def run_long_prefill(*, quick: bool) -> tuple[list[int], dict[str, Any]]:
    """Statuses of every request sent and the case's figures (module docstring)."""
    data_dir = Path(tempfile.mkdtemp(prefix="tenet-robustness-prefill-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = start_server(data_dir, port, data_dir / "server.log")
    statuses: list[int] = []
    try:
        wait_ready(base, process, timeout_s=300.0)
        key = (data_dir / "admin-key.txt").read_text(encoding="utf-8").strip()
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=base, timeout=600.0) as http:
            alone = [_short(http, headers) for _ in range(3)]  # the first pays for warm-up
            statuses += [s for s, _ in alone]

            long_prompt, long_tokens = _prompt_of(LONG_TOKENS)
            long_body = {"prompt": long_prompt, "options": {"max_new_tokens": 8, "num_beams": 1}}
            long_done = threading.Event()
            long_result: dict[str, Any] = {}

            def long_request() -> None:
                started = time.perf_counter()
                response = http.post("/v1/reason", headers=headers, json=long_body)
                long_result.update(status=response.status_code, seconds=time.perf_counter() - started,
                                   prompt_tokens=(response.json().get("usage") or {}).get("prompt_tokens")
                                   if response.status_code == 200 else None)
                long_done.set()

            thread = threading.Thread(target=long_request, daemon=True)
            thread.start()
            time.sleep(3.0)  # its analysis and planning; then it prefills
            beside: list[float] = []
            sent: list[float] = []
            while not long_done.is_set() and len(beside) < (3 if quick else 8):
                status, seconds = _short(http, headers)
                statuses.append(status)
                sent.append(round(seconds, 2))
                if status == 200 and not long_done.is_set():
                    beside.append(seconds)
            thread.join(timeout=900)
            statuses.append(int(long_result.get("status", 0)))

            with ThreadPoolExecutor(BURST) as pool:
                burst = list(pool.map(lambda _: _short(http, headers), range(BURST)))
            statuses += [s for s, _ in burst]

            over = http.post("/v1/reason", headers=headers, json={"prompt": _long_prompt(7900)})
            statuses.append(over.status_code)
            problem = over.json() if over.headers.get("content-type", "").startswith("application/problem") else {}
    finally:
        stop_server(process)
    return statuses, {
        "short_request_p50_s_alone": _median([s for _, s in alone[1:]]),
        "short_request_p50_s_beside_long_prefill": _median(beside),
        "short_during_long": len(beside),
        "short_requests_s": sent,
        "long_request_s": round(float(long_result.get("seconds", 0.0)), 1),
        "long_prompt_chars": len(long_prompt),
        "long_prompt_tokens": long_tokens,
        "long_decode_prompt_tokens": long_result.get("prompt_tokens"),
        "burst": BURST,
        "burst_refused": sum(1 for s, _ in burst if s == 429),
        "burst_p50_s": _median([s for st, s in burst if st == 200]),
        "token_limit_refused": over.status_code == 413 and problem.get("unit") == "tokens"
        and "limit" in problem,
    }
