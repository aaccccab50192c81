"""Snakes of paddles grown one paddle at a time on an occupancy mask, as the original generator does.

The *occupancy mask* of an image is the maximum of the masks of the paddles placed so far (see
``shapes``), with the image's ``padding`` border set to 1; pixels outside the image never count (the
original cut everything to the image). A snake's first paddle: ``_distractor_starts`` (seeding) and
``_seed_pairs``; each next one: ``extend``; the two main snakes: ``main_pairs``; ``distractors``.

For speed, attempts are grown in lockstep with numpy: main pairs in batches per image and the
distractors of many images. Random numbers come from each image's own buffer (``Draws``), so an
image does not depend on which other images share its batch.
"""

from __future__ import annotations

import numpy as np

from data_prep.pathfinder.attempts import LAST_BATCH, Attempts, Draws, Snake, choose
from data_prep.pathfinder.layout import FREE, SEED_KEYS, Layout, starts
from data_prep.pathfinder.settings import DISTRACTOR_TRIES, PADDLE_TRIES

CROWDED = 1.8  # a paddle's mask plus the occupancy mask must stay below this
MIN_FREE_SHARE = 0.01  # distractors stop seeding when less of the image is free
DEAD_END = 1e-4  # candidate heads whose weights sum to less than this: the snake is stuck
FIRST_BATCH = 16  # main pairs an image tries at once; doubled after a batch without success, to LAST_BATCH
PAIR_BATCHES = 64  # batches an image tries before giving up (the original tries forever)
PROPOSALS = 8  # random pixels tried as a distractor's start before listing all free ones
MAX_CELLS = 1 << 22  # attempts * canvas pixels grown at once, at most (memory), but one image's batch


def occupy(layout: Layout, masks: np.ndarray, rows: np.ndarray, starts: np.ndarray, keys: np.ndarray) -> None:
    """Add the masks of paddles (``starts``, ``keys`` (r,)) to ``masks[rows]`` ((B, W * W), rows (r,)),
    cut to the image as the original does."""
    pixels = starts + layout.mask_offsets[:, keys]  # (m, r)
    cells = pixels + rows * masks.shape[1]
    flat = masks.reshape(-1)
    flat[cells] = np.maximum(flat[cells], layout.mask_values[:, keys] * layout.inside[pixels])


def _fits(layout: Layout, flat: np.ndarray, cells: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Whether paddles ``keys`` starting at flat mask cells ``cells`` (same shape) keep the sum of
    their mask and the occupancy mask ``flat`` below ``CROWDED`` everywhere: bool, that shape."""
    return (flat[cells + layout.mask_offsets[:, keys]] + layout.mask_values[:, keys]).max(axis=0) < CROWDED


def extend(draws: Draws, layout: Layout, attempts: Attempts, snake: int) -> None:
    """Add one paddle to snake ``snake`` of every live attempt; an attempt whose snake finds no head
    fails.

    The pivot moves by ``length + 2 margin`` along the snake's last paddle and each candidate head
    around it (``PaddleSet.steps``) is weighed by ``1 - mask`` (the mask grown by a disc of the
    margin) times ``cos²(min(turn * continuity, 90°))``; a drawn head is kept when the new paddle's
    mask plus the occupancy mask stays below ``CROWDED`` everywhere (``PADDLE_TRIES`` draws). The
    occupancy mask takes a paddle when the next one is placed, so a paddle is checked against every
    earlier paddle but the one just before it on its own snake; a snake's last paddle joins the mask
    when the snake is complete. The tries at a head are drawn at once, and the first that fits is
    kept, as trying them one by one would. Arrays are laid out (candidates, attempts) so that sums
    and maxima run over the first axis, which numpy does fast."""
    live, last = attempts.live, attempts.placed - 1
    keys = attempts.keys[live, snake, last]
    pivots = np.ceil(attempts.pivots[live, snake] + layout.advance[keys]).astype(np.intp)
    centres = layout.index(pivots)  # (A,)
    flat, base = attempts.masks.reshape(-1), live * attempts.masks.shape[1]
    crowding = flat[layout.step_near + (centres + base)].max(axis=0)  # (n, A)
    heads = layout.shapes.step_offsets[:, None] + centres
    weights = layout.inside[heads] * np.subtract(1.0, crowding, dtype=np.float64) * layout.turn[:, keys]
    cumulative = np.cumsum(weights, axis=0)
    total = cumulative[-1]
    stuck = total < DEAD_END
    # Draws just below the total land on a weighted head; a stuck attempt draws the pivot (unused).
    scaled = draws.take(attempts.owners[live], PADDLE_TRIES).T * np.where(stuck, -1.0, total * (1 - 2**-40))
    choice = (cumulative[:, None, :] <= scaled).view(np.int8).sum(axis=0, dtype=np.intp)  # (T, A)
    columns = np.arange(len(live))
    new_heads = np.where(stuck, centres, heads[choice, columns])
    new_keys = choice + SEED_KEYS
    fits = np.zeros(choice.shape, dtype=bool)
    fits[0] = _fits(layout, flat, new_heads[0] + base, new_keys[0]) & ~stuck
    again = np.flatnonzero(~fits[0] & ~stuck)  # most first tries fit: test the others only here
    fits[1:, again] = _fits(layout, flat, new_heads[1:, again] + base[again], new_keys[1:, again])
    found = fits.any(axis=0)
    pick = np.argmax(fits[:, found], axis=0)
    done = live[found]
    occupy(layout, attempts.masks, done, attempts.starts[done, snake, last], keys[found])
    attempts.starts[done, snake, last + 1] = new_heads[pick, columns[found]]
    attempts.keys[done, snake, last + 1] = new_keys[pick, columns[found]]
    attempts.pivots[done, snake] = pivots[found]
    attempts.live = done


def grow(draws: Draws, layout: Layout, attempts: Attempts, length: int) -> None:
    """Extend the snakes of the live attempts in turn, one paddle each, until they have ``length``."""
    while attempts.placed < length and len(attempts.live):
        for snake in range(attempts.starts.shape[1]):
            extend(draws, layout, attempts, snake)
        attempts.placed += 1


def _first_decisive(outcome: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``outcome`` (B, T) (0: try again, 1: success, 2: give up), whether the first
    decisive try succeeded (B,) bool, and its index (B,)."""
    decisive = np.argmax(outcome > 0, axis=1)
    return outcome[np.arange(len(outcome)), decisive] == 1, decisive


def _place_first(
    layout: Layout, attempts: Attempts, snake: int, points: np.ndarray, keys: np.ndarray
) -> None:
    """Start snake ``snake`` of every attempt with a first paddle at ``points`` (B, 2) with ``keys`` (B,)."""
    attempts.starts[:, snake, 0] = layout.index(points)
    attempts.keys[:, snake, 0] = keys
    attempts.pivots[:, snake] = layout.first_pivots(points, keys)


def _seed_pairs(draws: Draws, layout: Layout, attempts: Attempts) -> None:
    """The first paddles of both main snakes of every attempt (``main_pairs``), seeded as
    ``_distractor_starts`` says, the first in the middle band."""
    rows, tries = np.arange(len(attempts.owners)), PADDLE_TRIES
    numbers = draws.take(attempts.owners, 4 * tries)
    # A blocked first key restarts the pair, as does every failure before the paddle is placed, so
    # the kept first paddle is a draw among the open keys: made here directly.
    keys = layout.seed_open[choose(numbers[:, :tries], len(layout.seed_open))]
    available = layout.centre_count[keys]
    picks = layout.centre_first[keys] + choose(numbers[:, tries : 2 * tries], np.maximum(available, 1))
    outcome = np.where(available == 0, 2, layout.centre_inside[picks])
    first_ok, tried = _first_decisive(outcome)
    origins, first_keys = layout.centre_starts[picks[rows, tried]], keys[rows, tried]

    second_keys = choose(numbers[:, 2 * tries : 3 * tries], SEED_KEYS)
    directions = choose(numbers[:, 3 * tries :], 360)
    seconds = np.round(origins[:, None, :] + layout.beside[directions]).astype(np.intp)
    second_ok, tried = _first_decisive(layout.first_paddle_fits(seconds, second_keys).astype(np.intp))
    _place_first(layout, attempts, 0, origins, first_keys)
    _place_first(layout, attempts, 1, seconds[rows, tried], second_keys[rows, tried])
    attempts.live = np.flatnonzero(first_ok & second_ok)


def _try_pairs(draws: Draws, layout: Layout, images: np.ndarray, batch: int, contour_length: int) -> dict:
    """``batch`` pairs for each of ``images`` in lockstep: {image: (occupancy mask (W * W,), pair)}
    for those where one succeeded."""
    owners = np.repeat(images, batch)
    attempts = Attempts.start(owners, 2, contour_length, np.tile(layout.empty.ravel(), (len(owners), 1)))
    _seed_pairs(draws, layout, attempts)
    grow(draws, layout, attempts, contour_length)
    images, winners = attempts.first_live()
    # As in the original, only the second snake's last paddle joins the mask.
    last_starts, last_keys = attempts.starts[winners, 1, -1], attempts.keys[winners, 1, -1]
    occupy(layout, attempts.masks, winners, last_starts, last_keys)
    pairs = zip(images, winners, strict=True)
    return {int(image): (attempts.masks[row], attempts.snakes(row)) for image, row in pairs}


def main_pairs(draws: Draws, layout: Layout, contour_length: int) -> tuple[np.ndarray, list[list[Snake]]]:
    """For each image (one per generator of ``draws``): the two main snakes of ``contour_length``
    paddles and the occupancy mask they leave, (I, W * W).

    The two start ``seed_distance`` apart: the first in the middle of the image (its band is
    ``2 seed_distance`` wide), the second at a random whole-degree direction from it, unchecked
    against the mask; they grow one paddle each in turn, and any failure starts the pair over. As in
    the original, the first main snake's last paddle never joins the mask, so distractors may come
    close to it. Pairs are tried in batches per image (16, 32, ... until one succeeds; the first
    success is what trying them one by one would keep)."""
    count = len(draws.rngs)
    masks = np.empty((count, layout.width**2), dtype=layout.empty.dtype)
    pairs: list[list[Snake]] = [[] for _ in range(count)]
    pending, batch = np.arange(count), FIRST_BATCH
    for _ in range(PAIR_BATCHES):
        per_group = max(1, MAX_CELLS // (batch * layout.width**2))
        for group in np.array_split(pending, -(-len(pending) // per_group)):
            for image, (mask, pair) in _try_pairs(draws, layout, group, batch, contour_length).items():
                masks[image], pairs[image] = mask, pair
        pending = np.array([image for image in pending if not pairs[image]], dtype=np.intp)
        if not len(pending):
            return masks, pairs
        batch = min(2 * batch, LAST_BATCH)
    raise RuntimeError(f"no two main paths of {contour_length} paddles fit in {PAIR_BATCHES} batches")


def _distractor_starts(draws: Draws, layout: Layout, attempts: Attempts) -> None:
    """The first paddle of every attempt's distractor, anywhere free (band 1).

    Seeding a snake draws its first paddle's angle (a whole degree); an angle whose seed kernel (its
    fully-on mask pixels, one pixel off, as the original's dilation kernel) lies wholly outside the
    image from some pixel fails at once (``Layout.seed_blocked``: the original's OpenCV dilation
    pads with -DBL_MAX and a negative mask means "no free start"; 330 of 360 angles at 32 px).
    Otherwise a start is drawn uniformly among those where every kernel pixel in the image is free
    (mask ≤ 0.3) and out of a band along the edges; a start whose paddle end or pivot falls outside
    the image is drawn again (``PADDLE_TRIES`` in all). Distractors also fail when less than
    ``MIN_FREE_SHARE`` of the image is free. A start is drawn among ``PROPOSALS`` random pixels (the
    first free one is a uniform draw among the free starts), or among all free starts when none is."""
    count, size, tries = len(attempts.owners), layout.size, PADDLE_TRIES
    masks = attempts.masks
    inner = masks.reshape(count, layout.width, layout.width)[(slice(None), *layout.inner)]
    status = np.where((inner <= FREE).mean(axis=(1, 2)) < MIN_FREE_SHARE, 2, 0)  # 1: seeded, 2: failed
    numbers = draws.take(attempts.owners, tries * (PROPOSALS + 2)).reshape(count, tries, PROPOSALS + 2)
    points = np.zeros((count, 2), dtype=np.intp)
    keys = np.zeros(count, dtype=np.intp)
    inside = layout.inside > 0
    for trial in range(tries):
        todo = np.flatnonzero(status == 0)
        keys[todo] = choose(numbers[todo, trial, 0], SEED_KEYS)
        status[todo[layout.seed_blocked[keys[todo]]]] = 2  # no start at all (``blocked``)
        todo = todo[status[todo] == 0]
        pixels = np.stack(np.divmod(choose(numbers[todo, trial, 1:-1], size * size), size), axis=-1)
        cells = layout.index(pixels)[:, :, None] + layout.seed_kernels[keys[todo]][:, None, :]
        stored = masks.reshape(-1)[cells + (todo * masks.shape[1])[:, None, None]]
        free = ~(inside[cells] & ((stored > FREE) | layout.edge[cells])).any(axis=2)  # (t, P)
        has_free = free.any(axis=1)
        points[todo] = pixels[np.arange(len(todo)), np.argmax(free, axis=1)]
        for row in todo[~has_free]:
            found = starts(masks[row].reshape(layout.empty.shape), layout, layout.paddles[keys[row]], band=1)
            if len(found) == 0:
                status[row] = 2
            else:
                points[row] = found[choose(numbers[row, trial, -1], len(found))]
        todo = todo[status[todo] == 0]
        status[todo[layout.first_paddle_fits(points[todo], keys[todo])]] = 1
    _place_first(layout, attempts, 0, points, keys)
    attempts.live = np.flatnonzero(status == 1)


def distractors(
    draws: Draws, layout: Layout, masks: np.ndarray, count: int, length: int
) -> list[list[Snake]]:
    """For each image, up to ``count`` distractor snakes of ``length`` paddles, added to its
    occupancy mask in ``masks`` (I, W * W), in place. Each starts anywhere free and grows to its
    length; one that fails is dropped after ``DISTRACTOR_TRIES`` tries, and the image keeps as many
    as succeeded."""
    placed: list[list[Snake]] = [[] for _ in draws.rngs]
    for _ in range(count):
        need = np.arange(len(draws.rngs))
        for _ in range(DISTRACTOR_TRIES):
            if not len(need):
                break
            attempts = Attempts.start(need, 1, length, masks[need])
            _distractor_starts(draws, layout, attempts)
            grow(draws, layout, attempts, length)
            done = attempts.live
            occupy(layout, attempts.masks, done, attempts.starts[done, 0, -1], attempts.keys[done, 0, -1])
            for row in done:
                placed[need[row]].append(attempts.snakes(row)[0])
            masks[need[done]] = attempts.masks[done]
            need = np.delete(need, done)
    return placed
