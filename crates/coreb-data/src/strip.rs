//! Language-aware comment stripping: a code document holds the solution only (the reference's "no comments, no docstrings" rule, enforced rather than hoped for).
//!
//! [`strip_comments`] removes comments with a small lexer per language that knows the
//! language's string and character literals, so a `//` or `#` inside a string stays:
//!
//! - C++: `//` and `/* */`; strings, character literals and raw strings `R"d(…)d"`;
//!   preprocessor lines (`#include`, `#define`) are code and stay.
//! - Java: `//`, `/* */` and Javadoc; strings, text blocks `"""…"""`, character literals.
//! - Go: `//` and `/* */`; interpreted strings, raw strings `` `…` ``, runes.
//! - Python: `#` (shebang and coding lines included) and docstrings: a string literal that is
//!   a whole statement (nothing else on its lines, outside brackets) is removed; a block left
//!   empty gets `pass`. A string used as a value (`x = """…"""`, an argument) stays.
//! - Ruby: `#`, `=begin`/`=end` blocks at the start of a line; single- and double-quoted
//!   strings, `#{…}` interpolation (its code is lexed as code), `?#` character literals,
//!   `%w`/`%q`/`%Q`/`%i` literals, and everything after `__END__` (data, not code) stays.
//!
//! A line that held only a comment is removed; a line with code and a comment keeps its code,
//! trailing whitespace trimmed; an inline block comment between two tokens becomes a space.
//! Code without comments is returned unchanged, byte for byte, so [`has_comments`] is exactly
//! "stripping changes it". The stripper never fails: unterminated literals or comments run to
//! the end of the text (the compiler reports them; `execute` runs the stripped code).

use crate::solution::Language;

/// Marks the place of a removed comment (never in real source text).
const GAP: char = '\u{0}';
/// Marks the place of a removed Python docstring (its line may need `pass`).
const DOC: char = '\u{1}';

/// `code` without its comments (and, for Python, docstrings).
pub fn strip_comments(code: &str, language: Language) -> String {
    if code.contains(GAP) || code.contains(DOC) {
        // Not source text we can mark safely; leave it alone.
        return code.to_owned();
    }
    let chars: Vec<char> = code.chars().collect();
    let mut lexer = Lexer { s: &chars, i: 0, out: String::with_capacity(code.len()) };
    match language {
        Language::Cpp | Language::Java | Language::Go => lexer.c_like(language),
        Language::Python => lexer.python(),
        Language::Ruby => lexer.ruby(false),
    }
    if !lexer.out.contains(GAP) && !lexer.out.contains(DOC) {
        return code.to_owned();
    }
    tidy(&lexer.out)
}

/// Does `code` hold a comment (or a Python docstring)?
pub fn has_comments(code: &str, language: Language) -> bool {
    strip_comments(code, language) != code
}

struct Lexer<'a> {
    s: &'a [char],
    i: usize,
    out: String,
}

impl Lexer<'_> {
    fn at(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    fn starts(&self, pat: &str) -> bool {
        pat.chars().enumerate().all(|(k, c)| self.at(k) == Some(c))
    }

    fn take(&mut self) {
        if let Some(c) = self.at(0) {
            self.out.push(c);
            self.i += 1;
        }
    }

    fn take_n(&mut self, n: usize) {
        for _ in 0..n {
            self.take();
        }
    }

    /// Skip to the end of the line (the newline stays).
    fn line_comment(&mut self) {
        while let Some(c) = self.at(0) {
            if c == '\n' {
                break;
            }
            self.i += 1;
        }
        self.out.push(GAP);
    }

    /// Skip a block comment that ends with `end`; a multi-line one leaves one newline.
    fn block_comment(&mut self, open: usize, end: &str) {
        self.i += open;
        let mut newline = false;
        while self.at(0).is_some() && !self.starts(end) {
            newline |= self.at(0) == Some('\n');
            self.i += 1;
        }
        self.i = (self.i + end.chars().count()).min(self.s.len());
        self.out.push(GAP);
        if newline {
            // Keep the line structure of the code after it; the gap lines are dropped.
            self.out.push('\n');
            self.out.push(GAP);
        }
    }

    /// Copy a quoted literal opened by `quote` (already at `self.i`), with backslash escapes.
    fn quoted(&mut self, quote: char, multiline: bool) {
        self.take();
        while let Some(c) = self.at(0) {
            if c == '\\' {
                self.take_n(2);
            } else if c == quote {
                self.take();
                return;
            } else if c == '\n' && !multiline {
                return;
            } else {
                self.take();
            }
        }
    }

    /// Copy until `end` (inclusive), no escapes.
    fn raw_until(&mut self, skip: usize, end: &str) {
        self.take_n(skip);
        while self.at(0).is_some() && !self.starts(end) {
            self.take();
        }
        self.take_n(end.chars().count());
    }

    fn prev_is_ident(&self) -> bool {
        self.i > 0 && (self.s[self.i - 1].is_alphanumeric() || self.s[self.i - 1] == '_')
    }

    fn c_like(&mut self, language: Language) {
        while let Some(c) = self.at(0) {
            if self.starts("//") {
                self.line_comment();
            } else if self.starts("/*") {
                self.block_comment(2, "*/");
            } else if language == Language::Java && self.starts("\"\"\"") {
                self.raw_until(3, "\"\"\"");
            } else if language == Language::Cpp
                && c == 'R'
                && self.at(1) == Some('"')
                && !self.prev_is_ident()
            {
                // R"delim( … )delim"
                let mut k = 2;
                let mut delim = String::new();
                while let Some(d) = self.at(k) {
                    if d == '(' || d == '\n' || k > 18 {
                        break;
                    }
                    delim.push(d);
                    k += 1;
                }
                if self.at(k) == Some('(') {
                    self.raw_until(k + 1, &format!("){delim}\""));
                } else {
                    self.take();
                }
            } else if language == Language::Go && c == '`' {
                self.raw_until(1, "`");
            } else if c == '"' {
                self.quoted('"', false);
            } else if c == '\'' {
                // C++14 digit separators (1'000'000) are not character literals.
                if language == Language::Cpp
                    && self.i > 0
                    && self.s[self.i - 1].is_ascii_hexdigit()
                    && self.at(1).is_some_and(|d| d.is_ascii_hexdigit())
                {
                    self.take();
                } else {
                    self.quoted('\'', false);
                }
            } else {
                self.take();
            }
        }
    }

    fn python(&mut self) {
        // Bracket depth and whether the current logical line has code before this point.
        let mut depth = 0usize;
        let mut line_has_code = false;
        let mut continued = false;
        while let Some(c) = self.at(0) {
            match c {
                '#' => self.line_comment(),
                '\n' => {
                    if depth == 0 && !continued {
                        line_has_code = false;
                    }
                    continued = false;
                    self.take();
                }
                '\\' if self.at(1) == Some('\n') => {
                    continued = true;
                    self.take();
                }
                '(' | '[' | '{' => {
                    depth += 1;
                    line_has_code = true;
                    self.take();
                }
                ')' | ']' | '}' => {
                    depth = depth.saturating_sub(1);
                    line_has_code = true;
                    self.take();
                }
                c if c == ' ' || c == '\t' || c == '\r' => self.take(),
                _ => {
                    if let Some((prefix, quote, triple)) = self.python_string_start() {
                        let start = self.i;
                        let mark = self.out.len();
                        self.take_n(prefix);
                        if triple {
                            let q: String = std::iter::repeat_n(quote, 3).collect();
                            self.take_n(3);
                            while self.at(0).is_some() && !self.starts(&q) {
                                if self.at(0) == Some('\\') {
                                    self.take();
                                }
                                self.take();
                            }
                            self.take_n(3);
                        } else {
                            self.quoted(quote, false);
                        }
                        // A docstring: a string that is a whole statement on its own lines.
                        if !line_has_code
                            && depth == 0
                            && self.rest_of_line_is_blank()
                            && self.line_before_is_blank(start)
                        {
                            self.out.truncate(mark);
                            while self.at(0).is_some_and(|c| c != '\n' && c != '#') {
                                self.i += 1;
                            }
                            self.out.push(DOC);
                        }
                        line_has_code = true;
                    } else {
                        line_has_code = true;
                        // Copy a whole identifier so that a prefix letter inside one is not a string prefix.
                        if c.is_alphanumeric() || c == '_' {
                            while self.at(0).is_some_and(|c| c.is_alphanumeric() || c == '_') {
                                self.take();
                            }
                        } else {
                            self.take();
                        }
                    }
                }
            }
        }
    }

    /// At a Python string literal? (prefix length, quote, triple-quoted)
    fn python_string_start(&self) -> Option<(usize, char, bool)> {
        let mut k = 0;
        while k < 2 && self.at(k).is_some_and(|c| "rRbBuUfF".contains(c)) {
            k += 1;
        }
        let quote = self.at(k).filter(|&c| c == '"' || c == '\'')?;
        let triple = self.at(k + 1) == Some(quote) && self.at(k + 2) == Some(quote);
        Some((k, quote, triple))
    }

    fn rest_of_line_is_blank(&self) -> bool {
        let mut k = 0;
        while let Some(c) = self.at(k) {
            match c {
                '\n' | '#' => return true,
                ' ' | '\t' | '\r' => k += 1,
                _ => return false,
            }
        }
        true
    }

    fn line_before_is_blank(&self, start: usize) -> bool {
        self.s[..start].iter().rev().take_while(|&&c| c != '\n').all(|c| c.is_whitespace())
    }

    fn at_line_start(&self) -> bool {
        self.i == 0 || self.s[self.i - 1] == '\n'
    }

    /// Ruby code; in interpolation mode, stops after the `}` that closes `#{`.
    fn ruby(&mut self, interpolation: bool) {
        let mut braces = 0usize;
        while let Some(c) = self.at(0) {
            if self.at_line_start()
                && self.starts("=begin")
                && self.at(6).is_none_or(char::is_whitespace)
            {
                // Up to and including the `=end` line.
                while self.at(0).is_some()
                    && !(self.at_line_start()
                        && self.starts("=end")
                        && self.at(4).is_none_or(char::is_whitespace))
                {
                    self.i += 1;
                }
                while self.at(0).is_some_and(|c| c != '\n') {
                    self.i += 1;
                }
                self.out.push(GAP);
            } else if self.at_line_start()
                && self.starts("__END__")
                && self.at(7).is_none_or(|c| c == '\n' || c == '\r')
            {
                while self.at(0).is_some() {
                    self.take();
                }
            } else if c == '#' {
                self.line_comment();
            } else if c == '"' || c == '`' {
                self.ruby_delimited(c, c, true);
            } else if c == '\'' {
                self.quoted('\'', true);
            } else if c == '?'
                && self.at(1).is_some_and(|d| !d.is_whitespace())
                && self.at(2).is_none_or(|d| !(d.is_alphanumeric() || d == '_'))
                && !self.prev_is_ident()
                && self.i > 0
                && !matches!(self.s[self.i - 1], ')' | ']')
            {
                // A character literal such as ?# or ?a (not the ternary `x ? a : b`).
                self.take_n(2);
            } else if c == '%'
                && !self.prev_is_ident()
                && !(self.i > 0 && matches!(self.s[self.i - 1], ')' | ']' | '}'))
                && self.percent_literal()
            {
                // handled
            } else if c == '{' {
                braces += 1;
                self.take();
            } else if c == '}' {
                if interpolation && braces == 0 {
                    self.take();
                    return;
                }
                braces = braces.saturating_sub(1);
                self.take();
            } else {
                self.take();
            }
        }
    }

    /// A delimited Ruby literal from its opening `open` to the matching `close` (nested pairs
    /// counted where they differ); with `interpolate`, `#{…}` inside is lexed as code (double
    /// quotes, backticks, `%Q`, `%W`, `%I`, `%(…)`).
    fn ruby_delimited(&mut self, open: char, close: char, interpolate: bool) {
        self.take();
        let mut nest = 0usize;
        while let Some(c) = self.at(0) {
            if c == '\\' {
                self.take_n(2);
            } else if interpolate && c == '#' && self.at(1) == Some('{') {
                self.take_n(2);
                self.ruby(true);
            } else if c == open && open != close {
                nest += 1;
                self.take();
            } else if c == close {
                self.take();
                if nest == 0 {
                    return;
                }
                nest -= 1;
            } else {
                self.take();
            }
        }
    }

    /// `%w[…]`, `%i(…)`, `%q{…}`, `%Q<…>`, `%(…)`: copied whole; returns false if not one.
    fn percent_literal(&mut self) -> bool {
        let (kind, at) = match self.at(1) {
            Some(k) if "wWiIqQ".contains(k) => (Some(k), 2),
            _ => (None, 1),
        };
        let Some(open) = self.at(at) else {
            return false;
        };
        let close = match open {
            '(' => ')',
            '[' => ']',
            '{' => '}',
            '<' => '>',
            '|' | '!' | '/' if kind.is_some() => open,
            _ => return false,
        };
        self.take_n(at);
        self.ruby_delimited(open, close, matches!(kind, None | Some('Q' | 'W' | 'I')));
        true
    }
}

/// Turn the marks into the final text: drop lines that held only comments, trim the rest,
/// and give a Python block left empty by a removed docstring a `pass`.
fn tidy(marked: &str) -> String {
    let indent = |l: &str| l.len() - l.trim_start().len();
    // (text, removed, docstring)
    let mut lines: Vec<(String, bool, bool)> = Vec::new();
    for line in marked.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        let body = body.strip_suffix('\r').unwrap_or(body);
        let marked_gap = body.contains(GAP) || body.contains(DOC);
        let doc = body.contains(DOC);
        let mut text = String::with_capacity(body.len());
        let bytes: Vec<char> = body.chars().collect();
        for (k, &c) in bytes.iter().enumerate() {
            if c == GAP || c == DOC {
                let before = text.chars().last().is_some_and(|p| !p.is_whitespace());
                let after =
                    bytes.get(k + 1).is_some_and(|n| !n.is_whitespace() && *n != GAP && *n != DOC);
                if before && after {
                    text.push(' ');
                }
            } else {
                text.push(c);
            }
        }
        if marked_gap {
            let trimmed = text.trim_end().to_owned();
            let empty = trimmed.trim().is_empty();
            lines.push((if empty { String::new() } else { trimmed }, empty, doc && empty));
        } else {
            lines.push((line.strip_suffix('\n').unwrap_or(line).to_owned(), false, false));
        }
    }
    // Python: a docstring that was a block's only statement becomes `pass`.
    for k in 0..lines.len() {
        if !lines[k].2 {
            continue;
        }
        let prev = lines[..k].iter().rev().find(|l| !l.1 && !l.0.trim().is_empty());
        let opens_block = prev.is_some_and(|p| p.0.trim_end().ends_with(':'));
        if !opens_block {
            continue;
        }
        let prev_indent = indent(&prev.unwrap().0);
        let next = lines[k + 1..].iter().find(|l| !l.1 && !l.0.trim().is_empty());
        if next.is_none_or(|n| indent(&n.0) <= prev_indent) {
            // The docstring's own indentation: the block's.
            let own = marked.lines().nth(k).map(indent).unwrap_or(prev_indent + 4);
            lines[k] = (format!("{}pass", " ".repeat(own)), false, false);
        }
    }
    let ends_with_newline = marked.ends_with('\n');
    let kept: Vec<&str> = lines.iter().filter(|l| !l.1).map(|l| l.0.as_str()).collect();
    let mut out = kept.join("\n");
    if ends_with_newline && !kept.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(code: &str, l: Language) -> String {
        strip_comments(code, l)
    }

    #[test]
    fn cpp_keeps_includes_strings_and_chars() {
        let code = "#include <bits/stdc++.h>\n// read input\nusing namespace std; /* block\n spanning */\nint main() {\n    string s = \"a // b /* c */\"; // trailing\n    char c = '/'; int x = 1'000; /* inline */ int y = 2;\n    auto r = R\"(raw // kept)\";\n    cout << s << c << x/*gap*/+y << r;\n}\n";
        let want = "#include <bits/stdc++.h>\nusing namespace std;\nint main() {\n    string s = \"a // b /* c */\";\n    char c = '/'; int x = 1'000;  int y = 2;\n    auto r = R\"(raw // kept)\";\n    cout << s << c << x +y << r;\n}\n";
        assert_eq!(strip(code, Language::Cpp), want);
        assert!(has_comments(code, Language::Cpp));
        assert!(!has_comments(want, Language::Cpp));
    }

    #[test]
    fn java_drops_javadoc_keeps_text_blocks() {
        let code = "import java.util.*;\n/**\n * Solution.\n */\npublic class Main {\n    static String t = \"\"\"\n        // not a comment\n        \"\"\";\n    public static void main(String[] a) { System.out.println(\"http://x\"); } // done\n}\n";
        let want = "import java.util.*;\npublic class Main {\n    static String t = \"\"\"\n        // not a comment\n        \"\"\";\n    public static void main(String[] a) { System.out.println(\"http://x\"); }\n}\n";
        assert_eq!(strip(code, Language::Java), want);
    }

    #[test]
    fn go_keeps_raw_strings_and_runes() {
        let code = "package main\n\nimport \"fmt\" // fmt\n\nfunc main() {\n\t// say it\n\ts := `a // b`\n\tr := '/'\n\tfmt.Println(s, r, \"/* no */\")\n}\n";
        let want = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\ts := `a // b`\n\tr := '/'\n\tfmt.Println(s, r, \"/* no */\")\n}\n";
        assert_eq!(strip(code, Language::Go), want);
    }

    #[test]
    fn python_docstrings_vs_strings() {
        let code = "#!/usr/bin/env python3\nimport sys\n\"\"\"Module doc.\"\"\"\n\ndef f(x):\n    \"\"\"Only a docstring.\"\"\"\n\ndef g(x):\n    '''Doc\n    on lines.'''\n    s = \"# not a comment\"  # a comment\n    t = \"\"\"kept: a value\"\"\"\n    print(s, t, f\"{x}#\", sep='#')\n    return (\n        \"kept: inside brackets\"\n    )\n";
        let want = "import sys\n\ndef f(x):\n    pass\n\ndef g(x):\n    s = \"# not a comment\"\n    t = \"\"\"kept: a value\"\"\"\n    print(s, t, f\"{x}#\", sep='#')\n    return (\n        \"kept: inside brackets\"\n    )\n";
        assert_eq!(strip(code, Language::Python), want);
        assert!(!has_comments("x = 'a#b'\nprint(x)\n", Language::Python));
    }

    #[test]
    fn ruby_begin_end_interpolation_and_char_literals() {
        let code = "# frozen\n=begin\nblock comment\n=end\nn = gets.to_i # count\nputs \"#{n} # kept #{ {a: 1}[:a] }\"\nputs 'single # kept'\nputs %w[a#b c].join(?#)\nx = n > 0 ? 1 : 2 # tern\n__END__\n# data, kept\n";
        let want = "n = gets.to_i\nputs \"#{n} # kept #{ {a: 1}[:a] }\"\nputs 'single # kept'\nputs %w[a#b c].join(?#)\nx = n > 0 ? 1 : 2\n__END__\n# data, kept\n";
        assert_eq!(strip(code, Language::Ruby), want);
    }

    #[test]
    fn code_without_comments_is_unchanged_byte_for_byte() {
        for (code, l) in [
            ("int main(){return 0;}", Language::Cpp),
            ("print('x')\r\n", Language::Python),
            ("puts 1\n\n\nputs 2", Language::Ruby),
            ("package main\nfunc main(){}\n", Language::Go),
        ] {
            assert_eq!(strip(code, l), code);
        }
    }
}
