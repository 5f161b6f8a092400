"""Rule family ``databases``: commands that destroy a database or its tables.

Rule ``database-destruction`` (``ask`` by default: a person confirms; see
:mod:`.decisions`):

- ``dropdb``; ``mysqladmin drop``; ``bq rm``.
- SQL that drops a database, schema, table or keyspace, truncates a table or deletes
  every row (``DELETE FROM t`` with no ``WHERE``), handed to a client: ``psql -c``,
  ``mysql -e``/``mariadb -e``, ``sqlite3 DB 'SQL'``/``-cmd``, ``duckdb -c``,
  ``clickhouse-client -q``, ``cockroach sql -e``, ``cqlsh -e``, ``sqlcmd -Q``, ``snowsql
  -q``, ``bq query``, or fed to its stdin by a here-string, a here-document or a pipe from
  text the guard can compute (``echo 'DROP TABLE t' | psql``).
- ``redis-cli FLUSHALL``/``FLUSHDB`` (as arguments or on stdin).
- ``mongosh``/``mongo --eval`` (or stdin) calling ``dropDatabase()``, a collection's
  ``drop()``, or ``deleteMany({})``/``remove({})``.

Queries (``psql -c 'select 1'``, ``redis-cli GET k``) pass; so does a script file
(``psql -f x.sql``: its text is on disk, see the package's known limits).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..shell import Word
from .cloud import flags, positionals
from .invocation import Invocation
from .model import Finding
from .options import word_set
from .paths import show
from .run import PipelineRule, Rule, Run
from .text import pipe_stream

RULE = "database-destruction"

_SQL = re.compile(
    r"\bdrop\s+(?:database|schema|table|keyspace)\b"
    r"|\btruncate\s+(?:table\s+)?[\w\"`.]"
    r"|\bdelete\s+from\s+[\w\"`.]+\s*(?:;|$)",
    re.IGNORECASE,
)
_LITERAL = re.compile(r"'(?:[^']|'')*'")
"""A SQL string literal: its text is data (``select 'drop table'``)."""
_REDIS = re.compile(r"\bflush(?:all|db)\b", re.IGNORECASE)
_MONGO = re.compile(
    r"\bdropDatabase\s*\(|\.drop\s*\(\s*\)|\b(?:deleteMany|remove)\s*\(\s*\{\s*\}\s*\)"
)

_SQL_OPTIONS = {
    "psql": word_set("-c --command"),
    "mysql": word_set("-e --execute"),
    "mariadb": word_set("-e --execute"),
    "sqlite3": word_set("-cmd"),
    "duckdb": word_set("-c -cmd"),
    "clickhouse-client": word_set("-q --query"),
    "cockroach": word_set("-e --execute"),
    "cqlsh": word_set("-e --execute"),
    "sqlcmd": word_set("-Q -q"),
    "snowsql": word_set("-q --query"),
}
"""The options of each SQL client whose value is SQL it runs."""
_SQL_OPERANDS = word_set("sqlite3 duckdb bq")  # SQL as an operand (after the database)
_CLIENTS = {
    **dict.fromkeys(_SQL_OPTIONS, _SQL),
    "bq": _SQL,
    "redis-cli": _REDIS,
    "mongosh": _MONGO,
    "mongo": _MONGO,
}
"""What each client reads from its stdin that destroys."""


def _finding(inv: Invocation, text: str, what: str) -> Finding:
    shown = show(text)[:80]
    return Finding(RULE, shown, f"{inv.shown} runs {shown!r}, which {what}")


def _option_texts(args: Sequence[Word], names: frozenset[str]) -> list[str]:
    """The values of ``names`` (``-c SQL``, ``--command=SQL``, ``-eSQL``)."""
    texts: list[str] = []
    for k, word in enumerate(args):
        text = word.text
        name, eq, value = text.partition("=")
        if text in names and k + 1 < len(args):
            texts.append(args[k + 1].text)
        elif eq and name in names and name.startswith("--"):
            texts.append(value)
        elif len(text) > 2 and text[:2] in names and not text.startswith("--"):
            texts.append(text[2:])
    return texts


def _fed(inv: Invocation) -> list[str]:
    """The here-string or here-document bodies ``inv`` reads."""
    out = []
    for r in inv.redirects:
        if r.op == "<<<":
            out.append(r.target.text)
        elif r.op in ("<<", "<<-") and r.heredoc is not None:
            out.append(r.heredoc.text)
    return out


def _rule_sql(inv: Invocation, run: Run) -> Finding | None:
    texts = _option_texts(inv.args, _SQL_OPTIONS.get(inv.name, frozenset()))
    if inv.name in _SQL_OPERANDS:
        texts += positionals(inv, word_set("-cmd -c --project_id --location"))[1:]
    if inv.name == "cockroach" and positionals(inv, frozenset())[:1] != ["sql"]:
        texts = []
    for text in [*texts, *_fed(inv)]:
        if _SQL.search(_LITERAL.sub("''", text)):
            return _finding(inv, text, "drops or empties data")
    return None


def _rule_dropdb(inv: Invocation, run: Run) -> Finding | None:
    if flags(inv) & {"--help", "-?", "-V", "--version"}:
        return None
    return Finding(RULE, inv.snippet(), f"{inv.snippet()!r} drops a database")


def _rule_mysqladmin(inv: Invocation, run: Run) -> Finding | None:
    if "drop" in positionals(inv, word_set("-u -p -h -P -S --user --host --port")):
        return Finding(RULE, inv.snippet(), f"{inv.snippet()!r} drops a database")
    return None


def _rule_bq(inv: Invocation, run: Run) -> Finding | None:
    if positionals(inv, word_set("--project_id --location --dataset_id"))[:1] == ["rm"]:
        return Finding(RULE, inv.snippet(), f"{inv.snippet()!r} deletes a dataset or table")
    return _rule_sql(inv, run) if "query" in positionals(inv, frozenset()) else None


def _rule_redis(inv: Invocation, run: Run) -> Finding | None:
    for text in [*(w.text for w in inv.args), *_fed(inv)]:
        if _REDIS.fullmatch(text.strip()) or (" " in text and _REDIS.search(text)):
            return _finding(inv, text, "deletes every key")
    return None


def _rule_mongo(inv: Invocation, run: Run) -> Finding | None:
    for text in [*_option_texts(inv.args, word_set("--eval")), *_fed(inv)]:
        if _MONGO.search(text):
            return _finding(inv, text, "drops a database or a collection's documents")
    return None


def _piped(stages: Sequence[Sequence[Invocation | None]], run: Run) -> Finding | None:
    """``echo 'DROP TABLE t' | psql``: text the guard computes, piped into a client."""
    for k in range(1, len(stages)):
        stage = stages[k]
        if len(stage) != 1 or stage[0] is None:
            continue
        inv = stage[0]
        pattern = _CLIENTS.get(inv.name)
        if pattern is None:
            continue
        for reading in pipe_stream(stages[:k]).readings:
            text = reading.decode("utf-8", "replace")
            if pattern.search(_LITERAL.sub("''", text) if pattern is _SQL else text):
                return _finding(inv, text, "drops or empties data")
    return None


def _table() -> dict[str, tuple[Rule, ...]]:
    rules: dict[str, tuple[Rule, ...]] = dict.fromkeys(_SQL_OPTIONS, (_rule_sql,))
    rules.update(
        {
            "dropdb": (_rule_dropdb,),
            "mysqladmin": (_rule_mysqladmin,),
            "bq": (_rule_bq,),
            "redis-cli": (_rule_redis,),
            "mongosh": (_rule_mongo,),
            "mongo": (_rule_mongo,),
        }
    )
    return rules


RULES: dict[str, tuple[Rule, ...]] = _table()
PIPELINES: tuple[PipelineRule, ...] = (_piped,)
