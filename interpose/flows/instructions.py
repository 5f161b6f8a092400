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
    r"|\bdo\s+the\s+following\b|\bnew\s+instructions?\b"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORDS = re.compile(r"[a-z][a-z'-]*")
_BULLET = re.compile(r"^\s*(?:[-*>#•]+|\(?\d{1,3}[.)]|\(?[a-z][.)])\s*")
#: the longest line read whole (a longer one is cut: a page of one line)
MAX_LINE = 4096


def instructions(text: str) -> list[str]:
    """The instructions in ``text``, normalized (case folded, whitespace collapsed): for
    each line holding one, the line from the instruction on."""
    found: list[str] = []
    # a JSON or YAML string's escaped line breaks are line breaks of its text
    for line in text.casefold().replace("\\n", "\n").splitlines():
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE]
        start = _start(line)
        if start >= 0:
            found.append(" ".join(line[start:].split()))
    return found


def _start(line: str) -> int:
    """Where the first instruction of ``line`` starts, or -1."""
    if not line.strip():
        return -1
    asks = _ASKS.search(line)
    end = asks.start() if asks is not None else len(line)
    pos = 0
    for sentence in _SENTENCE.split(line):
        if pos > end:
            break
        if _imperative(sentence):
            return line.find(sentence, pos)
        pos += len(sentence) + 1
    if asks is None:
        return -1
    # from the start of the sentence that holds it
    return max(line.rfind(". ", 0, asks.start()) + 2, 0) if ". " in line[: asks.start()] else 0


def _imperative(sentence: str) -> bool:
    """Whether ``sentence`` starts with an imperative verb (after fillers)."""
    sentence = _BULLET.sub("", sentence, count=1)
    for match in _WORDS.finditer(sentence[:200]):
        word = match.group()
        if word in _FILLERS:
            continue
        # ``read: false``, ``post: ...``: a label, not a verb
        return word in IMPERATIVES and not sentence.startswith(":", match.end())
    return False
