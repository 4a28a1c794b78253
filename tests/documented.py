"""The program the docs teach (docs/getting-started.md), read from the page so tests run what readers copy."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO

# The page and section that show a program of one's own, and the README's section showing the same.
PAGE = REPO / "docs" / "getting-started.md"
SECTION = "## Your first graph in your own program"
README_SECTION = "## Use it from your own Pulumi program"


def section(path: Path, heading: str) -> str:
    """The text of `heading`'s section, up to the next second-level heading or the end."""
    text = path.read_text()
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


def program_in(text: str) -> str:
    """The one Python block of `text`."""
    (program,) = re.findall(r"```python\n(.*?)```", text, re.S)
    return str(program)


def documented_program() -> str:
    return program_in(section(PAGE, SECTION))
