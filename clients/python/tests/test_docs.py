"""docs/python.md's examples, run as written (the port made this server's)."""
import os
import re

from typing import Any

import pytest

import navsync
from navsync.pytest_plugin import Navsyncd
from navsync.sync import SyncSession

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "python.md")


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", open(DOC).read(), re.S)


def test_the_qa_script_runs_as_written(navsyncd: Navsyncd, capsys: pytest.CaptureFixture[str]) -> None:
    qa = blocks()[0].replace("7420", str(navsyncd.port))
    exec(compile(qa, "docs/python.md", "exec"), {"__name__": "docs"})
    assert "checkout reached at revision" in capsys.readouterr().out


def test_the_sync_example_and_the_pytest_example(navsyncd: Navsyncd, navsync_session: SyncSession) -> None:
    scope: dict[str, Any] = {}
    exec(compile(blocks()[1], "docs/python.md", "exec"), scope)
    assert scope["show"](navsyncd.url)[-1] == "detail"
    exec(compile(blocks()[3], "docs/python.md", "exec"), scope)
    scope["test_a_deep_link_lands_on_the_product"](navsync_session)
    assert len(blocks()) == 4


def test_the_guarded_flow_ends_on_order_7(navsyncd: Navsyncd, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's orders example through the package: redirected to sign-in, which
    knows where the user was going, and back there once signed in."""
    script = blocks()[2].replace("7420", str(navsyncd.port))
    exec(compile(script, "docs/python.md", "exec"), {"__name__": "docs"})
    assert capsys.readouterr().out.strip() == "['main', 'profile', 'order']"
