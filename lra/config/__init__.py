"""What a composed config becomes: the typed records each part of a run is built from (``records``).

It imports nothing of ``lra`` outside itself: every other part may import it.
"""
