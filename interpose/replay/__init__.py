"""Replaying recorded traffic through another stack: what would a new policy change?

An audit log written with recording on (``AuditLog.attach(pipe, record_args=True)``,
``[observers.audit] record_args = true``) holds a ``call_recorded`` event per call: the
arguments as the agent sent them, what the tool got, the outcome and, optionally, the
result.  ``replay`` feeds each recorded call, in order, through a candidate pipeline --
the tool is never run: a stand-in answers with the recorded result -- and compares the
candidate's decision with the recorded one:

- ``allowed -> blocked``: the candidate refuses (blocks, denies, aborts) a call that
  the recorded run let through; the regression a policy change must not bring by
  surprise (``interpose replay`` exits 1);
- ``blocked -> allowed``: the reverse;
- ``now blocked by <rule>``: still refused, by another rule;
- ``args rewritten`` / ``result rewritten`` / ``request rewritten`` / ``response
  rewritten`` / ``message rewritten`` / ``params rewritten``: the call goes through,
  changed differently;
- ``status changed``: anything else (ok -> responded, ...).

Each change is attributed to the rules (registration ids) that made the candidate's
decision: the blocker, the responder, the handlers that rewrote (the candidate runs with
a probe in place of a tracer, which reads each handler's decision as spans would).
What shadow registrations of the candidate would have done is reported too.

Logs are read robustly: blank lines and events of kinds this version does not know are
skipped; a line that is not a JSON object, or an event whose fields have the wrong
types, is an error naming the file and line (a log cut short by a crash ends in such a
line).  A log from the Redis consumer (``interpose audit --redis``) has the same
format.

Logs are streamed: ``LogReader`` reads one line at a time and the replay runs each call
as it is read, so memory holds the report (the changed calls, or every call when asked
for), never the log.

The modules, one concern each: ``_log`` (reading logs: ``LogReader``, ``read_log``,
``LogError``), ``_run`` (the candidate and the replay itself: ``build_candidate``,
``replay``, ``replay_files``, ``ReplayError``), ``_probe`` (the decision probe the
candidate traces to), ``_report`` (``CallDiff``, ``ReplayReport``, ``render``,
``describe_call``).  ``interpose replay``'s command line is ``interpose.cli.replay``.
"""

from ._log import LogError, LogReader, RecordedCall, RecordedLog, read_log
from ._report import CALLED_WIDTH as CALLED_WIDTH
from ._report import CallDiff, ReplayReport, describe_call
from ._report import Outcome as Outcome
from ._report import render as render
from ._run import NOT_RECORDED as NOT_RECORDED
from ._run import REFUSED as REFUSED
from ._run import ReplayError, build_candidate, replay, replay_files

__all__ = [
    "CallDiff",
    "LogError",
    "LogReader",
    "RecordedCall",
    "RecordedLog",
    "ReplayError",
    "ReplayReport",
    "build_candidate",
    "describe_call",
    "read_log",
    "replay",
    "replay_files",
]
