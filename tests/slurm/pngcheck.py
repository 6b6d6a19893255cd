#!/usr/bin/python3
"""pngcheck.py FILE: decode a PNG with the standard library only (chunks,
CRCs, zlib, scanline filters) and print "WIDTHxHEIGHT COLOURS": the
image's size and how many distinct pixel values it has. Exit 1 (with the
reason) when the file is not a PNG that decodes. Used by tests/slurm/usage.sh
to check that the usage chart is a real, non-blank image."""
import struct, sys, zlib

def fail(msg):
    print("pngcheck: " + msg)
    sys.exit(1)

data = open(sys.argv[1], "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    fail("no PNG signature")
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    if pos + 8 > len(data):
        fail("truncated chunk header")
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    crc = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]
    if zlib.crc32(kind + body) & 0xffffffff != crc:
        fail("bad CRC in chunk %r" % kind)
    if kind == b"IHDR":
        ihdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    elif kind == b"IEND":
        break
    pos += 12 + n
if ihdr is None:
    fail("no IHDR")
w, h, depth, ctype, _, _, interlace = ihdr
if depth != 8 or interlace != 0 or ctype not in (0, 2, 4, 6):
    fail("unsupported layout depth=%d type=%d interlace=%d" % (depth, ctype, interlace))
bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
raw = zlib.decompress(idat)
stride = w * bpp
if len(raw) != h * (stride + 1):
    fail("image data is %d bytes, want %d" % (len(raw), h * (stride + 1)))
prev = bytearray(stride)
colours = set()
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1:
            line[i] = (line[i] + a) & 255
        elif f == 2:
            line[i] = (line[i] + b) & 255
        elif f == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif f != 0:
            fail("bad filter %d on line %d" % (f, y))
    if y % 2 == 0:
        for x in range(0, stride, bpp * 2):
            colours.add(bytes(line[x:x + bpp]))
    prev = line
print("%dx%d %d" % (w, h, len(colours)))
