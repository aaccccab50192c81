"""A vectorised generator of ListOps trees (the LRA task), written from the task's description.

Each node at depth < ``max_depth`` (the root has depth 1) is an operator with probability
``operator_probability``, else a digit 0-9; an operator is one of MIN, MAX, MED, SM and takes
2..``max_args`` arguments. A tree's length counts its operators, digits and closing brackets
(one token each); a tree is kept when ``min_length < length < max_length``; its value: ``evaluate``.

Trees are grown a whole forest at a time, one depth level per step, with numpy: a chunk draws
``num_roots`` roots from its own generator (seeded by ``(seed, chunk)``), stops expanding a tree
as soon as its token count reaches ``max_length``, then lays the kept trees out in prefix order
and evaluates them bottom-up. A chunk depends only on the seed and the chunk index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Token ids (0 is padding); the same vocabulary as the LRA files after dropping "(" and ")".
VOCAB = ("<pad>", "[MIN", "[MAX", "[MED", "[SM", "]", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
FIRST_OPERATOR = VOCAB.index("[MIN")
NUM_OPERATORS = 4  # MIN, MAX, MED, SM, in this order from FIRST_OPERATOR
CLOSE = VOCAB.index("]")
FIRST_DIGIT = VOCAB.index("0")


@dataclass(frozen=True)
class TreeShape:
    """The generator's parameters (defaults: the LRA ListOps task)."""

    max_depth: int = 10
    max_args: int = 10
    min_length: int = 500  # exclusive
    max_length: int = 2000  # exclusive
    operator_probability: float = 0.25

    def __post_init__(self) -> None:
        if self.max_depth < 2:
            raise ValueError(
                f"max_depth must be >= 2 (a root operator needs digits below it), got {self.max_depth}"
            )
        if self.max_args < 2:
            raise ValueError(f"max_args must be >= 2, got {self.max_args}")
        if self.min_length < 0 or self.max_length < max(5, self.min_length + 2):
            raise ValueError(
                "lengths are exclusive bounds: need 0 <= min_length, min_length + 2 <= max_length and "
                f"max_length >= 5 (the shortest operator tree has 4 tokens), "
                f"got min_length={self.min_length}, max_length={self.max_length}"
            )
        if not 0.0 < self.operator_probability < 1.0:
            raise ValueError(f"operator_probability must be in (0, 1), got {self.operator_probability}")


@dataclass
class Level:
    """The nodes of one depth level of a forest, children grouped by parent in parent order.

    tree: (n,) index of each node's tree; token: (n,) token id; num_args: (n,) argument count
    (0 for digits); parent: (n,) index of the parent in the level above (-1 for roots).
    """

    tree: np.ndarray
    token: np.ndarray
    num_args: np.ndarray
    parent: np.ndarray

    def select(self, keep: np.ndarray, parent_index: np.ndarray | None) -> Level:
        """The nodes where ``keep``; ``parent_index`` maps old parent indices to new ones."""
        parent = self.parent[keep] if parent_index is None else parent_index[self.parent[keep]]
        return Level(self.tree[keep], self.token[keep], self.num_args[keep], parent)


def grow_forest(rng: np.random.Generator, num_roots: int, shape: TreeShape) -> tuple[list[Level], np.ndarray]:
    """Grow ``num_roots`` random trees level by level.

    Returns the levels (depth 1 first) and each tree's token count (num_roots,); a tree whose
    count reached ``max_length`` stops growing, so its count is only a lower bound.
    """
    p = shape.operator_probability
    levels: list[Level] = []
    tree = np.arange(num_roots)
    parent = np.full(num_roots, -1)
    counts = np.zeros(num_roots, dtype=np.int64)
    alive = np.ones(num_roots, dtype=bool)
    for depth in range(1, shape.max_depth + 1):
        # One uniform per node decides operator-or-digit and, conditionally, which one.
        u = rng.random(len(tree))
        q = p if depth < shape.max_depth else 0.0
        is_operator = u < q
        operator = np.minimum((u / p * NUM_OPERATORS).astype(np.int64), NUM_OPERATORS - 1)
        digit = np.minimum(((u - q) / (1 - q) * 10).astype(np.int64), 9)
        token = np.where(is_operator, FIRST_OPERATOR + operator, FIRST_DIGIT + digit)
        num_args = np.zeros(len(tree), dtype=np.int64)
        num_args[is_operator] = rng.integers(2, shape.max_args + 1, int(is_operator.sum()))
        # An operator costs two tokens: itself and its closing bracket.
        counts += np.bincount(tree, weights=1 + is_operator, minlength=num_roots).astype(np.int64)
        alive &= counts < shape.max_length
        levels.append(Level(tree, token, num_args, parent))
        expand = np.flatnonzero(is_operator & alive[tree])
        if len(expand) == 0:
            break
        parent = np.repeat(expand, num_args[expand])
        tree = tree[parent]
    return levels, counts


def keep_trees(levels: list[Level], keep: np.ndarray) -> list[Level]:
    """The levels restricted to the trees where ``keep`` (num_roots,), renumbered 0..kept-1."""
    tree_index = np.cumsum(keep) - 1
    kept: list[Level] = []
    parent_index = None
    for level in levels:
        mask = keep[level.tree]
        if not mask.any():
            break
        new = level.select(mask, parent_index)
        new.tree = tree_index[new.tree]
        kept.append(new)
        parent_index = np.cumsum(mask) - 1
    return kept


def subtree_sizes(levels: list[Level]) -> list[np.ndarray]:
    """Token count of each node's subtree (digit 1, operator 2 + its arguments'), per level."""
    sizes: list[np.ndarray] = [np.ones(0)] * len(levels)
    below = None
    for index in range(len(levels) - 1, -1, -1):
        level = levels[index]
        size = np.ones(len(level.token), dtype=np.int64)
        if below is not None:
            child_sum = np.bincount(levels[index + 1].parent, weights=below, minlength=len(size))
            size += np.where(level.num_args > 0, 1 + child_sum.astype(np.int64), 0)
        sizes[index] = below = size
    return sizes


def lay_out(levels: list[Level], num_trees: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Prefix-order token rows of the trees: tokens (num_trees, width) uint8, lengths (num_trees,)."""
    sizes = subtree_sizes(levels)
    tokens = np.zeros((num_trees, width), dtype=np.uint8)
    position = np.zeros(len(levels[0].token), dtype=np.int64)  # roots start their rows
    for index, level in enumerate(levels):
        tokens[level.tree, position] = level.token
        operators = level.num_args > 0
        tokens[level.tree[operators], position[operators] + sizes[index][operators] - 1] = CLOSE
        if index + 1 < len(levels):
            # A child starts after its parent's operator token and its earlier siblings.
            child = levels[index + 1]
            size = sizes[index + 1]
            before = np.cumsum(size) - size
            count = level.num_args[operators]
            first_sibling = np.repeat(np.cumsum(count) - count, count)
            position = position[child.parent] + 1 + before - before[first_sibling]
    return tokens, sizes[0]


def evaluate(levels: list[Level]) -> np.ndarray:
    """The value 0..9 of each tree (num_trees,), computed bottom-up.

    MIN / MAX of the arguments; SM = sum mod 10; MED = the median as LRA computes it,
    ``int(numpy.median(args))``: the middle argument for an odd count, and for an even count the
    mean of the two middle arguments truncated to an integer (e.g. MED of 3 and 4 is 3)."""
    below = None
    for index in range(len(levels) - 1, -1, -1):
        level = levels[index]
        value = level.token - FIRST_DIGIT
        operators = np.flatnonzero(level.num_args > 0)
        if len(operators):
            args, parent = below, levels[index + 1].parent
            count = level.num_args[operators]
            start = np.cumsum(count) - count
            # Arguments sorted within each operator: sort (parent, value) keys, values are < 16.
            ordered = np.sort(parent * 16 + args) & 15
            middle = start + count // 2
            odd = count % 2 == 1
            median = np.where(odd, ordered[middle], (ordered[middle - 1] + ordered[middle]) // 2)
            results = np.stack(
                [
                    np.minimum.reduceat(args, start),
                    np.maximum.reduceat(args, start),
                    median,
                    np.add.reduceat(args, start) % 10,
                ]
            )
            which = level.token[operators] - FIRST_OPERATOR
            value[operators] = results[which, np.arange(len(operators))]
        below = value
    return below


def generate_chunk(
    seed: int, chunk: int, num_roots: int, shape: TreeShape
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kept trees of one chunk: tokens (n, max_length - 1) uint8, lengths (n,), labels (n,)."""
    rng = np.random.default_rng([seed, chunk])
    levels, counts = grow_forest(rng, num_roots, shape)
    keep = (counts > shape.min_length) & (counts < shape.max_length)
    num_trees = int(keep.sum())
    if num_trees == 0:
        empty = np.zeros(0, dtype=np.int64)
        return np.zeros((0, shape.max_length - 1), dtype=np.uint8), empty, empty
    levels = keep_trees(levels, keep)
    tokens, lengths = lay_out(levels, num_trees, shape.max_length - 1)
    return tokens, lengths, evaluate(levels).astype(np.int64)
