"""Drive the review page of `coreb review` in headless Chromium, as reviewers do, and read
back what it exports. Used by tests/review.rs.

    review_browser.py --page HTML --plan JSON --out DIR
    review_browser.py --page HTML --xss

With --plan (a JSON list of {"reviewer": NAME, "answers": {PROBLEM: {QUESTION: ANSWER}},
"notes": {PROBLEM: {QUESTION: NOTE}}}), each reviewer gets a fresh browser profile: types
their name, clicks every answer (real mouse clicks on the page's radio buttons), types the
notes, reloads the page (the answers must come back from localStorage), clicks the export
link (which must become a Blob link with a download name) and saves what the page exports
into that Blob (`window.corebReview.exportText()`) as DIR/<reviewer>.jsonl.

With --xss, reads whether the page ran anything (`window.pwned`), whether any <img> exists,
and the page's visible text. Prints one JSON object; every request the page made and every
script error are in it.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from leaderboard_browser import Browser  # noqa: E402


def radio(problem, question, answer):
    return f'input[type=radio][data-problem={json.dumps(problem)}][data-question={json.dumps(question)}][value={json.dumps(answer)}]'


def type_into(browser, selector, text):
    browser.eval(f"document.querySelector({json.dumps(selector)}).focus()")
    browser.call("Input.insertText", text=text)


def review(browser, url, plan):
    browser.load(url)
    type_into(browser, "#reviewer", plan["reviewer"])
    for problem, answers in plan["answers"].items():
        for question, answer in answers.items():
            browser.click(radio(problem, question, answer))
    for problem, notes in plan.get("notes", {}).items():
        for question, note in notes.items():
            type_into(browser, f'input.note[data-problem={json.dumps(problem)}][data-question={json.dumps(question)}]', note)
    # A reload: everything must come back.
    browser.load(what="the page after the reload")
    restored = browser.eval("""(() => {
      const out = {};
      for (const r of document.querySelectorAll('input[type=radio]:checked')) {
        (out[r.dataset.problem] = out[r.dataset.problem] || {})[r.dataset.question] = r.value;
      }
      return {reviewer: document.getElementById('reviewer').value, answers: out, progress: document.getElementById('progress').textContent};
    })()""")
    browser.click("#export")
    link = browser.eval("(() => { const a = document.getElementById('export'); return {href: a.href, download: a.download}; })()")
    return restored, link, browser.eval("window.corebReview.exportText()")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--page", required=True)
    ap.add_argument("--plan")
    ap.add_argument("--out")
    ap.add_argument("--xss", action="store_true")
    ap.add_argument("--chromium", default=os.environ.get("COREB_CHROMIUM", "chromium"))
    args = ap.parse_args()
    url = "file://" + os.path.abspath(args.page)
    result = {"reviewers": [], "requests": [], "errors": []}
    plans = json.load(open(args.plan)) if args.plan else [None]
    for plan in plans:
        browser = Browser(args.chromium)
        try:
            for domain in ("Page", "Runtime", "Network", "Log"):
                browser.call(f"{domain}.enable")
            if args.xss:
                browser.load(url)
                result["xss"] = browser.eval("""({
                  pwned: typeof window.pwned === 'undefined' ? null : String(window.pwned),
                  images: document.querySelectorAll('img').length,
                  scripts: document.querySelectorAll('script').length,
                  text: document.body.innerText,
                })""")
            else:
                restored, link, exported = review(browser, url, plan)
                path = os.path.join(args.out, plan["reviewer"] + ".jsonl")
                with open(path, "w") as f:
                    f.write(exported)
                result["reviewers"].append({"reviewer": plan["reviewer"], "restored": restored, "link": link, "file": path})
            browser.eval("1")
            result["requests"] += [e["params"]["request"]["url"] for e in browser.events if e["method"] == "Network.requestWillBeSent"]
            result["errors"] += [e["params"] for e in browser.events if e["method"] == "Runtime.exceptionThrown"]
            result["errors"] += [e["params"] for e in browser.events if e["method"] == "Log.entryAdded" and e["params"]["entry"].get("level") == "error"]
        finally:
            browser.close()
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
