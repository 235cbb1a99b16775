"""Shared truth of the simulated month: problem templates, their reference solutions in the
five judged languages, and the planted outcome of every (problem, model, language).

The generator (`generate.py`), the simulated endpoint (`simulator.py`) and the checker
(`run.py`) import this module, so the truth they use is one function of the problem id, the
model and the language. Nothing here touches the network.
"""
import hashlib
import random

LANGUAGES = ["python", "cpp", "java", "go", "ruby"]

# Planted outcome shares, in percent (cumulative order matters).
OUTCOMES = [("correct", 60), ("wrong", 14), ("slow", 8), ("crash", 9), ("compile", 9)]

# Words the stories are drawn from: plain English, so whatlang says "eng" and MinHash sees
# different stories as different.
WORDS = """
warehouse crate ledger harbour signal tower river bridge market lantern garden orchard
library archive station engine carriage village mountain valley forest meadow island
captain merchant farmer baker painter teacher student courier pilot sailor weaver miller
counts collects arranges records inspects measures delivers stores gathers compares checks
every morning evening season festival journey voyage parcel basket barrel bottle coin token
ribbon candle shelf drawer cabinet window door corridor tunnel road path street square
quietly carefully slowly quickly often always sometimes before after during while because
numbers values weights heights lengths prices scores ranks marks readings totals amounts
wants needs hopes decides plans prepares finishes starts opens closes follows leads
ancient modern small large bright dark heavy light narrow wide distant nearby hidden famous
""".split()


def rng(*parts) -> random.Random:
    seed = hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()
    return random.Random(int(seed[:16], 16))


NOUNS = [w for w in WORDS[:71]]
VERBS = [w for w in WORDS if w.endswith("s") and w in "counts collects arranges records inspects measures delivers stores gathers compares checks wants needs hopes decides plans prepares finishes starts opens closes follows leads".split()]
ADJS = "ancient modern small large bright dark heavy light narrow wide distant nearby hidden famous".split()


def story(seed, words: int) -> str:
    """About `words` words of plain English sentences (the, of, and …), deterministic in
    `seed`: whatlang reads them as English and MinHash sees two stories as different."""
    r = rng("story", seed)
    out, n = [], 0
    while n < words:
        s = (f"the {r.choice(ADJS)} {r.choice(NOUNS)} {r.choice(VERBS)} the {r.choice(NOUNS)} of the {r.choice(NOUNS)} "
             f"and then it {r.choice(VERBS)} every {r.choice(NOUNS)} in the {r.choice(ADJS)} {r.choice(NOUNS)}")
        out.append(s[0].upper() + s[1:] + ".")
        n += len(s.split())
    return " ".join(out)


def outcome(problem_id: str, model: str, language: str) -> str:
    """The planted outcome of a solution: correct, wrong, slow, crash or compile."""
    h = int(hashlib.sha256(f"{problem_id}|{model}|{language}".encode()).hexdigest()[:8], 16) % 100
    for name, share in OUTCOMES:
        if h < share:
            return name
        h -= share
    return "correct"


# ---------------------------------------------------------------------------------------------
# Templates: what each problem computes, its statement sections, its test generator and its
# reference solutions. `kind` is "stdin" or "functional" (LeetCode, one JSON value per line).

TEMPLATES = {
    "stdin_sum": {
        "kind": "stdin",
        "task": "Print the sum of the N integers.",
        "sections": "Input\n\nThe input is given from Standard Input in the following format:\nN\nA_1 A_2 ... A_N\n\nOutput\n\nPrint the sum of A_1, ..., A_N.\n\nConstraints\n\n1 <= N <= 10^6\n0 <= A_i <= 10^9\nAll input values are integers.",
        "query": "sum a large list of integers from standard input with fast reading",
    },
    "stdin_reverse": {
        "kind": "stdin",
        "task": "Print the N integers in reverse order.",
        "sections": "Input\n\nThe input is given from Standard Input in the following format:\nN\nA_1 A_2 ... A_N\n\nOutput\n\nPrint A_N, ..., A_1 in this order, separated by spaces.\n\nConstraints\n\n1 <= N <= 10^6\n0 <= A_i <= 10^9\nAll input values are integers.",
        "query": "print a long integer sequence in reverse order with buffered output",
    },
    "fn_max": {
        "kind": "functional",
        "method": "maxValue",
        "renamed": "peakReading",
        "starter": "class Solution:\n    def {m}(self, nums: List[int]) -> int:\n        ",
        "task": "Return the largest element of nums.",
        "sections": "Input: an integer array nums.\nOutput: return the largest value in nums.\n\nConstraints:\n\n1 <= nums.length <= 10^6\n-10^9 <= nums[i] <= 10^9",
        "query": "find the largest value in an integer array with one linear scan",
    },
    "fn_reverse": {
        "kind": "functional",
        "method": "reverseWord",
        "renamed": "mirrorLabel",
        "starter": "class Solution:\n    def {m}(self, s: str) -> str:\n        ",
        "task": "Return the string s reversed.",
        "sections": "Input: a string s of lowercase English letters.\nOutput: return s written from its last character to its first.\n\nConstraints:\n\n1 <= s.length <= 10^6\ns consists of lowercase English letters.",
        "query": "reverse a lowercase string and return the mirrored text with two pointers",
    },
}

TEMPLATE_ORDER = ["stdin_sum", "fn_max", "stdin_reverse", "fn_reverse"]


def template_of(index: int) -> str:
    return TEMPLATE_ORDER[index % len(TEMPLATE_ORDER)]


def solve(template: str, data):
    """The reference answer of one test's data (the generator's expected outputs)."""
    if template == "stdin_sum":
        return str(sum(data)) + "\n"
    if template == "stdin_reverse":
        return " ".join(map(str, reversed(data))) + "\n"
    if template == "fn_max":
        return str(max(data))
    if template == "fn_reverse":
        return '"' + data[::-1] + '"'
    raise KeyError(template)


def test_input(template: str, data) -> str:
    if template.startswith("stdin"):
        return f"{len(data)}\n{' '.join(map(str, data))}\n"
    if template == "fn_max":
        return "[" + ",".join(map(str, data)) + "]"
    return '"' + data + '"'


def test_data(template: str, r: random.Random, size: int):
    if template == "fn_reverse":
        return "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(max(size, 6)))
    if template == "fn_max":
        return [r.randint(-10**9, 10**9) for _ in range(size)]
    return [r.randint(0, 10**9) for _ in range(size)]


# ---------------------------------------------------------------------------------------------
# Reference solutions. `{W}` is 1 in a wrong solution (off by one, or not reversed) and 0
# otherwise; `{PRE}` is a statement run before any output (a sleep for slow solutions, an exit
# for crashing ones); `{M}` is the method name (functional problems). A functional problem's
# solution is the solution only (the skeleton's class or function, no entry point, no I/O):
# the judge adds the I/O driver; `{PRE}` then runs inside the method.

PRE = {
    "python": {"slow": "time.sleep(60)", "crash": "sys.exit(3)", "none": "pass"},
    "ruby": {"slow": "sleep(60)", "crash": "exit(3)", "none": "nil"},
    "cpp": {"slow": "std::this_thread::sleep_for(std::chrono::seconds(60));", "crash": "std::exit(3);", "none": ";"},
    "java": {"slow": "try { Thread.sleep(60000); } catch (InterruptedException e) {}", "crash": "System.exit(3);", "none": ";"},
    "go": {"slow": "time.Sleep(60 * time.Second)", "crash": "os.Exit(3)", "none": "_ = time.Second"},
}

# A statement naming the problem, first in every program: two problems of one template never
# get the same code (the release gate `no_cross_problem_duplicates` would refuse them).
TAG = {
    "python": 'tag = "{q}"',
    "ruby": 'tag = "{q}"',
    "cpp": 'const char *tag = "{q}"; (void)tag;',
    "java": 'String tag = "{q}";',
    "go": '_ = "{q}"; _ = time.Second;',
}

SOURCES = {
    ("stdin_sum", "python"): """import sys
import time


def main():
    {PRE}
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    print(sum(map(int, data[1:n + 1])) + {W})


if __name__ == "__main__":
    main()
""",
    ("stdin_reverse", "python"): """import sys
import time


def main():
    {PRE}
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    values = data[1:n + 1]
    if not {W}:
        values.reverse()
    sys.stdout.write(" ".join(v.decode() for v in values) + "\\n")


if __name__ == "__main__":
    main()
""",
    ("fn_max", "python"): """import sys
import time
from typing import List


class Solution:
    def {M}(self, nums: List[int]) -> int:
        {PRE}
        return max(nums) + {W}
""",
    ("fn_reverse", "python"): """import sys
import time


class Solution:
    def {M}(self, s: str) -> str:
        {PRE}
        return s if {W} else s[::-1]
""",
    ("stdin_sum", "ruby"): """def main
  {PRE}
  data = STDIN.read.split
  n = data[0].to_i
  puts data[1, n].sum(&:to_i) + {W}
end

main
""",
    ("stdin_reverse", "ruby"): """def main
  {PRE}
  data = STDIN.read.split
  n = data[0].to_i
  values = data[1, n]
  values = values.reverse if {W} == 0
  puts values.join(" ")
end

main
""",
    ("fn_max", "ruby"): """def {M}(nums)
  {PRE}
  nums.max + {W}
end
""",
    ("fn_reverse", "ruby"): """def {M}(s)
  {PRE}
  {W} == 1 ? s : s.reverse
end
""",
    ("stdin_sum", "cpp"): """#include <bits/stdc++.h>
using namespace std;

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    {PRE}
    long long n, total = 0;
    cin >> n;
    for (long long i = 0; i < n; ++i) {
        long long a;
        cin >> a;
        total += a;
    }
    cout << total + {W} << "\\n";
    return 0;
}
""",
    ("stdin_reverse", "cpp"): """#include <bits/stdc++.h>
using namespace std;

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    {PRE}
    long long n;
    cin >> n;
    vector<long long> a(n);
    for (auto &x : a) cin >> x;
    if (!{W}) reverse(a.begin(), a.end());
    string out;
    for (long long i = 0; i < n; ++i) {
        if (i) out += ' ';
        out += to_string(a[i]);
    }
    out += '\\n';
    cout << out;
    return 0;
}
""",
    ("fn_max", "cpp"): """#include <bits/stdc++.h>
using namespace std;

class Solution {
public:
    long long {M}(vector<long long>& nums) {
        {PRE}
        return *max_element(nums.begin(), nums.end()) + {W};
    }
};
""",
    ("fn_reverse", "cpp"): """#include <bits/stdc++.h>
using namespace std;

class Solution {
public:
    string {M}(string s) {
        {PRE}
        if (!{W}) reverse(s.begin(), s.end());
        return s;
    }
};
""",
    ("stdin_sum", "java"): """import java.io.*;
import java.util.*;

public class Main {
    public static void main(String[] args) throws IOException {
        {PRE}
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
        long n = next(in), total = 0;
        for (long i = 0; i < n; i++) total += next(in);
        System.out.println(total + {W});
    }

    static long next(DataInputStream in) throws IOException {
        int c = in.read();
        while (c == ' ' || c == '\\n' || c == '\\r') c = in.read();
        boolean neg = c == '-';
        if (neg) c = in.read();
        long v = 0;
        while (c >= '0' && c <= '9') { v = v * 10 + (c - '0'); c = in.read(); }
        return neg ? -v : v;
    }
}
""",
    ("stdin_reverse", "java"): """import java.io.*;
import java.util.*;

public class Main {
    public static void main(String[] args) throws IOException {
        {PRE}
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in), 1 << 16);
        int n = Integer.parseInt(in.readLine().trim());
        String[] a = in.readLine().trim().split(" ");
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < n; i++) {
            if (i > 0) out.append(' ');
            out.append({W} == 1 ? a[i] : a[n - 1 - i]);
        }
        out.append('\\n');
        PrintWriter w = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out), 1 << 16));
        w.print(out);
        w.flush();
    }
}
""",
    ("fn_max", "java"): """class Solution {
    public long {M}(long[] nums) {
        {PRE}
        long best = Long.MIN_VALUE;
        for (long x : nums) best = Math.max(best, x);
        return best + {W};
    }
}
""",
    ("fn_reverse", "java"): """class Solution {
    public String {M}(String s) {
        {PRE}
        return {W} == 1 ? s : new StringBuilder(s).reverse().toString();
    }
}
""",
    ("stdin_sum", "go"): """package main

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

func main() {
	{PRE}
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	var n int
	fmt.Fscan(in, &n)
	var total int64
	for i := 0; i < n; i++ {
		var a int64
		fmt.Fscan(in, &a)
		total += a
	}
	fmt.Println(total + {W})
}
""",
    ("stdin_reverse", "go"): """package main

import (
	"bufio"
	"os"
	"strings"
	"time"
)

func main() {
	{PRE}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	data, _ := in.ReadString(0)
	fields := strings.Fields(data)
	values := fields[1:]
	if {W} == 0 {
		for i, j := 0, len(values)-1; i < j; i, j = i+1, j-1 {
			values[i], values[j] = values[j], values[i]
		}
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	out.WriteString(strings.Join(values, " "))
	out.WriteString("\\n")
	out.Flush()
}
""",
    ("fn_max", "go"): """package main

import (
	"os"
	"time"
)

func {M}(nums []int) int {
	{PRE}
	_ = os.Args
	best := nums[0]
	for _, x := range nums {
		if x > best {
			best = x
		}
	}
	return best + {W}
}
""",
    ("fn_reverse", "go"): """package main

import (
	"os"
	"time"
)

func {M}(s string) string {
	{PRE}
	_ = os.Args
	if {W} == 1 {
		return s
	}
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}
""",
}


def solution(template: str, language: str, outcome_name: str, method: str = "", problem: str = "") -> str:
    """The program a simulated model writes for `template` in `language` with `outcome_name`."""
    src = SOURCES[(template, language)]
    pre = TAG[language].format(q=problem) + ("" if language in ("cpp", "java", "go") else "; ") + PRE[language]["slow" if outcome_name == "slow" else "crash" if outcome_name == "crash" else "none"]
    src = src.replace("{PRE}", pre).replace("{W}", "1" if outcome_name == "wrong" else "0").replace("{M}", method)
    if outcome_name == "compile":
        src = ")(\n" + src
    return src
