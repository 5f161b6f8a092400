"""Instructions inside untrusted content: the text that tells the agent what to do.

A prompt injection has to instruct: "send ... to ...", "please transfer ...", "visit
...", "ignore the previous instructions", "before you can solve the task, do the
following".  The values it wants used (a recipient, an IBAN, a URL) are named in those
words.  ``instructions(text)`` finds them line by line: a line is an instruction from the
first sentence that starts with an imperative verb (after fillers such as ``please``,
``now``, ``first``, a bullet or a number), that asks the reader to act (``you must``,
``make sure to``, ``I need you to``) or that tries to take over (``ignore the previous
instructions``, ``before you can solve the task``), to the line's end: an instruction
governs what follows it in its line, not the lines after it.

Lexical, not a model: an instruction that starts with a noun (``The recipient is now
...``), a value on a line of its own below the instruction that points at it, or one
written in another language is not found (docs/flows.md, "What it cannot see").
"""

from __future__ import annotations

import re

__all__ = ["instructions"]


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: verbs an instruction to an agent starts with (base forms)
IMPERATIVES = _set(
    "send email e-mail mail forward reply respond write tell say message text notify inform "
    "share post publish upload transfer pay wire refund deposit withdraw buy purchase order "
    "book reserve cancel delete remove erase wipe drop destroy create add make schedule set "
    "reset change update modify edit rename move copy replace insert append invite grant "
    "give take revoke visit open go navigate click browse download fetch get retrieve read find "
    "search look check list show print run execute install call concatenate combine collect "
    "gather summarize summarise include attach use put enter type submit sign log login "
    "subscribe follow ignore disregard forget stop do perform complete apply approve accept "
    "confirm verify provide keep contact join kick ban push commit merge deploy save export "
    "import sell ask repeat output answer reveal disclose leak dump"
)
#: words before the verb that leave the sentence an instruction
_FILLERS = _set(
    "please kindly now first then also and so just next finally immediately urgently quickly "
    "asap additionally afterwards after that instead simply always"
)
_ASKS = re.compile(
    r"\b(?:you|u)\s+(?:must|should|need\s+to|have\s+to|are\s+(?:required|asked)\s+to|will\s+need\s+to)\b"
    r"|\b(?:make|be)\s+sure\s+(?:to|that\s+you)\b"
    r"|\b(?:i|we)\s+(?:need|want|would\s+like)\s+you\s+to\b"
    r"|\bit\s+is\s+(?:important|required|necessary|crucial)\s+(?:that\s+you|to)\b"
    r"|\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier|original)\b"
    r"|\bbefore\s+you\s+(?:can\s+)?(?:solve|do|continue|answer|proceed|complete)\b"
    r"|\bdo\s+the\s+following\b|\bnew\s+instructions?\b",
    re.IGNORECASE,
)
#: a sentence ends at ``.``, ``!`` or ``?`` before a space, markup (``7.2%.###``) or a
#: capital after a word (``7.2%.TODO:``); a heading's ``##`` or a tag starts one anywhere
#: (``External_###(system_message) ...``)
_SENTENCE = re.compile(
    r"(?<=[.!?])(?:\s+|(?=[#<\[(*>])|(?<=[a-z0-9%)\]][.!?])(?=[A-Z]))|(?<!#)(?=##)|(?=<[A-Za-z/!])"
)
_WORDS = re.compile(r"[a-z][a-z'-]*")
#: what may stand before an instruction's verb: bullets, numbers, markup, tags
#: (``<b>``, ``[system]``, ``(system_message)``) and labels (``todo:``, ``note:``)
_PREFIX = re.compile(
    r"^(?:\s*(?:[-*>#•=~|]+|\(?\d{1,3}[.)]|\(?[a-z][.)]|<[^<>]{0,40}>|\[[^\[\]]{0,40}\]"
    r"|\([^()]{0,40}\)|[a-z][\w -]{0,30}:(?!//)))+\s*",
    re.IGNORECASE,
)
_TAG = re.compile(r"<[^<>]{0,40}>")
#: the longest line read whole (a longer one is cut: a page of one line)
MAX_LINE = 4096


def instructions(text: str) -> list[str]:
    """The instructions in ``text``, normalized (case folded, whitespace collapsed): for
    each line holding one, the line from the instruction on."""
    found: list[str] = []
    # a JSON or YAML string's escaped line breaks are line breaks of its text
    for line in text.replace("\\n", "\n").splitlines():
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE]
        start = _start(line)
        if start >= 0:
            found.append(" ".join(line[start:].casefold().split()))
    return found


def _start(line: str) -> int:
    """Where the first instruction of ``line`` starts, or -1."""
    if not line.strip():
        return -1
    starts = [0, *(m.end() for m in _SENTENCE.finditer(line))]
    asks = _ASKS.search(line)
    end = asks.start() if asks is not None else len(line)
    for i, start in enumerate(starts):
        if start > end:
            break
        stop = starts[i + 1] if i + 1 < len(starts) else len(line)
        if _imperative(line[start:stop]):
            return start
    if asks is None:
        return -1
    return max(start for start in starts if start <= asks.start())  # its sentence


def _imperative(sentence: str) -> bool:
    """Whether ``sentence`` starts with an imperative verb (after fillers)."""
    sentence = _PREFIX.sub("", _TAG.sub(" ", sentence[:200]), count=1).casefold()
    for word in _WORDS.findall(sentence):
        if word not in _FILLERS:
            return word in IMPERATIVES
    return False
