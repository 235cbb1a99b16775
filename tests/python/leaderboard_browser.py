"""Drive the leaderboard page in headless Chromium through its own controls and read it back;
compute the same numbers independently from the results store (pyarrow) and the releases'
MANIFEST.json files. Used by tests/leaderboard.rs.

    leaderboard_browser.py --site DIR --releases DIR --store DIR --screenshot PNG [--steps JSON]

Chromium is driven over the DevTools protocol (websocket-client): the page is opened from
file://, real key presses move the window sliders (focus, then ArrowLeft/ArrowRight/Home/End)
and a real mouse click flips the cutoff checkbox; the category filter is a select whose value
is set and whose change event is fired, as a choice from its list does. Every request the page makes is recorded
(all must be file:// URLs), and so is every script error. Prints one JSON object:
{"states": [{"step", "from", "to", "after_cutoff", "category", "page", "store", "subtasks", "languages",
"store_groups", "plot"}], "requests": [...], "errors": [...], "releases_text": {...},
"screenshot": PATH}.
"""

import argparse
import base64
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import pyarrow.parquet as pq
import websocket

# How long to wait for anything Chromium does (its start, a reply, an event, a page getting
# ready). A bound for a machine busy with other work (a build on every core): waits end as
# soon as what they wait for happens, so a long bound costs nothing when all goes well.
# Each wait also ends at once if Chromium exits. COREB_BROWSER_WAIT overrides it (seconds).
WAIT = float(os.environ.get("COREB_BROWSER_WAIT", "300"))
# How often a wait looks whether Chromium is still running.
POLL = 5


class Browser:
    """A headless Chromium and one page, over the DevTools protocol."""

    def __init__(self, binary):
        self.profile = tempfile.mkdtemp(prefix="coreb-chromium-")
        args = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--remote-debugging-port=0",
            f"--user-data-dir={self.profile}",
            "--window-size=1280,1000",
            # Nothing outside this machine, should the page try: every host name fails.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "about:blank",
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + WAIT
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if self.proc.poll() is not None or time.time() > deadline:
                raise SystemExit(f"chromium did not start: {self.proc.stderr.read().decode(errors='replace')[-2000:]}")
            time.sleep(0.05)
        port = open(port_file).read().split()[0]
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=WAIT))
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=WAIT, suppress_origin=True)
        self.ws.settimeout(POLL)
        self.next_id = 0
        self.events = []

    def recv(self, deadline, what):
        """The next DevTools message, waiting until `deadline` (while Chromium runs)."""
        while True:
            try:
                return json.loads(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"chromium exited (status {self.proc.returncode}) while waiting for {what}")
                if time.time() > deadline:
                    raise RuntimeError(f"no {what} within {WAIT} s (COREB_BROWSER_WAIT)")

    def call(self, method, **params):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        deadline = time.time() + WAIT
        while True:
            msg = self.recv(deadline, f"reply to {method}")
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method):
        for i, e in enumerate(self.events):
            if e["method"] == method:
                return self.events.pop(i)
        deadline = time.time() + WAIT
        while True:
            msg = self.recv(deadline, f"event {method}")
            if "method" in msg:
                if msg["method"] == method:
                    return msg
                self.events.append(msg)

    def eval(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression[:80]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def load(self, url=None, what="the page"):
        """Open `url` (reload the page when None) and wait until it says it is ready."""
        if url:
            self.call("Page.navigate", url=url)
        else:
            self.call("Page.reload")
        self.wait_event("Page.loadEventFired")
        deadline = time.time() + WAIT
        while self.eval("document.body.dataset.ready") != "true":
            if time.time() > deadline:
                raise SystemExit(f"{what} never became ready in {WAIT} s (COREB_BROWSER_WAIT)")
            time.sleep(0.05)

    def center(self, selector):
        rect = self.eval(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }})()")
        return rect

    def click(self, selector):
        x, y = self.center(selector)
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            extra = {} if kind == "mouseMoved" else {"button": "left", "clickCount": 1}
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, **extra)

    def press(self, selector, key, times=1):
        codes = {"ArrowLeft": 37, "ArrowRight": 39, "Home": 36, "End": 35}
        self.eval(f"document.querySelector({json.dumps(selector)}).focus()")
        for _ in range(times):
            for kind in ("rawKeyDown", "keyUp"):
                self.call("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=codes[key], nativeVirtualKeyCode=codes[key])

    def close(self):
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)


READ_PAGE = """(() => {
  const table = (id) => {
    const out = {};
    for (const tr of document.querySelectorAll('#' + id + ' tbody tr[data-model]')) {
      const row = {};
      for (const td of tr.querySelectorAll('td[data-task], td[data-group]')) {
        const name = td.dataset.task || td.dataset.group;
        const v = td.querySelector('.v');
        row[name] = v ? {text: v.textContent, value: Number(td.dataset.value), releases: Number(td.dataset.releases), queries: td.dataset.queries === undefined ? null : Number(td.dataset.queries)} : null;
      }
      const used = tr.querySelector('td[data-releases]:not([data-task]):not([data-group])');
      if (used) row._releases = used.dataset.releases ? used.dataset.releases.split(',') : [];
      row._rank = tr.children[0].textContent;
      if (tr.dataset.category !== undefined) row._category = tr.dataset.category;
      out[tr.dataset.model] = row;
    }
    return out;
  };
  const plot = [...document.querySelectorAll('#plot circle')].map((c) => [c.dataset.model, c.dataset.release, Number(c.dataset.value)]);
  return {
    from: document.getElementById('from-label').textContent,
    to: document.getElementById('to-label').textContent,
    after_cutoff: document.getElementById('after-cutoff').checked,
    category: document.getElementById('category').value,
    board: table('board'), subtasks: table('by-subtask'), languages: table('by-language'), plot: plot,
    order: [...document.querySelectorAll('#board tbody tr')].map((tr) => tr.dataset.model),
  };
})()"""


def store_frame(store):
    """The latest record of each (model, release, task), as the store's definition says."""
    files = sorted(glob.glob(os.path.join(store, "*", "*.parquet")))
    rows = []
    for f in files:
        rows.extend(pq.read_table(f).to_pylist())
    latest = {}
    cutoff = {}
    category = {}
    for r in rows:
        k = (r["model"], r["release"], r["task"])
        order = (r["recorded_at"], r["record_id"])
        if k not in latest or order > latest[k]:
            latest[k] = order
        if r["model"] not in cutoff or order > cutoff[r["model"]][0]:
            cutoff[r["model"]] = (order, r["cutoff"])
        # A model's category: its latest record's that names one (older files have none).
        if r.get("category") is not None and (r["model"] not in category or order > category[r["model"]][0]):
            category[r["model"]] = (order, r["category"])
    # The store reads as one Parquet dataset, as users load it.
    assert pq.read_table(store).num_rows == len(rows), "the store is not one Parquet dataset"
    kept = [r for r in rows if (r["recorded_at"], r["record_id"]) == latest[(r["model"], r["release"], r["task"])]]
    categories = {m: category[m][1] if m in category else "unknown" for m in cutoff}
    return kept, {m: c for m, (_, c) in cutoff.items()}, categories, len({r["record_id"] for r in rows})


def releases_of(releases_dir):
    out = {}
    for path in sorted(glob.glob(os.path.join(releases_dir, "*", "MANIFEST.json"))):
        m = json.load(open(path))
        out[m["version"]] = {"month": m["window"]["end"][:7], "start": m["window"]["start"]}
    return out


def store_means(kept, cutoffs, categories, releases, metric, first, last, after_cutoff, category):
    """Window means computed from the store's rows: {model: {task: (mean, n)}} and groups; with
    a category, only its models. Each model's "overall": Σ value × queries / Σ queries over its
    (release, task) values of the window, and the queries (when it has an average)."""
    def use(r):
        if category and categories[r["model"]] != category:
            return False
        rel = releases[r["release"]]
        if not (first <= rel["month"] <= last):
            return False
        c = cutoffs[r["model"]]
        return not after_cutoff or c is None or rel["start"] > c

    acc = {}
    for r in kept:
        if r["metric"] != metric or not use(r):
            continue
        acc.setdefault((r["model"], r["task"], r["subtask"], r["language"]), []).append(r["value"])
    means = {k: (sum(v) / len(v), len(v)) for k, v in acc.items()}
    board = {}
    tasks = sorted({r["task"] for r in kept})
    for (model, task, sub, lang), mv in means.items():
        if sub == "all" and lang == "all":
            board.setdefault(model, {})[task] = mv
    weighted = {}
    for r in kept:
        if r["metric"] == metric and r["subtask"] == "all" and r["language"] == "all" and use(r):
            w = weighted.setdefault(r["model"], [0.0, 0])
            w[0] += r["value"] * r["num_queries"]
            w[1] += r["num_queries"]
    for model in {r["model"] for r in kept if not category or categories[r["model"]] == category}:
        row = board.setdefault(model, {})
        if all(t in row for t in tasks):
            row["average"] = (sum(row[t][0] for t in tasks) / len(tasks), None)
            w = weighted.get(model, [0.0, 0])
            if w[1] > 0:
                row["overall"] = (w[0] / w[1], w[1])
    groups = {f"{m}|{t}|{'subtask:' + s if s != 'all' else 'language:' + l}": mv for (m, t, s, l), mv in means.items() if (s, l) != ("all", "all")}
    return board, groups


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--site", required=True)
    ap.add_argument("--releases", required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--metric", default="ndcg@10")
    ap.add_argument("--chromium", default=os.environ.get("COREB_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium"))
    args = ap.parse_args()

    kept, cutoffs, categories, records = store_frame(args.store)
    releases = releases_of(args.releases)
    months = sorted({r["month"] for r in releases.values()})

    browser = Browser(args.chromium)
    try:
        for domain in ("Page", "Runtime", "Network", "Log"):
            browser.call(f"{domain}.enable")
        browser.call("Emulation.setDeviceMetricsOverride", width=1280, height=1000, deviceScaleFactor=1, mobile=False)
        url = "file://" + os.path.abspath(os.path.join(args.site, "index.html"))
        browser.load(url)

        def choose(selector, value):
            browser.eval(f"(() => {{ const s = document.querySelector({json.dumps(selector)}); s.value = {json.dumps(value)}; s.dispatchEvent(new Event('change', {{bubbles: true}})); }})()")

        # The UI steps: (name, action). Each state is read back and recomputed from the store.
        steps = [
            ("initial", None),
            ("cutoff toggle on (mouse click)", lambda: browser.click("#after-cutoff")),
            ("from one month later (ArrowRight)", lambda: browser.press("#from", "ArrowRight")),
            ("to one month earlier (ArrowLeft)", lambda: browser.press("#to", "ArrowLeft")),
            ("cutoff toggle off (mouse click)", lambda: browser.click("#after-cutoff")),
            ("from back to the first month (Home)", lambda: browser.press("#from", "Home")),
            ("category code (select)", lambda: choose("#category", "code")),
            ("category unknown (select)", lambda: choose("#category", "unknown")),
            ("category general, cutoff toggle on", lambda: (choose("#category", "general"), browser.click("#after-cutoff"))),
            ("every category, cutoff toggle off", lambda: (choose("#category", ""), browser.click("#after-cutoff"))),
        ]
        states = []
        for name, action in steps:
            if action:
                action()
            page = browser.eval(READ_PAGE)
            first, last = page["from"], page["to"]
            board, groups = store_means(kept, cutoffs, categories, releases, args.metric, first, last, page["after_cutoff"], page["category"])
            states.append({"step": name, "from": first, "to": last, "after_cutoff": page["after_cutoff"], "category": page["category"], "page": page, "store": board, "store_groups": groups, "categories": categories})
            if name == "initial":
                releases_text = browser.eval("Object.fromEntries([...document.querySelectorAll('#releases tbody tr')].map((tr) => [tr.dataset.release, tr.innerText]))")

        height = browser.eval("Math.ceil(document.documentElement.scrollHeight)")
        browser.call("Emulation.setDeviceMetricsOverride", width=1280, height=int(height), deviceScaleFactor=1, mobile=False)
        browser.eval("window.scrollTo(0, 0)")
        shot = browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        os.makedirs(os.path.dirname(os.path.abspath(args.screenshot)), exist_ok=True)
        with open(args.screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))

        # Drain what is left and collect requests and errors.
        browser.eval("1")
        requests = [e["params"]["request"]["url"] for e in browser.events if e["method"] == "Network.requestWillBeSent"]
        errors = [e["params"] for e in browser.events if e["method"] == "Runtime.exceptionThrown"]
        errors += [e["params"] for e in browser.events if e["method"] == "Runtime.consoleAPICalled" and e["params"].get("type") == "error"]
        errors += [e["params"] for e in browser.events if e["method"] == "Log.entryAdded" and e["params"]["entry"].get("level") == "error"]
    finally:
        browser.close()

    json.dump({"months": months, "records": records, "states": states, "requests": requests, "errors": errors, "releases_text": releases_text, "screenshot": os.path.abspath(args.screenshot)}, sys.stdout)


if __name__ == "__main__":
    main()
