"""The README stays one screen for a newcomer: under 200 lines, the two set-up commands CI reads, and
every link into docs/ resolving to a page and heading that exist (the site's own links are checked by
`tools/build-docs`, which does not read the README)."""

from __future__ import annotations

import re

from tests.conftest import REPO

README = REPO / "README.md"
# Most lines the README may have.
MAX_LINES = 200
# The set-up block: the main job, then the test command (.ci/run runs the latter).
SETUP_COMMANDS = ["tools/run-local", "tools/run-tests"]


def slug(heading: str) -> str:
    """A heading's anchor as MkDocs' toc extension makes it (ASCII headings)."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"[\s-]+", "-", text).strip("-")


def test_the_readme_is_short() -> None:
    assert len(README.read_text().splitlines()) < MAX_LINES


def test_the_setup_block_holds_exactly_the_two_commands() -> None:
    text = README.read_text()
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", setup, re.S)
    assert [line.split("#")[0].strip() for line in block.splitlines()] == SETUP_COMMANDS


def test_every_link_into_the_docs_resolves() -> None:
    links = re.findall(r"\]\(((?!https?:)[^)#]+)(?:#([^)]+))?\)", README.read_text())
    assert links
    for target, anchor in links:
        path = REPO / target
        assert path.exists(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", path.read_text(), re.M)
            assert anchor in {slug(h) for h in headings}, f"{target}#{anchor}"
