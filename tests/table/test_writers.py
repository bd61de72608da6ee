"""Who is writing: a writer's record, and whether its process is known to be gone."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

from evonb.table.writers import _process_start, writer_gone, writer_info


def test_this_process_is_recorded_and_is_not_gone():
    me = writer_info()
    assert me["pid"] == os.getpid() and me["host"] == socket.gethostname()
    assert me["pid_start"] is not None  # read from /proc on Linux
    assert writer_gone(me) is False


def test_a_forked_child_records_its_own_process_not_its_parents():
    parent = writer_info()  # this process's start time, now cached
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own record, through the pipe
        os.write(write_end, json.dumps(writer_info()).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        child = json.loads(fh.read())
    try:
        assert child["pid"] == pid != parent["pid"]
        # read while the child is still a zombie, so /proc still has it
        assert child["pid_start"] == _process_start(pid) is not None
        assert child["pid_start"] != parent["pid_start"]
    finally:
        os.waitpid(pid, 0)


def test_a_finished_process_is_gone_and_a_reused_pid_too():
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    pid = int(child.stdout)
    assert writer_gone({"host": socket.gethostname(), "pid": pid}) is True
    # our pid with another start time: the recorded process ended and the pid was reused
    assert writer_gone({**writer_info(), "pid_start": "1"}) is True


def test_unknown_writers_and_other_hosts_are_never_taken_as_gone():
    assert writer_gone(None) is False
    assert writer_gone({"host": socket.gethostname(), "pid": "x"}) is False
    assert writer_gone({"host": socket.gethostname() + "-other", "pid": 1}) is False
