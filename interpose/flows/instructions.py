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
    "import sell ask repeat output answer reveal disclose leak dump focus report override "
    "act treat consider remember pretend assume recommend classify approve evaluate don't "
    "never"
)
#: words a sentence may open with before a comma and then instruct (``If asked,
#: reply ...``, ``To verify your account, visit ...``)
_CLAUSES = _set("if when whenever once to before after unless should in")
#: words before the verb that leave the sentence an instruction
_FILLERS = _set(
    "please kindly now first then also and so just next finally immediately urgently quickly "
    "asap additionally afterwards after that instead simply always"
)
#: a sentence that asks the reader to act or tries to take over (searched in the
#: case-folded line only when one of ``_ASK_HINTS`` is in it; each branch starts with a
#: letter, so the search skips ahead; a match inside a word is passed over)
_ASKS = re.compile(
    r"(?:you|u)\s+(?:must|should|need\s+to|have\s+to|are\s+(?:required|asked)\s+to"
    r"|will\s+need\s+to)\b"
    r"|(?:make|be)\s+sure\s+(?:to|that\s+you)\b"
    r"|(?:i|we)\s+(?:need|want|would\s+like)\s+you\s+to\b"
    r"|it\s+is\s+(?:important|required|necessary|crucial)\s+(?:that\s+you|to)\b"
    r"|(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:the\s+|your\s+)?"
    r"(?:previous|prior|above|earlier|original)\b"
    r"|before\s+you\s+(?:can\s+)?(?:solve|do|continue|answer|proceed|complete)\b"
    r"|do\s+the\s+following\b|new\s+instructions?\b"
    r"|(?:could|can|would|will)\s+you\s+(?:please\s+|kindly\s+)?(?:"
    + "|".join(sorted(IMPERATIVES, key=len, reverse=True))
    + r")\b"
)
#: words one of which every ``_ASKS`` match holds: the regex runs only near them
_ASK_HINTS = ("you", "sure", "ignore", "disregard", "forget", "following", "instruction", "it is")
#: the most hint occurrences looked at in one line
_MAX_HINTS = 64
#: where a sentence ends: ``.``, ``!`` or ``?`` before a space, markup (``7.2%.###``) or
#: a capital (``7.2%.TODO:``; taken only after a word); the next sentence's first word
_END = re.compile(r"[.!?](?:\s+|(?=[#<\[(*>A-Z]))([A-Za-z][A-Za-z'-]*)?")
#: where a sentence starts anywhere: a heading's ``##``, a tag
_OPEN = re.compile(r"(?<!#)##|<[A-Za-z/!]")
_STARTERS = IMPERATIVES | _FILLERS | _CLAUSES
_FIRST_WORD = re.compile(r"[a-z][a-z'-]*")
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz")
#: what may stand before an instruction's verb: bullets, numbers, markup, tags
#: (``<b>``, ``[system]``, ``(system_message)``) and labels (``todo:``, ``note:``)
_PREFIX = re.compile(
    r"^(?:\s*(?:[-*>#•=~|]+|\(?\d{1,3}[.)]|\(?[a-z][.)]|<[^<>]{0,40}>|\[[^\[\]]{0,40}\]"
    r"|\([^()]{0,40}\)|[a-z][\w -]{0,30}:(?!//)))+\s*"
)
_TAG = re.compile(r"<[^<>]{0,40}>")
_PUNCT = "\"'`*_,;:!?.()[]{}<>"
#: the longest piece of a line read as one: a longer line (a page of one line) is read
#: in pieces cut at a space, each a line of its own
MAX_LINE = 4096


def instructions(text: str) -> list[str]:
    """The instructions in ``text``, normalized (case folded, whitespace collapsed): for
    each line holding one, the line from the instruction on."""
    found: list[str] = []
    # a JSON or YAML string's escaped line breaks are line breaks of its text
    for whole in text.replace("\\n", "\n").splitlines():
        for line in _pieces(whole):
            lower = line.casefold()
            start = _start(line, lower) if len(lower) == len(line) else _start(lower, lower)
            if start >= 0:
                found.append(" ".join(lower[start:].split()))
    return found


def _pieces(line: str) -> list[str]:
    """``line``, or for a line longer than ``MAX_LINE`` its pieces, cut at the last space
    before each limit (or at the limit)."""
    if len(line) <= MAX_LINE:
        return [line]
    pieces = []
    begin = 0
    while len(line) - begin > MAX_LINE:
        cut = line.rfind(" ", begin + MAX_LINE // 2, begin + MAX_LINE)
        end = cut + 1 if cut > 0 else begin + MAX_LINE
        pieces.append(line[begin:end])
        begin = end
    pieces.append(line[begin:])
    return pieces


def _start(line: str, lower: str) -> int:
    """Where the first instruction of the line starts (``lower``: it case-folded, of the
    same length), or -1."""
    if not lower or lower.isspace():
        return -1
    asks = _ask(lower)
    end = asks if asks >= 0 else len(lower)
    starts = _starts(line)
    for i, start in enumerate(starts):
        if start > end:
            break
        first = _FIRST_WORD.match(lower, start)
        if first is not None and lower[first.end() : first.end() + 1] in (" ", ",", ""):
            word = first.group()
            if word in IMPERATIVES:
                return start
            if word not in _FILLERS and word not in _CLAUSES:
                continue  # most sentences: their first word says no
        stop = starts[i + 1] if i + 1 < len(starts) else len(lower)
        if _imperative(lower[start:stop]):
            return start
    if asks < 0:
        return -1
    return _sentence_of(lower, asks, starts)


def _sentence_of(lower: str, at: int, starts: list[int]) -> int:
    """Where the sentence holding position ``at`` starts."""
    cut = max(lower.rfind(". ", 0, at), lower.rfind("! ", 0, at), lower.rfind("? ", 0, at))
    begin = cut + 2 if cut >= 0 else 0
    while begin < at and lower[begin].isspace():
        begin += 1
    return max(begin, max(start for start in starts if start <= at))


def _ask(lower: str) -> int:
    """Where the line asks the reader to act, or -1: ``_ASKS`` searched in a window
    around each hint word."""
    near: list[int] = []
    for hint in _ASK_HINTS:
        at = lower.find(hint)
        while at >= 0 and len(near) < _MAX_HINTS:
            near.append(at)
            at = lower.find(hint, at + 1)
    best = -1
    for at in sorted(near):
        if 0 <= best < at - 32:
            break
        pos = max(at - 32, 0)
        while (match := _ASKS.search(lower, pos, at + 48)) is not None:
            found = match.start()
            if found == 0 or lower[found - 1] not in _WORD_CHARS:
                if best < 0 or found < best:
                    best = found
                break
            pos = found + 1
    return best


def _starts(line: str) -> list[int]:
    """Where the sentences of ``line`` start that may be instructions (``_END``,
    ``_OPEN``): a sentence whose first word is a plain word that neither is a verb of
    ``IMPERATIVES`` nor a filler, nor a label, is left out."""
    starts = [0]
    size = len(line)
    for match in _END.finditer(line):
        word = match.group(1)
        if word is None:
            at = match.end()
            if at < size:
                starts.append(at)
            continue
        after = match.end(1)
        if word.lower() not in _STARTERS and line[after : after + 1] in (" ", ","):
            continue  # most sentences: their first word says no
        at = match.start(1)
        if at == match.start() + 1 and word[0].isupper():  # glued: ``7.2%.TODO``
            before = line[at - 2] if at > 1 else ""
            if not (before.isalnum() or before in "%)]"):
                continue
        starts.append(at)
    if "##" in line or "<" in line:
        starts = sorted({*starts, *(m.start() for m in _OPEN.finditer(line))})
    return starts


def _imperative(sentence: str, clause: bool = True) -> bool:
    """Whether ``sentence`` (case-folded) starts with an imperative verb (after markup,
    labels and fillers, or after an opening clause and its comma)."""
    head = sentence[:200].lstrip()
    if not head:
        return False
    if head[0] in "-*>#•=~|<[(0123456789" or ":" in head[:32] or "<" in head:
        head = _PREFIX.sub("", _TAG.sub(" ", head), count=1)
    for word in head.split(None, 8)[:8]:
        word = word.strip(_PUNCT)
        if not word or word in _FILLERS:
            continue
        if word in IMPERATIVES:
            return True
        comma = head.find(", ")
        return clause and word in _CLAUSES and comma > 0 and _imperative(head[comma + 2 :], False)
    return False
