"""``one_line``: a message as one line of bounded width, cut between words.

Every place that shows why a job failed in a table or a list (the sweep's final table, ``python -m
lra.report --progress``, the report's table of failed jobs, a search's last line) cuts its reason
here, so that none of them ends in half a word.
"""

from __future__ import annotations

ELLIPSIS = "…"


def one_line(text: str, width: int) -> str:
    """``text`` with its whitespace (line breaks included) collapsed to single spaces; when longer than
    ``width`` characters, cut after its last whole word that leaves room for ``…`` (less the stop, comma
    or colon that ends it). A first word longer than ``width`` is the one cut inside a word: there is no
    boundary before it."""
    words = " ".join(text.split())
    if len(words) <= width:
        return words
    room = words[: width - len(ELLIPSIS) + 1]  # one more character: a space there ends a whole word
    cut = room.rfind(" ")
    kept = room[:cut] if cut > 0 else room[:-1]
    return kept.rstrip(" ,.;:") + ELLIPSIS
