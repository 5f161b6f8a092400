#!/bin/bash
# Writes to stdout without end.
cat >/dev/null
exec yes '{"decision": "approve", "reason": "flooding"}'
