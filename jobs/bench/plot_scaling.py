"""Plot ``jobs.bench.spark_scaling``'s JSON lines: rows/s against tasks × max_concurrency, one line per sink delay.

``python -m jobs.bench.plot_scaling jobs/bench/results/spark_scaling.jsonl jobs/bench/results/spark_scaling.png``

Drawn with Pillow (no plotting library needed); the x axis is logarithmic (1 to 128 requests in flight),
and each delay's round-trip bound (in flight × batch / round trip) is the thin line beside the measure (the best
of the cells with the same number in flight is plotted).
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from collections import defaultdict

__all__ = ["main"]

WIDTH, HEIGHT, MARGIN = 900, 560, 80
COLOURS = {20.0: (31, 119, 180), 80.0: (214, 39, 40)}
BATCH = 500


def main(argv: list[str] | None = None) -> None:
    from PIL import Image, ImageDraw

    source, target = (argv or sys.argv[1:])[:2]
    with open(source) as lines:
        cells = [json.loads(line) for line in lines if line.strip()]
    series: dict[float, dict[int, float]] = defaultdict(dict)
    for cell in cells:
        in_flight = cell["tasks"] * cell["concurrency"]
        rate = cell["rows"] / cell["wall_s"]
        series[cell["delay_ms"]][in_flight] = max(rate, series[cell["delay_ms"]].get(in_flight, 0.0))
    top = 120_000.0
    image = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(image)

    def point(in_flight: float, rate: float) -> tuple[float, float]:
        x = MARGIN + (WIDTH - 2 * MARGIN) * math.log2(in_flight) / 7  # 1 .. 128
        y = HEIGHT - MARGIN - (HEIGHT - 2 * MARGIN) * min(rate, top) / top
        return x, y

    draw.line([point(1, 0), point(128, 0)], fill="black")
    draw.line([point(1, 0), point(1, top)], fill="black")
    for k in range(8):
        x, y = point(2**k, 0)
        draw.text((x - 6, y + 8), str(2**k), fill="black")
    for rate in range(0, int(top) + 1, 20_000):
        x, y = point(1, rate)
        draw.text((x - 60, y - 6), f"{rate:,}", fill="black")
        draw.line([point(1, rate), point(128, rate)], fill=(230, 230, 230))
    draw.text(
        (WIDTH / 2 - 150, HEIGHT - 40),
        "requests in flight (tasks x max_concurrency), batch 500",
        fill="black",
    )
    draw.text(
        (MARGIN, 20),
        "Spark writer, 2 workers on 2 cores: rows/s (thick) and the round-trip bound (thin)",
        fill="black",
    )
    for n, (delay, points) in enumerate(sorted(series.items())):
        colour = COLOURS.get(delay, (0, 0, 0))
        xs = sorted(points)
        draw.line([point(x, points[x]) for x in xs], fill=colour, width=3)
        for x in xs:
            px, py = point(x, points[x])
            draw.ellipse([px - 4, py - 4, px + 4, py + 4], fill=colour)
        bound = [point(x, x * BATCH / (delay / 1000)) for x in xs]
        for a, b in itertools.pairwise(bound):
            draw.line([a, b], fill=colour, width=1)
        draw.text((WIDTH - 2 * MARGIN, 60 + 18 * n), f"sink {delay:.0f} ms", fill=colour)
    image.save(target)


if __name__ == "__main__":
    main()
