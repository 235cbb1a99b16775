//! Reading what models write: JSON in prose or fences, code blocks, markdown artefacts.
//!
//! Shared by the LLM stages so that none of them carries its own copy. Pure functions; they
//! never fail silently: each returns `None`/`Err` when the text holds nothing usable.

use std::sync::LazyLock;

use regex::Regex;

/// The JSON value a model answered with: the whole text, else the first fenced block that
/// parses, else the span from the first `{`/`[` to the last matching `}`/`]`.
///
/// Raw control characters inside strings (a literal newline where JSON wants `\n`) are
/// read as their escapes, as Python's `json.loads(strict=False)` does: llama-cpp-python's
/// schema grammar lets them through, so its schema-constrained answers would otherwise be
/// refused for syntax alone.
pub fn extract_json(text: &str) -> Result<serde_json::Value, String> {
    match extract_strict(text) {
        Ok(v) => Ok(v),
        Err(e) => match escape_raw_controls(text) {
            Some(escaped) => extract_strict(&escaped).map_err(|_| e),
            None => Err(e),
        },
    }
}

/// `text` with every control character inside a JSON string literal escaped, or `None` when
/// there is none.
fn escape_raw_controls(text: &str) -> Option<String> {
    let (mut out, mut in_string, mut escaped, mut changed) =
        (String::with_capacity(text.len()), false, false, false);
    for c in text.chars() {
        if in_string && !escaped && (c as u32) < 0x20 {
            changed = true;
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                other => out.push_str(&format!("\\u{:04x}", other as u32)),
            }
            continue;
        }
        match c {
            '"' if !escaped => in_string = !in_string,
            '\\' if in_string && !escaped => {
                escaped = true;
                out.push(c);
                continue;
            }
            _ => {}
        }
        escaped = false;
        out.push(c);
    }
    changed.then_some(out)
}

fn extract_strict(text: &str) -> Result<serde_json::Value, String> {
    let trimmed = text.trim();
    if let Ok(v) = serde_json::from_str(trimmed) {
        return Ok(v);
    }
    static FENCE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?s)```[A-Za-z0-9_+-]*[ \t]*\r?\n(.*?)```").expect("fence regex")
    });
    for cap in FENCE.captures_iter(trimmed) {
        if let Ok(v) = serde_json::from_str(cap[1].trim()) {
            return Ok(v);
        }
    }
    for (open, close) in [('{', '}'), ('[', ']')] {
        if let (Some(start), Some(end)) = (trimmed.find(open), trimmed.rfind(close))
            && start < end
            && let Ok(v) = serde_json::from_str(&trimmed[start..=end])
        {
            return Ok(v);
        }
    }
    let err = serde_json::from_str::<serde_json::Value>(trimmed)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    Err(format!("no JSON value found ({err})"))
}

/// The code of a generation answer: the first `<code>…</code>`, else an
/// unclosed `<code>` to the end, else the first fenced block, else the whole text. A fence
/// inside the `<code>` block is unwrapped. `#` lines are kept (they are `#include`s in C++).
pub fn extract_code(text: &str) -> String {
    let code = if let Some(start) = text.find("<code>") {
        let rest = &text[start + "<code>".len()..];
        match rest.find("</code>") {
            Some(end) => &rest[..end],
            None => rest,
        }
    } else if let Some(block) = first_fence(text) {
        block
    } else {
        text
    };
    let code = first_fence(code).filter(|_| code.trim_start().starts_with("```")).unwrap_or(code);
    let mut out = code.trim_matches(|c| c == '\n' || c == '\r').to_owned();
    if !out.is_empty() {
        out.push('\n');
    }
    if out.trim().is_empty() { String::new() } else { out }
}

fn first_fence(text: &str) -> Option<&str> {
    static FENCE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?s)```[A-Za-z0-9_+#.-]*[ \t]*\r?\n(.*?)(?:```|\z)").expect("fence regex")
    });
    FENCE.captures(text).and_then(|c| c.get(1)).map(|m| m.as_str())
}

/// Strip markdown headers and formatting artefacts from prose: leading `#` header marks,
/// `**bold**` (not `__x__`, which is a Python name more often than bold), a wrapping code fence, `Title:`/`Statement:` labels that models
/// put on the first line, and runs of blank lines. Inline code and LaTeX are kept.
pub fn clean_markdown(text: &str) -> String {
    static HEADER: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?m)^[ \t]{0,3}#{1,6}[ \t]+").expect("header regex"));
    static BOLD: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\*\*([^*\n]+)\*\*").expect("bold regex"));
    static LABEL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\A\s*(?:problem\s+)?(?:title|statement|summary)\s*:\s*")
            .expect("label regex")
    });
    static WRAP: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?s)\A\s*```[A-Za-z]*[ \t]*\r?\n(.*?)\n?```\s*\z").expect("wrap regex")
    });
    static BLANKS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\n[ \t]*\n(?:[ \t]*\n)+").expect("blank regex"));
    static RULE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?m)^[ \t]*(?:-{3,}|\*{3,}|_{3,})[ \t]*$\n?").expect("rule regex")
    });
    let text = text.replace("\r\n", "\n");
    let text = WRAP.replace(&text, "$1");
    let text = LABEL.replace(&text, "");
    let text = HEADER.replace_all(&text, "");
    let text = BOLD.replace_all(&text, "$1");
    let text = RULE.replace_all(&text, "");
    let text = BLANKS.replace_all(&text, "\n\n");
    text.trim().to_owned()
}

/// Number of whitespace-separated words.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_in_prose_and_fences() {
        assert_eq!(extract_json("{\"a\": 1}").unwrap()["a"], 1);
        assert_eq!(extract_json("Sure!\n```json\n{\"a\": 2}\n```\nDone").unwrap()["a"], 2);
        assert_eq!(extract_json("Here: [\"x\", \"y\"] ok").unwrap()[1], "y");
        assert!(extract_json("no json here").is_err());
    }

    #[test]
    fn raw_control_characters_in_strings_are_read_as_escapes() {
        let v = extract_json(
            "{ \"statement\": \"line one\nline\ttwo \\\"q\\\"\u{1}\" ,\"k\": \"a\\\\\"}",
        )
        .unwrap();
        assert_eq!(v["statement"], "line one\nline\ttwo \"q\"\u{1}");
        assert_eq!(v["k"], "a\\");
        // Outside strings a newline is whitespace, as ever; broken JSON stays broken.
        assert_eq!(extract_json("{\n\"a\": 1\n}").unwrap()["a"], 1);
        assert!(extract_json("{\"a\": \"x\ny").is_err());
    }

    #[test]
    fn code_extraction_order() {
        assert_eq!(
            extract_code("text <code>\n#include <x>\nint main(){}\n</code> more <code>b</code>"),
            "#include <x>\nint main(){}\n"
        );
        assert_eq!(extract_code("<code>\nprint(1)\n"), "print(1)\n");
        assert_eq!(
            extract_code(
                "Here:\n```cpp\n#include <bits/stdc++.h>\nint main(){}\n```\n```py\nx\n```"
            ),
            "#include <bits/stdc++.h>\nint main(){}\n"
        );
        assert_eq!(extract_code("<code>\n```python\nprint(2)\n```\n</code>"), "print(2)\n");
        assert_eq!(extract_code("print(3)"), "print(3)\n");
        assert_eq!(extract_code("<code>\n  \n</code>"), "");
    }

    #[test]
    fn markdown_artefacts_go() {
        let s = clean_markdown(
            "Title: x\n## Problem\n\nYou are **given** an array.\n\n\n\n---\n### Input\n`n` numbers",
        );
        assert_eq!(s, "x\nProblem\n\nYou are given an array.\n\nInput\n`n` numbers");
        assert_eq!(clean_markdown("```\nplain\n```"), "plain");
        assert_eq!(word_count(" a b\nc "), 3);
    }
}
