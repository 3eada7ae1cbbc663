# Summarise a torch.profiler Chrome trace (JSON or gzipped JSON) where it
# lies, streaming it so a trace of hundreds of MB needs little memory, and
# print per-kernel device time as JSON:
#   {"events": N, "kernels": [[name, total_us, calls], ...], "marks": {"CAT\tNAME": n}}
# Device work is every complete ("X") event of category kernel, gpu_memcpy
# or gpu_memset. Usage: python3 - TRACE < summarize_trace.py
import gzip
import json
import sys

DEVICE = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}
# Annotations vLLM records once per engine step (counted, not timed).
STEP_MARKERS = {"gpu_model_runner: forward", "execute_model", "gpu_model_runner: preprocess"}
CHUNK = 1 << 20


def fail(msg):
    print(json.dumps({"error": msg}))
    sys.exit(0)


def open_trace(path):
    f = open(path, "rb")
    magic = f.read(2)
    f.seek(0)
    if magic == b"\x1f\x8b":
        return gzip.open(f, "rt", encoding="utf-8", errors="replace")
    return open(path, "rt", encoding="utf-8", errors="replace")


def events(f):
    dec = json.JSONDecoder()
    buf = ""
    pos = 0
    # Find the start of the events array.
    while True:
        i = buf.find('"traceEvents"', pos)
        if i >= 0:
            j = buf.find("[", i)
            if j >= 0:
                pos = j + 1
                break
        chunk = f.read(CHUNK)
        if not chunk:
            if buf.lstrip().startswith("["):
                pos = buf.index("[") + 1
                break
            fail("no traceEvents array")
        buf += chunk
    while True:
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n,":
                pos += 1
            if pos < len(buf):
                break
            chunk = f.read(CHUNK)
            if not chunk:
                fail("unterminated traceEvents")
            buf, pos = buf[pos:] + chunk, 0
        if buf[pos] == "]":
            return
        while True:
            try:
                ev, end = dec.raw_decode(buf, pos)
                break
            except ValueError:
                chunk = f.read(CHUNK)
                if not chunk:
                    fail("bad event at character %d of the buffer" % pos)
                buf, pos = buf[pos:] + chunk, 0
        pos = end
        if pos > CHUNK:
            buf, pos = buf[pos:], 0
        yield ev


def main():
    if len(sys.argv) != 2:
        fail("usage: python3 - TRACE")
    try:
        f = open_trace(sys.argv[1])
    except OSError as e:
        fail(str(e))
    n = 0
    agg = {}
    marks = {}
    with f:
        for ev in events(f):
            n += 1
            if not isinstance(ev, dict) or ev.get("ph") != "X":
                continue
            if ev.get("name") in STEP_MARKERS:
                key = str(ev.get("cat", "")).lower() + "\t" + ev["name"]
                marks[key] = marks.get(key, 0) + 1
            if str(ev.get("cat", "")).lower() not in DEVICE:
                continue
            try:
                dur = float(ev.get("dur", 0))
            except (TypeError, ValueError):
                continue
            name = str(ev.get("name", ""))
            a = agg.get(name)
            if a is None:
                agg[name] = [dur, 1]
            else:
                a[0] += dur
                a[1] += 1
    print(json.dumps({"events": n, "kernels": [[k, v[0], v[1]] for k, v in agg.items()], "marks": marks}))


main()
