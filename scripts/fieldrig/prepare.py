"""Writes the rig's checkpoint once: config.json (Hugging Face DeepseekV3
form) and random, seeded safetensors shards.

  python3 scripts/fieldrig/prepare.py --preset kimi-scaled --out DIR [--device cuda]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import modelcfg  # noqa: E402
import weights  # noqa: E402


def main(argv):
    ap = argparse.ArgumentParser(prog="fieldrig-prepare")
    ap.add_argument("--preset", choices=sorted(modelcfg.PRESETS), default="kimi-scaled")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shard-gib", type=float, default=1.0)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where the random numbers are drawn")
    ap.add_argument("--config-only", action="store_true", help="write config.json alone (for profdeck micro)")
    a = ap.parse_args(argv)
    c = modelcfg.hf_config(a.preset)
    if a.config_only:
        os.makedirs(a.out, exist_ok=True)
        import json
        with open(os.path.join(a.out, "config.json"), "w") as f:
            json.dump(c, f, indent=2)
        return 0
    import torch
    weights.write(torch, c, a.out, seed=a.seed, shard_bytes=int(a.shard_gib * 2**30), device=a.device,
                  log=lambda m: print("fieldrig-prepare: " + m, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
