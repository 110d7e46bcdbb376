// Pixel statistics of a PNG screenshot (python3's standard library decodes it): how much of it
// is not background, and how many pixels carry the colours the report uses for bars, epoch spans
// and the first channel's line. Shared by the HTML report and the page's browser tests.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace epochcast::testing {

// Decodes an 8-bit RGB/RGBA PNG with the standard library only and reports pixel statistics,
// including how many pixels carry the colours the report uses for bars and epoch spans.
inline constexpr const char* kPngStats = R"PY(
import json, struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat, ihdr = 8, b'', None
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR': ihdr = struct.unpack('>IIBBBBB', body)
    if kind == b'IDAT': idat += body
    pos += 12 + n
w, h, depth, ctype = ihdr[0], ihdr[1], ihdr[2], ihdr[3]
assert depth == 8 and ctype in (2, 6), 'unsupported PNG %d/%d' % (depth, ctype)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, rows, i = bytearray(stride), [], 0
for _ in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + ((a + b) >> 1)) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else (b if pb <= pc else c))) & 255
    rows.append(line); prev = line
counts = {}
for line in rows:
    for x in range(0, stride, bpp):
        px = bytes(line[x:x + 3]); counts[px] = counts.get(px, 0) + 1
total = w * h
background = max(counts.values())
def near(rgb):
    return sum(n for px, n in counts.items() if all(abs(px[k] - rgb[k]) <= 6 for k in range(3)))
print(json.dumps({'width': w, 'height': h, 'distinct': len(counts),
                  'non_background_fraction': 1 - background / total,
                  'bar_pixels': near((0x3b, 0x6f, 0xb6)) + near((0x9d, 0xb6, 0xda)),
                  'measured_pixels': near((0x2a, 0x7d, 0x2a)),
                  'line_pixels': near((0x1f, 0x77, 0xb4)),
                  'epoch_span_pixels': near((0xe8, 0xf0, 0xfb)) + near((0xf4, 0xf8, 0xfd))}))
)PY";

// The statistics of `png` (null when python3 fails), using `dir` for the script. With
// EPOCHCAST_SCREENSHOT_DIR set, a copy of the PNG is kept there for a person to look at.
inline nlohmann::json png_stats(const std::filesystem::path& png, const std::filesystem::path& dir) {
  if (const char* keep = std::getenv("EPOCHCAST_SCREENSHOT_DIR")) {
    std::error_code ec;
    std::filesystem::copy_file(png, std::filesystem::path(keep) / png.filename(),
                               std::filesystem::copy_options::overwrite_existing, ec);
  }
  const std::filesystem::path script = dir / "png_stats.py";
  std::ofstream(script) << kPngStats;
  const std::string cmd = "python3 " + script.string() + " " + png.string() + " 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    pclose(p);
  }
  const auto j = nlohmann::json::parse(out, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

}  // namespace epochcast::testing
