"""The layer order is enforced: api -> render -> reconcile -> components; render stays pure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_import_contracts_are_kept(repo: Path) -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(lint)], cwd=repo, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "3 kept, 0 broken" in out.stdout
