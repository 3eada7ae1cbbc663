# A stand-in for `vllm serve` in profdeck's lifecycle tests: it prints a
# current-format vLLM startup log to stdout (shard bar with \r updates),
# answers GET /health 503 while "loading" and 200 once ready, and exits on
# SIGTERM. Usage: fake_vllm.py PORT LOAD_SECONDS [vllm flags...]
import http.server
import os
import signal
import sys
import threading
import time

port, load_s = int(sys.argv[1]), float(sys.argv[2])
ready = threading.Event()


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 200 if ready.is_set() and self.path == "/health" else 503
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def log(proc, msg):
    print(f"({proc} pid={os.getpid()}) INFO 11-29 10:00:00 [fake.py:1] {msg}", flush=True)


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Health)
threading.Thread(target=srv.serve_forever, daemon=True).start()
log("APIServer", "vLLM API server version 0.21.1")
if "--profiler-config" in sys.argv or os.environ.get("VLLM_TORCH_PROFILER_DIR"):
    log("APIServer", "Profiler with mode 'torch' is enabled in the API server. This should ONLY be used for local development!")
log("Worker_TP0", "Starting to load model fake/model...")
shards = 4
for i in range(shards + 1):
    sys.stdout.write(f"\rLoading safetensors checkpoint shards: {100 * i // shards:3d}% Completed | {i}/{shards} [00:0{i}<00:0{shards - i}, {load_s / shards:.2f}s/it]\n")
    sys.stdout.flush()
    time.sleep(load_s / shards)
log("Worker_TP0", f"Model loading took 1.5000 GiB memory and {load_s:.1f} seconds")
log("EngineCore", "GPU KV cache size: 4,096 tokens")
ready.set()
log("APIServer", f"Starting vLLM server on http://127.0.0.1:{port}")
while True:
    time.sleep(1)
