"""The book's own pages (book/*.md): figure options that MyST reads as the author meant."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGES = sorted((Path(__file__).resolve().parents[1] / "book").glob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_figure_options_are_one_line_each(page):
    """A directive option continued on an indented next line is not joined by MyST: the rest
    of an ``:alt:`` became the figure's caption (the intro's figure showed "reach 1 by step
    250) and ..." as its caption until 2026-11-22)."""
    text = page.read_text(encoding="utf-8")
    for block in re.findall(r"```\{figure\}.*?```", text, flags=re.S):
        lines = block.splitlines()[1:]
        options = []
        for line in lines:
            if not line.strip():
                break
            options.append(line)
        bad = [line for line in options if not line.startswith(":")]
        assert not bad, f"{page.name}: figure option lines must each start with ':' ({bad[0]!r})"
