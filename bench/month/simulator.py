#!/usr/bin/env python3
"""A simulated OpenAI-compatible chat endpoint for the month benchmark, on 127.0.0.1.

Usage: simulator.py [--port 0] [--latency-ms 20] [--fault-rate 10] [--stall-secs 6]
                    [--port-file FILE]

It answers `POST /v1/chat/completions` deterministically for every stage of the build and
serves its counters at `GET /stats` (JSON). Which stage a request belongs to is read from the
request itself — the JSON schema it sends (`response_format.json_schema.schema`,
`response_format.schema` or `guided_json`) and the prompt text — through one table, `STAGES`,
the only place that knows the stages: each row is (name, detector, answer). A schema-bound
answer is then made to satisfy the schema that was sent (`conform`): required properties
filled, unknown ones dropped, arrays padded or cut to `minItems`/`maxItems`, strings to
`minLength`/`maxLength`, enums respected, so a changed schema still gets a valid object.

What it answers (the truth lives in month_lib): rewrites that keep the task, the sections
and the tests (the method of a LeetCode starter is renamed); test batches returned unchanged;
the reference solution of a problem whose tests were rewritten (month_lib's correct Python
program) and its adaptation (the same program with the renamed method);
four distractors as long as the statement with Input/Output/Constraints sections; summaries
of ~70 words; queries of ~20 plain words without single-letter variables; and per language a
program that is correct, wrong, slow, crashing or not compiling as `month_lib.outcome` plants.

Faults: the first attempt of a request whose hash falls under `--fault-rate` percent gets one
of: 429 with `Retry-After: 1`, 500, 503, a stall (headers and half the body, then silence for
`--stall-secs`), a truncated body (the connection closed half-way through `Content-Length`)
or a malformed body (200 with broken JSON). Its retry is answered normally.
"""
import argparse
import hashlib
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import month_lib as lib  # noqa: E402

# Language names as prompts write them ("Python 3", "C++17", "Java 17", "Go", "Ruby"), by prefix.
LANGUAGE_NAMES = {"python": "python", "c++": "cpp", "cpp": "cpp", "java": "java", "golang": "go", "go": "go", "ruby": "ruby"}
FAULTS = ["429", "500", "503", "stall", "truncated", "malformed"]


# ---------------------------------------------------------------------------------------------
# Reading a request

class Ask:
    """One chat request, with what the stages need from it."""

    def __init__(self, body: dict):
        self.body = body
        self.model = body.get("model", "")
        msgs = body.get("messages") or []
        self.system = "\n".join(m.get("content", "") for m in msgs if m.get("role") == "system")
        self.user = "\n".join(m.get("content", "") for m in msgs if m.get("role") == "user")
        rf = body.get("response_format") or {}
        self.schema = (rf.get("json_schema") or {}).get("schema") or rf.get("schema") or body.get("guided_json")
        self.props = set((self.schema or {}).get("properties", {}).keys())

    def title(self) -> str:
        m = re.search(r"^Title: *(.*)$", self.user, re.M)
        return m.group(1).strip() if m else ""

    def qid(self) -> str:
        m = re.search(r"\bm\d{5}\b", self.title()) or re.search(r"\bm\d{5}\b", self.user)
        return m.group(0) if m else "m00000"

    def template(self) -> str:
        return lib.template_of(int(self.qid()[1:]))

    def section(self, name: str) -> str:
        """Text after a `Name:` line up to the next blank-line-separated known header."""
        m = re.search(rf"^{name}:\n(.*?)(?:\n\n(?:Starter code|Title|Answer with|Rewritten statement|The \d+ test cases)\b|\Z)", self.user, re.M | re.S)
        return m.group(1) if m else ""

    def words_in_statement(self) -> int:
        return len(self.section("Statement").split())


# ---------------------------------------------------------------------------------------------
# The stage table: (name, detector, answer). An answer is a dict (JSON stages: conformed to
# the schema sent, then serialised) or a string (text stages).

def rewrite(a: Ask):
    qid, template = a.qid(), a.template()
    t = lib.TEMPLATES[template]
    statement = f"{lib.story(qid + 'rewrite', 90)}\n\n{t['task']}\n\n{t['sections']}"
    starter = t["starter"].format(m=t["renamed"]) if t["kind"] == "functional" else ""
    return {"title": f"{lib.story(qid + 'rtitle', 3).rstrip('.')} {qid}", "statement": statement, "starter_code": starter}


def rewrite_tests(a: Ask):
    m = re.search(r"objects:\n(.*)\n\nAnswer with", a.user, re.S)
    tests = json.loads(m.group(1)) if m else []
    return {"tests": [{"input": t["input"], "output": t["output"]} for t in tests]}


def distract(a: Ask):
    qid, n = a.qid(), max(a.words_in_statement(), 60)
    out = {}
    for kind in ["operation_type", "optimisation_objective", "algorithmic_approach", "problem_domain"]:
        body = lib.story(qid + kind, n)
        out[kind] = (f"{body}\n\nInput\n\nThe input gives a count and then that many values of the {kind.replace('_', ' ')} story.\n\n"
                     f"Output\n\nPrint the single value the story asks for.\n\nConstraints\n\n1 <= count <= 200000")
    return out


def queries(a: Ask):
    m = re.search(r"Write (\d+) different", a.user)
    count = int(m.group(1)) if m else 3
    base = lib.TEMPLATES[a.template()]["query"]
    tails = ["for a coding interview", "with a short example program", "that runs in linear time",
             "explained step by step", "for competitive programming practice", "with clean readable code"]
    # Words of this problem's story, so that two problems of one template never share a query
    # (the release gate `duplicate_texts` refuses that); a language the prompt names is named too.
    r = lib.rng("query", a.qid())
    story = f"in the {r.choice(lib.ADJS)} {r.choice(lib.NOUNS)} {r.choice(lib.NOUNS)} setting"
    lang = re.search(r"\b(Python|C\+\+|Java|Go|Ruby)\b", a.user)
    lang = f" written in {lang.group(1)}" if lang else ""
    return {"queries": [f"{base} {story} {tails[i % len(tails)]}{lang}" for i in range(count)]}


def abbreviate(a: Ask):
    t = lib.TEMPLATES[a.template()]
    return f"{lib.story(a.qid() + 'summary', 60)} {t['task']} The input may hold up to a million values, so the work must be linear."


def generate(a: Ask):
    m = re.search(r"Solve the problem below in ([^\n]+?)\.?$", a.user, re.M)
    named = (m.group(1) if m else "python").strip().lower()
    language = next((v for k, v in LANGUAGE_NAMES.items() if re.match(rf"{re.escape(k)}\b|{re.escape(k)}\d", named)), "python")
    qid, template = a.qid(), a.template()
    # The method as the skeleton names it: Python's starter, or the skeleton rendered for the
    # language (Ruby's `def snake_name(`, Go's `func name(`, a C++/Java method `name(...) {`).
    starter = a.section("Starter code")
    method = (re.search(r"def\s+([A-Za-z_]\w*)\s*\(\s*self", starter) or re.search(r"^def\s+([A-Za-z_]\w*)\s*\(", starter, re.M)
              or re.search(r"^func\s+([A-Za-z_]\w*)\s*\(", starter, re.M) or re.search(r"([A-Za-z_]\w*)\s*\([^()]*\)\s*\{", starter))
    method = method.group(1) if method else lib.TEMPLATES[template].get("renamed", "")
    outcome = lib.outcome(f"lcb_{qid}", a.model, language)
    what = "The solution implements the skeleton." if lib.TEMPLATES[template]["kind"] == "functional" else "The program reads the input, computes the answer and prints it."
    # The tag names the model too: two models never write the same program (the release gate
    # `self_retrieval` refuses a code2code query that is its own positive document).
    return f"{what}\n<code>\n{lib.solution(template, language, outcome, method, f'{qid} {a.model}')}</code>"


def reference(a: Ask):
    # The month's reference solution of the original problem (its method keeps its name).
    template = a.template()
    method = lib.TEMPLATES[template].get("method", "")
    return f"A reference program.\n<code>\n{lib.solution(template, 'python', 'correct', method, a.qid())}</code>"


def adapt_reference(a: Ask):
    # The month's rewrites keep the task: the same program, with the renamed method.
    template = a.template()
    method = re.search(r"def\s+([A-Za-z_]\w*)\s*\(\s*self", a.section("Rewritten starter code"))
    method = method.group(1) if method else lib.TEMPLATES[template].get("renamed", "")
    return f"<code>\n{lib.solution(template, 'python', 'correct', method, a.qid())}</code>"


STAGES = [
    ("rewrite_tests", lambda a: "tests" in a.props or "adapt test cases" in a.system, rewrite_tests),
    ("reference", lambda a: "this program is the reference" in a.user, reference),
    ("adapt_reference", lambda a: "You adapt a program" in a.system, adapt_reference),
    ("rewrite", lambda a: {"title", "statement"} <= a.props or "Rewrite the problem below" in a.user, rewrite),
    ("distract", lambda a: "operation_type" in a.props or "hard negatives" in a.system, distract),
    ("queries", lambda a: "queries" in a.props or "search queries" in a.user, queries),
    ("generate", lambda a: "<code>" in a.user, generate),
    ("abbreviate", lambda a: "ummar" in a.user, abbreviate),
]


def stage_of(a: Ask):
    for name, detect, answer in STAGES:
        if detect(a):
            return name, answer
    return "unknown", lambda a: "An answer."


# ---------------------------------------------------------------------------------------------
# Schema conformance

def filler(path: str) -> str:
    return "a plain answer written for the field " + path.strip("/").replace("/", " ")


def conform(schema, value, path=""):
    """`value` changed as little as possible to satisfy `schema` (the subset coreb checks)."""
    if not isinstance(schema, dict):
        return value
    if "enum" in schema:
        return value if value in schema["enum"] else schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        if isinstance(value, str):
            # A text where the schema wants an object: it goes into the object's main string
            # field (one named like text/query/statement, else the first string one).
            strings = [k for k, v in props.items() if v.get("type") == "string"]
            main = next((k for k in strings if any(w in k for w in ("text", "query", "statement", "content"))), strings[0] if strings else None)
            value = {main: value} if main else {}
        value = value if isinstance(value, dict) else {}
        out = {}
        for k, v in value.items():
            if k in props:
                out[k] = conform(props[k], v, f"{path}/{k}")
            elif schema.get("additionalProperties", True) is not False:
                out[k] = v
        for k in schema.get("required", []):
            if k not in out:
                out[k] = conform(props.get(k, {}), None, f"{path}/{k}")
        return out
    if kind == "array":
        value = list(value) if isinstance(value, list) else []
        items = schema.get("items", {})
        value = [conform(items, v, f"{path}/{i}") for i, v in enumerate(value)]
        while len(value) < schema.get("minItems", 0):
            value.append(conform(items, None, f"{path}/{len(value)}") if items.get("type") != "string" else f"{filler(path)} number {len(value) + 1}")
        if "maxItems" in schema:
            value = value[: schema["maxItems"]]
        return value
    if kind == "string":
        value = value if isinstance(value, str) else filler(path)
        while len(value) < schema.get("minLength", 0):
            value += " " + filler(path)
        if "maxLength" in schema:
            value = value[: schema["maxLength"]]
        return value
    if kind in ("integer", "number"):
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
    if kind == "boolean":
        return value if isinstance(value, bool) else False
    return value


def answer_text(a: Ask):
    name, answer = stage_of(a)
    out = answer(a)
    if isinstance(out, dict) or a.schema:
        out = json.dumps(conform(a.schema, out) if a.schema else out)
    return name, out


# ---------------------------------------------------------------------------------------------
# Server

class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.attempts = {}
        self.answered = set()
        self.stats = {}

    def count(self, stage, what):
        with self.lock:
            s = self.stats.setdefault(stage, {"requests": 0, "answered": 0, "distinct_answered": 0, "faults": {}})
            if what == "request":
                s["requests"] += 1
            elif what == "answered":
                s["answered"] += 1
            elif what == "distinct":
                s["distinct_answered"] += 1
            else:
                s["faults"][what] = s["faults"].get(what, 0) + 1


def make_handler(state: State):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send(self, status, body: bytes, headers=(), sent=None, stall=0.0):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers:
                self.send_header(k, v)
            if sent is not None:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body if sent is None else body[:sent])
            self.wfile.flush()
            if sent is not None:
                if stall:
                    time.sleep(stall)
                self.close_connection = True

        def do_GET(self):
            if self.path.rstrip("/").endswith("/stats"):
                with state.lock:
                    self.send(200, json.dumps(state.stats, sort_keys=True).encode())
            else:
                self.send(404, b'{"error": "not found"}')

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                self.send(400, b'{"error": {"message": "body is not JSON"}}')
                return
            a = Ask(body)
            stage, text = answer_text(a)
            state.count(stage, "request")
            key = hashlib.sha256(raw).hexdigest()
            with state.lock:
                attempt = state.attempts.get(key, 0)
                state.attempts[key] = attempt + 1
            time.sleep(state.args.latency_ms / 1000)
            reply = {
                "id": "sim-" + key[:12], "object": "chat.completion", "model": a.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": len(a.user) // 4, "completion_tokens": len(text) // 4, "total_tokens": (len(a.user) + len(text)) // 4},
            }
            payload = json.dumps(reply).encode()
            h = int(key[:8], 16)
            if attempt == 0 and h % 100 < state.args.fault_rate:
                fault = FAULTS[(h // 100) % len(FAULTS)]
                state.count(stage, fault)
                if fault == "429":
                    self.send(429, b'{"error": {"message": "rate limited"}}', [("Retry-After", "1")])
                elif fault in ("500", "503"):
                    self.send(int(fault), b'{"error": {"message": "server error"}}')
                elif fault == "stall":
                    self.send(200, payload, sent=len(payload) // 2, stall=state.args.stall_secs)
                elif fault == "truncated":
                    self.send(200, payload, sent=len(payload) // 2)
                else:
                    self.send(200, payload[: len(payload) // 2].replace(b"\\", b"") + b"}}", sent=None)
                return
            state.count(stage, "answered")
            with state.lock:
                new = key not in state.answered
                state.answered.add(key)
            if new:
                state.count(stage, "distinct")
            self.send(200, payload)

    return Handler


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--latency-ms", type=float, default=20)
    p.add_argument("--fault-rate", type=int, default=10, help="percent of first attempts that get a fault")
    p.add_argument("--stall-secs", type=float, default=6)
    p.add_argument("--port-file", help="write the bound port here once listening")
    args = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(State(args)))
    server.daemon_threads = True
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, args.port_file)
    print(f"simulated endpoint on http://127.0.0.1:{port}/v1", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
