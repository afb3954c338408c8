"""Block heights as a Fenwick tree: append, change one height, and find the block at a line,
each in O(log n), so appending a row costs the same at 100 rows as at 100,000."""

from __future__ import annotations

import itertools


class Heights:
    def __init__(self, heights: list[int] | None = None) -> None:
        self._values: list[int] = []
        self._tree: list[int] = [0]  # 1-based
        self.total = 0
        if heights:
            self.rebuild(heights)

    def __len__(self) -> int:
        return len(self._values)

    def rebuild(self, heights: list[int]) -> None:
        """O(n) construction (after a prepend or a change of width)."""
        self._values = list(heights)
        # tree[i] is the sum of values (i - lowbit(i), i]: a difference of two prefix sums.
        prefix = [0, *itertools.accumulate(self._values)]
        self._tree = [0, *(prefix[i] - prefix[i & (i - 1)] for i in range(1, len(prefix)))]
        self.total = prefix[-1]

    def append(self, height: int) -> None:
        self._values.append(height)
        i = len(self._values)
        # tree[i] covers (i - lowbit(i), i]: the new value plus the sums of its sub-ranges.
        value = height
        low = i & -i
        k = 1
        while k < low:
            value += self._tree[i - k]
            k <<= 1
        self._tree.append(value)
        self.total += height

    def values(self) -> list[int]:
        """Every height, in order (a copy)."""
        return list(self._values)

    def get(self, index: int) -> int:
        return self._values[index]

    def set(self, index: int, height: int) -> int:
        """Change one block's height; returns the change."""
        delta = height - self._values[index]
        if delta:
            self._values[index] = height
            i = index + 1
            n = len(self._values)
            while i <= n:
                self._tree[i] += delta
                i += i & -i
            self.total += delta
        return delta

    def offset(self, index: int) -> int:
        """The first line of block `index` (the sum of the heights before it)."""
        total = 0
        i = index
        while i > 0:
            total += self._tree[i]
            i -= i & -i
        return total

    def find(self, y: int) -> int:
        """The block that holds line `y` (clamped to the first and last block)."""
        n = len(self._values)
        if n == 0:
            return 0
        if y < 0:
            return 0
        pos, rest = 0, y
        step = 1 << n.bit_length()
        while step:
            nxt = pos + step
            if nxt <= n and self._tree[nxt] <= rest:
                pos = nxt
                rest -= self._tree[nxt]
            step >>= 1
        return min(pos, n - 1)
