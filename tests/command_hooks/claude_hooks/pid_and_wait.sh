#!/bin/bash
# PostToolUse (async: true): a background job that takes long (a full build).  It says
# it started on the port the project gives it ($BUILD_PORT), and keeps the connection
# open while it runs: the connection closes when it (and its `sleep`) are gone.
cat >/dev/null
exec 3<>"/dev/tcp/127.0.0.1/$BUILD_PORT"
echo "build started" >&3
sleep 30
echo '{"systemMessage": "build finished"}'
