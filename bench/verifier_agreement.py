"""Agreement of our verifiers with IFEval's own checkers (``if-verifiable``).

Run ``python -m bench.verifier_agreement [--quick] [--data PATH]``. For every
IFEval prompt and each of its labelled instructions, responses are built by
construction: ones that satisfy the instruction, ones that violate it, and
edge cases at its boundary (a count of exactly n and n - 1, abbreviations
and decimals for sentences, a word inside a longer word for forbidden words,
``**bold**`` for highlights, fenced JSON, ...). Every response of a prompt is
then checked against every instruction of that prompt, once by our
``verify`` (with the constraint the label maps to) and once by the
instruction's ``if-verifiable`` checker in strict mode. The last stdout line
is one JSON object with ``agreement``, ``pairs``, ``per_instruction``,
``disagreements`` (all of them, with the response) and ``judge_fallbacks``.

The judge needs two things no package ships, handled explicitly here:

- nltk's trained Punkt model (``tokenizers/punkt/english.pickle``) for
  ``count_sentences`` and ``word_tokenize``. The judge is given nltk's
  *untrained* ``PunktSentenceTokenizer`` (default parameters, no learned
  abbreviations) for both; ``judge_fallbacks`` says so in the output;
- ``datasets``, which ``if_verifiable`` imports to download benchmarks: it is
  never called here (the prompts come from the local file).

``langdetect`` (the judge's language detector) is seeded for reproducibility.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.extraction import DEFAULT_DATA, load
from reasoning.constraints.model import Constraint, Kind
from reasoning.constraints.verifiers import verify

__all__ = ["JUDGE_FALLBACKS", "constraints_for_label", "main", "responses_for", "run"]

JUDGE_FALLBACKS = (
    "nltk punkt data is not installed (no package ships it): the judge's count_sentences and "
    "word_tokenize use nltk's untrained PunktSentenceTokenizer() instead of the trained english.pickle; "
    "if_verifiable's datasets import is never used (prompts are read from the local jsonl); "
    "langdetect is seeded (DetectorFactory.seed = 0)."
)


def _install_judge_fallbacks() -> Mapping[str, type]:
    """Patch the judge's nltk use and return IFEval's instruction registry."""
    import langdetect
    import nltk
    from if_verifiable.ifeval import instructions_util
    from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT
    from nltk.tokenize.destructive import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    langdetect.DetectorFactory.seed = 0
    sentence_tokenizer = PunktSentenceTokenizer()
    word_tokenizer = NLTKWordTokenizer()

    def word_tokenize(text: str, language: str = "english", preserve_line: bool = False) -> list[str]:
        sentences = [text] if preserve_line else sentence_tokenizer.tokenize(text)
        return [token for sentence in sentences for token in word_tokenizer.tokenize(sentence)]

    instructions_util._get_sentence_tokenizer = lambda: sentence_tokenizer
    nltk.word_tokenize = word_tokenize
    registry: Mapping[str, type] = INSTRUCTION_DICT
    return registry


def constraints_for_label(ifeval_id: str, kwargs: Mapping[str, Any], prompt: str) -> list[Constraint]:
    """Our constraints for one IFEval instruction (all must hold).

    IFEval's ``english_capital`` / ``english_lowercase`` checkers also require
    English, so they map to the case constraint plus ``response_language{en}``.
    """
    k = {key: value for key, value in kwargs.items() if value is not None}
    suffix = ifeval_id.split(":", 1)[1]

    def one(kind: Kind, **params: Any) -> list[Constraint]:
        return [Constraint(id="c1", kind=kind, params=params)]

    table: dict[str, Callable[[], list[Constraint]]] = {
        "number_words": lambda: one(Kind.WORD_COUNT, relation=k["relation"], n=k["num_words"]),
        "number_sentences": lambda: one(Kind.SENTENCE_COUNT, relation=k["relation"], n=k["num_sentences"]),
        "frequency": lambda: one(Kind.KEYWORD_FREQUENCY, keyword=k["keyword"], relation=k["relation"], n=k["frequency"]),
        "letter_frequency": lambda: one(Kind.LETTER_FREQUENCY, letter=k["letter"], relation=k["let_relation"],
                                        n=k["let_frequency"]),
        "capital_word_frequency": lambda: one(Kind.CAPITAL_WORD_FREQUENCY, relation=k["capital_relation"],
                                              n=k["capital_frequency"]),
        "existence": lambda: one(Kind.KEYWORDS_PRESENT, keywords=list(k["keywords"])),
        "forbidden_words": lambda: one(Kind.FORBIDDEN_WORDS, words=list(k["forbidden_words"])),
        "response_language": lambda: one(Kind.RESPONSE_LANGUAGE, language=k["language"]),
        "english_capital": lambda: one(Kind.ALL_CAPITALS) + one(Kind.RESPONSE_LANGUAGE, language="en"),
        "english_lowercase": lambda: one(Kind.ALL_LOWERCASE) + one(Kind.RESPONSE_LANGUAGE, language="en"),
        "number_paragraphs": lambda: one(Kind.PARAGRAPH_COUNT, n=k["num_paragraphs"]),
        "nth_paragraph_first_word": lambda: one(Kind.NTH_PARAGRAPH_FIRST_WORD, n=k["num_paragraphs"],
                                                nth=k["nth_paragraph"], first_word=k["first_word"]),
        "number_placeholders": lambda: one(Kind.PLACEHOLDERS, n=k["num_placeholders"]),
        "number_bullet_lists": lambda: one(Kind.BULLET_COUNT, n=k["num_bullets"]),
        "constrained_response": lambda: one(Kind.CONSTRAINED_RESPONSE,
                                            options=["My answer is yes.", "My answer is no.", "My answer is maybe."]),
        "number_highlighted_sections": lambda: one(Kind.HIGHLIGHTED_SECTIONS, n=k["num_highlights"]),
        "multiple_sections": lambda: one(Kind.SECTIONS, splitter=k["section_spliter"], n=k["num_sections"]),
        "json_format": lambda: one(Kind.JSON_FORMAT),
        "title": lambda: one(Kind.TITLE),
        "two_responses": lambda: one(Kind.TWO_RESPONSES),
        "repeat_prompt": lambda: one(Kind.REPEAT_PROMPT, prompt_to_repeat=k.get("prompt_to_repeat", prompt)),
        "end_checker": lambda: one(Kind.END_PHRASE, phrase=k["end_phrase"]),
        "postscript": lambda: one(Kind.POSTSCRIPT, marker=k["postscript_marker"]),
        "no_comma": lambda: one(Kind.NO_COMMA),
        "quotation": lambda: one(Kind.QUOTATION),
    }
    return table[suffix]()


# ------------------------------------------------------------ response construction

_SENTENCES = (
    "The committee reviewed the proposal carefully.",
    "Several members raised questions about the budget!",
    "Why would anyone object to a clear plan?",
    "Dr. Smith presented the figures at 3.5 percent growth.",
    "The U.S. office agreed with the summary.",
    "Nobody expected the meeting to end so early...",
    "She said \"we will return tomorrow.\"",
    "Results were mixed but encouraging overall.",
)
_WORDS = ["river", "stone", "market", "window", "garden", "silver", "morning", "pocket", "ladder", "planet", "cotton", "button", "tunnel", "bottle", "marble", "engine", "forest", "pillow", "mirror", "candle", "copper", "feather", "harbor", "island", "jacket"]
_LANGUAGE_SAMPLES: Mapping[str, str] = {
    "en": "I think a hamburger is a kind of sandwich because it has a filling between two pieces of bread. "
          "This question is a topic of debate among many people.",
    "hi": "मुझे लगता है कि हैमबर्गर एक प्रकार का सैंडविच है क्योंकि इसमें दो ब्रेड के बीच भरावन होता है। "
          "यह सवाल बहुत से लोगों के बीच बहस का विषय है।",
    "mr": "मला वाटते की हॅम्बर्गर हा एक प्रकारचा सँडविच आहे कारण त्यात दोन पावांच्या मध्ये सारण असते. "
          "हा प्रश्न अनेक लोकांमध्ये चर्चेचा विषय आहे.",
    "ne": "मलाई लाग्छ कि ह्याम्बर्गर एक प्रकारको स्यान्डविच हो किनभने यसमा दुई वटा रोटीको बीचमा खाना हुन्छ। "
          "यो प्रश्न धेरै मानिसहरूबीच छलफलको विषय हो।",
    "kn": "ಹ್ಯಾಂಬರ್ಗರ್ ಒಂದು ರೀತಿಯ ಸ್ಯಾಂಡ್ವಿಚ್ ಎಂದು ನಾನು ಭಾವಿಸುತ್ತೇನೆ ಏಕೆಂದರೆ ಅದರಲ್ಲಿ ಎರಡು ಬ್ರೆಡ್ ತುಂಡುಗಳ ನಡುವೆ ಆಹಾರವಿದೆ. "
          "ಈ ಪ್ರಶ್ನೆಯು ಅನೇಕ ಜನರ ನಡುವೆ ಚರ್ಚೆಯ ವಿಷಯವಾಗಿದೆ.",
    "vi": "Tôi nghĩ rằng bánh hamburger là một loại bánh mì kẹp vì nó có nhân ở giữa hai lát bánh mì. "
          "Câu hỏi này là chủ đề tranh luận của nhiều người.",
    "ko": "햄버거는 두 개의 빵 사이에 속이 들어 있기 때문에 샌드위치의 한 종류라고 생각합니다. "
          "이 질문은 많은 사람들 사이에서 논쟁의 주제입니다.",
    "sw": "Nadhani hamburger ni aina ya sandwichi kwa sababu ina chakula kati ya vipande viwili vya mkate. "
          "Swali hili ni mada ya mjadala kati ya watu wengi.",
    "de": "Ich denke, dass ein Hamburger eine Art Sandwich ist, weil er eine Füllung zwischen zwei Brotscheiben hat. "
          "Diese Frage wird von vielen Menschen diskutiert.",
    "pa": "ਮੈਨੂੰ ਲੱਗਦਾ ਹੈ ਕਿ ਹੈਮਬਰਗਰ ਇੱਕ ਕਿਸਮ ਦਾ ਸੈਂਡਵਿਚ ਹੈ ਕਿਉਂਕਿ ਇਸ ਵਿੱਚ ਦੋ ਬਰੈੱਡਾਂ ਦੇ ਵਿਚਕਾਰ ਭੋਜਨ ਹੁੰਦਾ ਹੈ। "
          "ਇਹ ਸਵਾਲ ਬਹੁਤ ਸਾਰੇ ਲੋਕਾਂ ਵਿੱਚ ਬਹਿਸ ਦਾ ਵਿਸ਼ਾ ਹੈ।",
    "fa": "من فکر می کنم که همبرگر نوعی ساندویچ است زیرا بین دو تکه نان غذا دارد. "
          "این سوال موضوع بحث بسیاری از مردم است.",
    "ru": "Я думаю, что гамбургер является разновидностью сэндвича, потому что в нём есть начинка между двумя "
          "кусками хлеба. Этот вопрос обсуждают многие люди.",
    "bg": "Мисля, че хамбургерът е вид сандвич, защото има плънка между две филии хляб. "
          "Този въпрос е предмет на спор между много хора.",
    "pt": "Eu acho que o hambúrguer é um tipo de sanduíche porque tem recheio entre duas fatias de pão. "
          "Esta pergunta é tema de debate entre muitas pessoas.",
    "gu": "મને લાગે છે કે હેમબર્ગર એક પ્રકારની સેન્ડવીચ છે કારણ કે તેમાં બે બ્રેડની વચ્ચે ખોરાક હોય છે. "
          "આ પ્રશ્ન ઘણા લોકો વચ્ચે ચર્ચાનો વિષય છે.",
    "te": "హాంబర్గర్ ఒక రకమైన శాండ్‌విచ్ అని నేను అనుకుంటున్నాను ఎందుకంటే దానిలో రెండు బ్రెడ్ ముక్కల మధ్య ఆహారం ఉంటుంది. "
          "ఈ ప్రశ్న చాలా మంది మధ్య చర్చనీయాంశం.",
    "it": "Penso che l'hamburger sia un tipo di panino perché ha un ripieno tra due fette di pane. "
          "Questa domanda è oggetto di dibattito tra molte persone.",
    "ar": "أعتقد أن الهامبرغر نوع من الساندويتش لأنه يحتوي على حشوة بين قطعتين من الخبز. "
          "هذا السؤال موضوع نقاش بين كثير من الناس.",
    "ta": "ஹாம்பர்கர் ஒரு வகையான சாண்ட்விச் என்று நான் நினைக்கிறேன், ஏனெனில் அதில் இரண்டு ரொட்டித் துண்டுகளுக்கு "
          "இடையில் உணவு உள்ளது. இந்தக் கேள்வி பலரிடையே விவாதப் பொருளாக உள்ளது.",
    "fi": "Mielestäni hampurilainen on eräänlainen voileipä, koska siinä on täyte kahden leipäviipaleen välissä. "
          "Tästä kysymyksestä väittelevät monet ihmiset.",
    "ur": "میرا خیال ہے کہ ہیمبرگر ایک قسم کا سینڈوچ ہے کیونکہ اس میں روٹی کے دو ٹکڑوں کے درمیان کھانا ہوتا ہے۔ "
          "یہ سوال بہت سے لوگوں کے درمیان بحث کا موضوع ہے۔",
    "th": "ฉันคิดว่าแฮมเบอร์เกอร์เป็นแซนด์วิชชนิดหนึ่งเพราะมีไส้อยู่ระหว่างขนมปังสองแผ่น "
          "คำถามนี้เป็นหัวข้อถกเถียงของคนจำนวนมาก",
    "bn": "আমি মনে করি হ্যামবার্গার এক ধরনের স্যান্ডউইচ কারণ এতে দুটি রুটির টুকরোর মাঝে খাবার থাকে। "
          "এই প্রশ্নটি অনেক মানুষের মধ্যে বিতর্কের বিষয়।",
    "fr": "Je pense qu'un hamburger est une sorte de sandwich parce qu'il a une garniture entre deux tranches de pain. "
          "Cette question fait débat entre beaucoup de gens.",
    "es": "Creo que una hamburguesa es un tipo de sándwich porque tiene relleno entre dos rebanadas de pan. "
          "Esta pregunta es tema de debate entre muchas personas.",
}


def _words(n: int, avoid: str = "") -> str:
    pool = [w for w in _WORDS if not avoid or avoid.lower() not in w] or ["ok"]
    return " ".join(pool[i % len(pool)] for i in range(n))


def _sentences(n: int) -> str:
    return " ".join(_SENTENCES[i % len(_SENTENCES)] for i in range(n))


def _around(n: int) -> list[int]:
    return sorted({max(0, n - 1), n, n + 1})


def responses_for(ifeval_id: str, kwargs: Mapping[str, Any], prompt: str) -> Iterator[str]:
    """Responses that satisfy, violate and sit at the edge of one instruction."""
    k = {key: value for key, value in kwargs.items() if value is not None}
    suffix = ifeval_id.split(":", 1)[1]
    base = _sentences(3)
    if suffix == "number_words":
        for n in _around(int(k["num_words"])):
            yield _words(n).capitalize() + "."
            yield _words(max(0, n - 2)) + " well-known don't"
    elif suffix == "number_sentences":
        for n in _around(int(k["num_sentences"])):
            if n:
                yield _sentences(n)
                yield "\n".join(_SENTENCES[(i + 3) % len(_SENTENCES)] for i in range(n))
    elif suffix == "frequency":
        word = str(k["keyword"])
        for n in _around(int(k["frequency"])):
            yield " ".join([f"The {word} matters." for _ in range(n)] + [base])
            yield " ".join([word.upper()] * n) + " " + base
    elif suffix == "letter_frequency":
        letter = str(k["letter"])
        for n in _around(int(k["let_frequency"])):
            filler = _words(12, avoid=letter)
            yield filler + " " + " ".join([letter] * n)
            yield " ".join([letter.upper()] * n) + " " + filler
    elif suffix == "capital_word_frequency":
        for n in _around(int(k["capital_frequency"])):
            caps = " ".join(["RIVER"] * n)
            yield f"the {caps} flows well. it is calm here."
            contractions = " ".join(["DON'T"] * max(0, n - 1))
            yield f"I think {contractions} the U.S.A. rests."
    elif suffix == "existence":
        keywords = [str(w) for w in k["keywords"]]
        yield base + " " + " and ".join(keywords) + "."
        yield base + " " + " ".join(w.upper() for w in keywords) + "."
        yield base + " " + " and ".join(keywords[1:]) + "."
        yield base + " " + " ".join(w + "ing" for w in keywords)
    elif suffix == "forbidden_words":
        words = [str(w) for w in k["forbidden_words"]]
        yield base
        yield base + " " + words[0].capitalize() + " appears here."
        yield base + " the " + words[-1] + "s and " + words[-1] + "y things"
        yield base + " pre" + words[0] + "post"
    elif suffix == "response_language":
        language = str(k["language"])
        yield _LANGUAGE_SAMPLES.get(language, _LANGUAGE_SAMPLES["en"])
        yield _LANGUAGE_SAMPLES["en"]
        yield _LANGUAGE_SAMPLES["fr"] if language != "fr" else _LANGUAGE_SAMPLES["es"]
    elif suffix in ("english_capital", "english_lowercase"):
        text = _LANGUAGE_SAMPLES["en"]
        yield text.upper()
        yield text.lower()
        yield text
        yield _LANGUAGE_SAMPLES["fr"].upper()
        yield _LANGUAGE_SAMPLES["de"].lower()
    elif suffix == "number_paragraphs":
        for n in _around(int(k["num_paragraphs"])):
            if n:
                yield "\n***\n".join(_SENTENCES[i % len(_SENTENCES)] for i in range(n))
                yield "***\n" + " *** ".join(_SENTENCES[i % len(_SENTENCES)] for i in range(n)) + "\n***"
        yield "One.\n***\n\n***\nTwo."
    elif suffix == "nth_paragraph_first_word":
        n, nth, word = int(k["num_paragraphs"]), int(k["nth_paragraph"]), str(k["first_word"])
        for count in _around(n):
            paragraphs = [_SENTENCES[i % len(_SENTENCES)] for i in range(max(1, count))]
            if nth <= len(paragraphs):
                paragraphs[nth - 1] = f"{word.capitalize()}, {paragraphs[nth - 1]}"
            yield "\n\n".join(paragraphs)
        paragraphs = [_SENTENCES[i % len(_SENTENCES)] for i in range(n)]
        yield "\n\n".join(paragraphs)
        paragraphs[nth - 1] = f'"{word}" is how it starts.'
        yield "\n\n".join(paragraphs)
    elif suffix == "number_placeholders":
        for n in _around(int(k["num_placeholders"])):
            yield base + " " + " ".join(f"[field{i}]" for i in range(n))
    elif suffix == "number_bullet_lists":
        for n in _around(int(k["num_bullets"])):
            yield "Intro.\n" + "\n".join(f"* point {i}" for i in range(n))
            yield "\n".join(("- " if i % 2 else "* ") + f"item {i}" for i in range(n)) + "\n**Bold line**"
    elif suffix == "constrained_response":
        yield "My answer is yes."
        yield "I think so. My answer is maybe."
        yield "my answer is yes."
        yield "Yes."
    elif suffix == "number_highlighted_sections":
        for n in _around(int(k["num_highlights"])):
            yield base + " " + " ".join(f"*part {i}*" for i in range(n))
            yield base + " " + " ".join(f"**part {i}**" for i in range(n)) + " * *"
    elif suffix == "multiple_sections":
        splitter = str(k["section_spliter"])
        for n in _around(int(k["num_sections"])):
            yield "\n".join(f"{splitter} {i + 1}\n{_SENTENCES[i % len(_SENTENCES)]}" for i in range(n))
        yield f"{splitter.lower()} 1\nText.\n{splitter.lower()} 2\nMore."
    elif suffix == "json_format":
        yield '{"answer": "yes", "items": [1, 2]}'
        yield '```json\n{"answer": "yes"}\n```'
        yield "Here is JSON: {\"answer\": 1}"
        yield "[1, 2, 3]"
    elif suffix == "title":
        yield "<<A Fine Title>>\n" + base
        yield base
        yield "<< >>\n" + base
        yield "<<split\ntitle>>"
    elif suffix == "two_responses":
        yield "First answer here.\n******\nSecond answer here."
        yield "Same answer.\n******\nSame answer."
        yield "One.\n******\nTwo.\n******\nThree."
        yield "Only one answer."
        yield "******\nFirst.\n******\nSecond.\n******"
    elif suffix == "repeat_prompt":
        repeat = str(k.get("prompt_to_repeat", prompt))
        yield repeat + "\n" + base
        yield repeat.upper() + " " + base
        yield "Sure! " + repeat
        yield base
    elif suffix == "end_checker":
        phrase = str(k["end_phrase"])
        yield base + " " + phrase
        yield '"' + base + " " + phrase + '"'
        yield base + " " + phrase + " Thanks."
        yield base + " " + phrase.lower()
    elif suffix == "postscript":
        marker = str(k["postscript_marker"])
        yield base + f"\n{marker} Remember to call."
        yield base + f"\n{marker.lower()} remember to call."
        yield base
        yield base + "\nP. S. spaced marker"
    elif suffix == "no_comma":
        yield base
        yield base + " Yes, indeed."
        yield "No commas at all here"
    elif suffix == "quotation":
        yield '"' + base + '"'
        yield base
        yield '"'
        yield ' "padded" '
    else:
        yield base


# ------------------------------------------------------------ scoring


def _judge(registry: Mapping[str, type], ifeval_id: str, kwargs: Mapping[str, Any], prompt: str, text: str) -> bool:
    checker = registry[ifeval_id](ifeval_id)
    checker.build_description(**{key: value for key, value in kwargs.items() if value is not None})
    args = checker.get_instruction_args()
    if args and "prompt" in args:
        checker.build_description(prompt=prompt)
    return bool(text.strip() and checker.check_following(text))


def _undefined_for_judge(ifeval_id: str, kwargs: Mapping[str, Any]) -> str | None:
    """Why the judge cannot check this instruction, or None.

    IFEval's letter checker replaces any ``letter`` outside a-z (IFEval labels
    "#" and "!") by a random letter, so its verdict is not a rule to agree with.
    """
    if ifeval_id == "keywords:letter_frequency":
        letter = str(kwargs.get("letter") or "")
        if len(letter) != 1 or not ("a" <= letter.lower() <= "z"):
            return "letter_frequency with a non-letter: the judge substitutes a random letter"
    return None


def _ours(ifeval_id: str, kwargs: Mapping[str, Any], prompt: str, text: str) -> bool:
    return all(verify(c, text).satisfied for c in constraints_for_label(ifeval_id, kwargs, prompt))


def run(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Build responses for every row and compare verdicts pair by pair."""
    registry = _install_judge_fallbacks()
    agree: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    disagreements: list[dict[str, Any]] = []
    excluded: dict[str, int] = defaultdict(int)
    for row in rows:
        labels = list(zip(row["instruction_id_list"], row["kwargs"]))
        responses: list[str] = []
        for ifeval_id, kwargs in labels:
            responses.extend(r for r in responses_for(ifeval_id, kwargs, row["prompt"]) if r.strip())
        for text in dict.fromkeys(responses):
            for ifeval_id, kwargs in labels:
                reason = _undefined_for_judge(ifeval_id, kwargs)
                if reason is not None:
                    excluded[reason] += 1
                    continue
                judge = _judge(registry, ifeval_id, kwargs, row["prompt"], text)
                ours = _ours(ifeval_id, kwargs, row["prompt"], text)
                total[ifeval_id] += 1
                if judge == ours:
                    agree[ifeval_id] += 1
                else:
                    disagreements.append({"key": row["key"], "instruction": ifeval_id,
                                          "kwargs": {a: b for a, b in kwargs.items() if b is not None},
                                          "judge": judge, "ours": ours, "response": text[:300]})
    pairs = sum(total.values())
    return {
        "agreement": round(sum(agree.values()) / pairs, 4) if pairs else 1.0,
        "pairs": pairs,
        "n_prompts": len(rows),
        "per_instruction": {i: {"agreement": round(agree[i] / total[i], 4), "pairs": total[i]} for i in sorted(total)},
        "excluded_pairs": dict(excluded),
        "n_disagreements": len(disagreements),
        "disagreements": disagreements,
        "judge_fallbacks": JUDGE_FALLBACKS,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every 3rd prompt (a fixed sample)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args(argv)
    rows = load(args.data)
    if args.quick:
        rows = rows[::3]
    if args.limit is not None:
        rows = rows[: args.limit]
    print(json.dumps(run(rows), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
