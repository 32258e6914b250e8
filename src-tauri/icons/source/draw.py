"""Draws Headroom's app icon (a gauge: a ring open at the bottom around a dot) as a 1024x1024 PNG
with the standard library only. `npx tauri icon` turns it into every size the bundles need:

    python3 src-tauri/icons/source/draw.py src-tauri/icons/source/icon-1024.png
    (cd ui && npx tauri icon ../src-tauri/icons/source/icon-1024.png -o ../src-tauri/icons)
"""

import math
import struct
import sys
import zlib

SIZE = 1024
SS = 4  # samples per axis per pixel
BLUE = (37, 99, 235)


def coverage(x: float, y: float) -> bool:
    c = SIZE / 2
    dx, dy = x - c, y - c
    r = math.hypot(dx, dy) / SIZE
    if r < 0.095:
        return True  # the dot
    if 0.30 <= r <= 0.46:
        # The ring is open in a 80-degree gap around straight down (+y in image coordinates).
        angle = math.degrees(math.atan2(dx, dy))  # 0 = down
        return abs(angle) > 40
    return False


def main(path: str) -> None:
    rows = []
    for py in range(SIZE):
        row = bytearray([0])  # filter: none
        for px in range(SIZE):
            hits = sum(
                coverage(px + (i + 0.5) / SS, py + (j + 0.5) / SS)
                for i in range(SS)
                for j in range(SS)
            )
            alpha = round(255 * hits / (SS * SS))
            row += bytes(BLUE) + bytes([alpha])
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = b"\x89PNG\r\n\x1a\n"
    png += chunk(b"IHDR", struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
    png += chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


if __name__ == "__main__":
    main(sys.argv[1])
