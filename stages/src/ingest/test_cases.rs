//! A fast reader for the one shape LiveCodeBench writes its test lists in:
//! `[{"input": "…", "output": "…", "testtype": "…"}, …]`.
//!
//! `serde_json` reads every test string twice: it scans and unescapes it into a scratch
//! buffer, then copies it into its `String`. Decoded tests are most of a month's bytes (at
//! 2 GB of input, that scan and copy were 8 % of `ingest`'s CPU, issue #13). Here each
//! string's end is found by a vectorised search, and it is unescaped once, straight into a
//! `String` of its own size.
//!
//! [`parse`] accepts only what `serde_json` accepts and gives exactly what it gives; anything
//! else (other or repeated keys, another value type, a surrogate escape, a raw control
//! character, a syntax error) is `None`, and the caller parses with `serde_json`, whose
//! result or error stands. The input is already `&str`, so no byte is checked as UTF-8 again.

/// One test as written: its type still a string.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub(super) struct RawTest {
    pub(super) input: String,
    pub(super) output: String,
    pub(super) testtype: String,
}

/// The tests of `json`, or `None` when it is not plainly a list of such tests.
pub(super) fn parse(json: &str) -> Option<Vec<RawTest>> {
    let mut c = Cursor { text: json, at: 0 };
    c.token(b'[')?;
    let mut tests = Vec::new();
    if c.peek() == Some(b']') {
        c.at += 1;
    } else {
        loop {
            tests.push(c.test()?);
            match c.next_token()? {
                b',' => {}
                b']' => break,
                _ => return None,
            }
        }
    }
    c.skip_space();
    (c.at == json.len()).then_some(tests)
}

struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl Cursor<'_> {
    fn bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    fn skip_space(&mut self) {
        self.at = super::skip_json_space(self.bytes(), self.at);
    }

    /// The next byte after any space, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.bytes().get(self.at).copied()
    }

    fn next_token(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn token(&mut self, want: u8) -> Option<()> {
        (self.next_token()? == want).then_some(())
    }

    /// `{"input": …, "output": …, "testtype": …}`, its keys in any order, each once.
    fn test(&mut self) -> Option<RawTest> {
        self.token(b'{')?;
        let (mut input, mut output, mut testtype) = (None, None, None);
        loop {
            let key = self.string()?;
            self.token(b':')?;
            let slot = match key.as_str() {
                "input" => &mut input,
                "output" => &mut output,
                "testtype" => &mut testtype,
                _ => return None,
            };
            if slot.replace(self.string()?).is_some() {
                return None;
            }
            match self.next_token()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
        Some(RawTest { input: input?, output: output?, testtype: testtype? })
    }

    /// A JSON string, unescaped into a `String` of its size.
    fn string(&mut self) -> Option<String> {
        self.token(b'"')?;
        let start = self.at;
        let end = super::string_end(self.bytes(), start)?;
        let raw = &self.bytes()[start..end];
        if has_control(raw) {
            return None;
        }
        let mut out = String::with_capacity(raw.len());
        let mut at = start;
        while let Some(k) = memchr::memchr(b'\\', &self.bytes()[at..end]) {
            // Cut at a backslash, an ASCII byte: both pieces are whole characters.
            out.push_str(&self.text[at..at + k]);
            at += k;
            let (c, len) = unescape(&self.bytes()[at..end])?;
            out.push(c);
            at += len;
        }
        out.push_str(&self.text[at..end]);
        self.at = end + 1;
        Some(out)
    }
}

/// The character an escape at the start of `s` stands for, and the escape's length; `None`
/// for a malformed escape and for surrogates (left to `serde_json`).
fn unescape(s: &[u8]) -> Option<(char, usize)> {
    let c = match *s.get(1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hex = s.get(2..6)?;
            let mut code = 0u32;
            for &h in hex {
                code = code * 16 + char::from(h).to_digit(16)?;
            }
            return char::from_u32(code).map(|c| (c, 6));
        }
        _ => return None,
    };
    Some((c, 2))
}

/// Whether `raw` holds a byte below 0x20, which JSON forbids inside strings; written to be
/// vectorised (no early exit inside a block).
fn has_control(raw: &[u8]) -> bool {
    raw.chunks(256).any(|block| block.iter().fold(false, |seen, &b| seen | (b < 0x20)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde(json: &str) -> Result<Vec<RawTest>, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    /// Everything the fast reader accepts, serde reads to the same tests; everything else
    /// it leaves to serde.
    #[test]
    fn reads_what_serde_reads_and_leaves_the_rest() {
        let accepted = [
            r#"[]"#,
            " [ ] \n",
            r#"[{"input": "1\n2 3\n", "output": "5\n", "testtype": "stdin"}]"#,
            r#"[{"testtype":"functional","output":"[1, 2]","input":"[3]\n\"a\\b\""}]"#,
            "[{\"input\": \"\", \"output\": \"\", \"testtype\": \"\"},\r\n\t{\"input\": \"x\", \"output\": \"y\", \"testtype\": \"stdin\"}]",
            r#"[{"input": "\" \\ \/ \b \f \n \r \t", "output": "\u00e9\u4e2d\u0000\u001F", "testtype": "stdin"}]"#,
            r#"[{"input": "caf\u00E9 — ünïcödé 中文 𝄞", "output": "\\\\", "testtype": "stdin"}]"#,
            // Unknown testtypes are read; typing them is the caller's job.
            r#"[{"input": "1", "output": "2", "testtype": "interactive"}]"#,
        ];
        for json in accepted {
            let fast = parse(json).unwrap_or_else(|| panic!("fast reader refused {json}"));
            assert_eq!(Ok(fast), serde(json), "{json}");
        }
        let refused = [
            "",
            "[",
            "[,]",
            "[{}]",
            "{}",
            r#"[{"input": "1", "output": "2"}]"#,
            r#"[{"input": "1", "output": "2", "testtype": "stdin"},]"#,
            r#"[{"input": "1", "output": "2", "testtype": "stdin",}]"#,
            r#"[{"input": "1", "input": "1", "output": "2", "testtype": "stdin"}]"#,
            r#"[{"input": "1", "output": "2", "testtype": "stdin", "extra": "3"}]"#,
            r#"[{"input": 1, "output": "2", "testtype": "stdin"}]"#,
            r#"[{"input": null, "output": "2", "testtype": "stdin"}]"#,
            r#"[{"input": "1", "output": "2", "testtype": "stdin"}] x"#,
            r#"[{"input": "1", "output": "2", "testtype": "stdin"}][]"#,
            "[{\"input\": \"a\tb\", \"output\": \"2\", \"testtype\": \"stdin\"}]",
            "[{\"input\": \"a\nb\", \"output\": \"2\", \"testtype\": \"stdin\"}]",
            r#"[{"input": "\x", "output": "2", "testtype": "stdin"}]"#,
            r#"[{"input": "\u12", "output": "2", "testtype": "stdin"}]"#,
            r#"[{"input": "\u+123", "output": "2", "testtype": "stdin"}]"#,
            r#"[{"input": "\ud834\udd1e", "output": "2", "testtype": "stdin"}]"#,
            r#"[{"input": "\ud834", "output": "2", "testtype": "stdin"}]"#,
            r#"[{"input": "1", "output": "2", "testtype": "stdin"}"#,
            r#"[{"input": "1", "output": "2", "testtype": "stdin}]"#,
            r#"[{"input": "1\", "output": "2", "testtype": "stdin"}]"#,
            r#"[{"input" "1", "output": "2", "testtype": "stdin"}]"#,
            r#"[{"input": "1" "output": "2", "testtype": "stdin"}]"#,
        ];
        for (i, json) in refused.iter().enumerate() {
            assert_eq!(parse(json), None, "{json}");
            // serde refuses them too, but for an unknown key (ignored) and a surrogate pair.
            assert_eq!(serde(json).is_ok(), [9, 19].contains(&i), "{json}");
        }
        assert_eq!(serde(refused[19]).unwrap()[0].input, "𝄞");
    }

    /// Strings of megabytes with escapes at every spacing come back whole.
    #[test]
    fn long_strings_with_dense_and_sparse_escapes() {
        let mut input = String::new();
        for n in 0..200_000u32 {
            input.push_str(&n.to_string());
            input.push(if n % 7 == 0 { '\n' } else { ' ' });
        }
        input.push_str(&"x".repeat(3 << 20));
        input.push_str("\"\\\u{1}é");
        let tests = vec![
            RawTest {
                input: input.clone(),
                output: input.replace(' ', "\n"),
                testtype: "stdin".into()
            };
            2
        ];
        let json = serde_json::to_string(&tests.iter().map(|t| serde_json::json!({"input": t.input, "output": t.output, "testtype": t.testtype})).collect::<Vec<_>>()).unwrap();
        assert!(json.contains("\\u0001"));
        assert_eq!(parse(&json), Some(tests));
    }
}
