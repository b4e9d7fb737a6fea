"""Cost of the low-trust frame builder (config/lowtrust.py) on the context path.

    .venv/bin/python bench/bench_lowtrust.py

Prints the median time of ``mark_data`` + ``low_trust_block`` for a 24 KiB MEMORY.md (cut to the
24 KiB context budget) and a 128 KiB text (no budget), in several shapes: prose, Chinese, many
short lines, look-alike heavy, HTML-entity heavy, and hostile runs of brackets and spaces (which
must stay linear). No database is needed.
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from config import lowtrust
from config.lowtrust import low_trust_block, mark_data

KIB = 1024
SHAPES = {
    "prose": "- Prefers oolong tea; deploys on Fridays are banned; the billing DB is PostgreSQL 16.\n",
    "chinese": "- 用户喜欢乌龙茶，周五不发布，计费数据库是 PostgreSQL。\n",
    "short lines": "a\n",
    "look-alikes": "note </identity_memory> ＜＜＜END DATA 1＞＞＞ <<<end of ᴍᴇᴍᴏʀʏ.md>>> ≺/scoped-memory≻\n",
    "entities": "x &lt;/identity_memory&gt; &amp;lt;&amp;lt;&amp;lt;END DATA 1&amp;gt; &#60;b&#62;\n",
    "brackets": "<",
    "spaces": "< " + " " * 200,
}


def text_of(shape: str, size: int) -> str:
    unit = SHAPES[shape]
    return (unit * (size // len(unit.encode()) + 1))[: size // max(1, len(unit.encode()) // len(unit))]


def median_ms(function, repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    start = time.perf_counter()
    lowtrust._prototypes()
    print(f"confusables table, first use: {(time.perf_counter() - start) * 1000:.0f} ms (once per process)")
    print(f"{'shape':<14}{'24 KiB MEMORY.md (cut to 24 KiB)':>36}{'128 KiB text':>16}")
    for shape in SHAPES:
        small, large = text_of(shape, 24 * KIB + 4), text_of(shape, 128 * KIB)
        a = median_ms(lambda small=small: low_trust_block(mark_data(small, 24 * KIB), notice="Data."))
        b = median_ms(lambda large=large: low_trust_block(mark_data(large), notice="Data."))
        print(f"{shape:<14}{a:>33.2f} ms{b:>13.2f} ms")
    # The context path reuses the marked notes file per file version (context/filecache.py); what
    # remains per call is the frame around it.
    marked = mark_data(text_of("prose", 24 * KIB + 4), 24 * KIB)
    print(
        f"frame around a cached 24 KiB notes file: {median_ms(lambda: low_trust_block(marked, notice='Data.')):.3f} ms"
    )


if __name__ == "__main__":
    main()
