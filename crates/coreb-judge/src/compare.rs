//! Output comparison: does a program's output match the expected output?
//!
//! - stdin tests ([`outputs_match`]): CRLF and surrounding whitespace do not matter; else the
//!   outputs are split on whitespace into the same number of tokens, compared pairwise.
//!   Equal text matches. Numbers match when equal as decimals (`5` and `5.0`, `1e3` and
//!   `1000`); beyond that, **integer tokens compare exactly, whatever their size** (a wrong
//!   answer near 10^20 is wrong, though f64 cannot tell it from the right one), and only a
//!   non-integer expected number allows a difference of 1e-6, absolute or relative.
//! - functional (LeetCode) tests ([`functional_outputs_match`]): the text rule, else both
//!   sides as JSON values with the same number rule (so `[1, 2]` matches `[1,2]`), numbers
//!   kept as written (never through f64 first).
//!
//! - a problem whose statement says its answer may be in any order
//!   ([`coreb_data::problem::AnswerKind::Unordered`]) is compared as a multiset
//!   ([`unordered_outputs_match`]): a functional answer's top-level JSON array element for
//!   element in any order, a stdin answer's lines (or, on one line, its tokens) in any order;
//!   each element, line or token by the rules above;
//! - a problem whose statement says the judge ignores letter case
//!   ([`coreb_data::problem::AnswerKind::AnyCase`]) is compared by the rules above with both
//!   sides' letters lower-cased (`yes` matches `Yes`, `No` still does not).
//!
//! [`answers_match`] picks the rule.
//!
//! LiveCodeBench compares stdin tokens as Python `Decimal`s, exactly; the 1e-6 tolerance for
//! non-integers is coreb's, for solutions printing floating-point results with
//! another number of digits.

use coreb_data::problem::{AnswerKind, TestType};

/// Does the program's output match the expected output of a test of this type, compared as a
/// problem of this kind of answer asks? (`AnyOfSeveral` problems are not judged: `filter`
/// drops them; compared exactly here.)
pub fn answers_match(answer: AnswerKind, testtype: TestType, expected: &str, actual: &str) -> bool {
    match (answer, testtype) {
        (AnswerKind::AnyCase, _) => answers_match(
            AnswerKind::Exact,
            testtype,
            &expected.to_lowercase(),
            &actual.to_lowercase(),
        ),
        (AnswerKind::Unordered, _) => unordered_outputs_match(testtype, expected, actual),
        (_, TestType::Stdin) => outputs_match(expected, actual),
        (_, TestType::Functional) => functional_outputs_match(expected, actual),
    }
}

/// The multiset comparison of an answer that may be in any order: the exact rule first, then
/// a functional answer's top-level JSON array, or a stdin answer's lines (its tokens when both
/// are one line), matched one to one in any order.
pub fn unordered_outputs_match(testtype: TestType, expected: &str, actual: &str) -> bool {
    match testtype {
        TestType::Functional => {
            if functional_outputs_match(expected, actual) {
                return true;
            }
            match (json::parse(expected.trim()), json::parse(actual.trim())) {
                (Some(json::Value::Array(e)), Some(json::Value::Array(a))) => {
                    same_multiset(&e, &a, json_match)
                }
                _ => false,
            }
        }
        TestType::Stdin => {
            if outputs_match(expected, actual) {
                return true;
            }
            let lines = |s: &str| -> Vec<String> {
                s.trim().lines().map(|l| l.trim().to_owned()).filter(|l| !l.is_empty()).collect()
            };
            let (e, a) = (lines(expected), lines(actual));
            if e.len() == 1 && a.len() == 1 {
                let tokens = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
                return same_multiset(&tokens(&e[0]), &tokens(&a[0]), |x, y| tokens_match(x, y));
            }
            same_multiset(&e, &a, |x, y| outputs_match(x, y))
        }
    }
}

/// Can every expected item be matched to its own actual item? Greedy: each expected item
/// takes the first actual item still free that it matches (the rules are equalities up to
/// number formatting and a 1e-6 tolerance, so greedy finds a matching whenever one exists
/// but for values within the tolerance of two others).
fn same_multiset<T>(expected: &[T], actual: &[T], matches: impl Fn(&T, &T) -> bool) -> bool {
    if expected.len() != actual.len() {
        return false;
    }
    let mut taken = vec![false; actual.len()];
    expected.iter().all(|e| {
        let free = (0..actual.len()).find(|&i| !taken[i] && matches(e, &actual[i]));
        free.map(|i| taken[i] = true).is_some()
    })
}

/// The canonical form of an output, as the judge compares outputs of a test of this type and
/// kind of answer: two outputs that match each other by [`answers_match`] (but for the 1e-6
/// tolerance of non-integers) have the same form. A stdin output: its tokens, each number in
/// one spelling (`5.0` and `5` alike), one space between them (an unordered answer: a line
/// break between lines, whose multiset it is compared as);
/// a functional output: its JSON value with numbers so spelled and no whitespace (a text that
/// is not JSON: as stdin); an unordered answer's lines (or one line's tokens, or a top-level
/// array's elements) sorted; an answer in any letter case lower-cased. What
/// [`coreb_data::verdict::WrongOutput`] digests.
pub fn canonical(answer: AnswerKind, testtype: TestType, output: &str) -> String {
    if answer == AnswerKind::AnyCase {
        return canonical(AnswerKind::Exact, testtype, &output.to_lowercase());
    }
    let unordered = answer == AnswerKind::Unordered;
    if testtype == TestType::Functional
        && let Some(value) = json::parse(output.trim())
    {
        return match value {
            json::Value::Array(items) if unordered => {
                let mut items: Vec<String> = items.iter().map(canonical_json).collect();
                items.sort();
                format!("[{}]", items.join(","))
            }
            value => canonical_json(&value),
        };
    }
    let line = |l: &str| l.split_whitespace().map(canonical_token).collect::<Vec<_>>();
    let mut lines: Vec<Vec<String>> =
        output.trim().lines().map(line).filter(|l| !l.is_empty()).collect();
    if !unordered {
        // The exact rule reads tokens whatever the lines: one line of them.
        return lines.concat().join(" ");
    }
    if let [only] = lines.as_mut_slice() {
        only.sort();
    }
    lines.sort();
    lines.iter().map(|l| l.join(" ")).collect::<Vec<_>>().join("\n")
}

/// One token in canonical form: a number as sign, digits and exponent; anything else as is.
fn canonical_token(token: &str) -> String {
    match Decimal::parse(token) {
        Some(d) if d.digits.is_empty() => "0".to_owned(),
        Some(d) => format!(
            "{}{}e{}",
            if d.negative { "-" } else { "" },
            d.digits.iter().map(|d| char::from(b'0' + d)).collect::<String>(),
            d.exponent
        ),
        None => token.to_owned(),
    }
}

fn canonical_json(value: &json::Value) -> String {
    use json::Value;
    let string = |s: &str| serde_json::to_string(s).unwrap_or_default();
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => canonical_token(n),
        Value::String(s) => string(s),
        Value::Array(items) => {
            format!("[{}]", items.iter().map(canonical_json).collect::<Vec<_>>().join(","))
        }
        Value::Object(fields) => {
            let mut fields: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("{}:{}", string(k), canonical_json(v)))
                .collect();
            fields.sort();
            format!("{{{}}}", fields.join(","))
        }
    }
}

/// Is `actual` laid out as another answer to the test whose expected output is `expected`
/// could be? The expected output holds several items and `actual` as many, alike: a stdin
/// output as many lines, each with as many tokens (two tokens at least in all); a functional
/// output an array as long (two elements at least) or a string as long (two characters at
/// least). A one-item answer (a count, a sum, `Yes`, `true`) never is: two wrong values of it
/// are the usual mark of a wrong algorithm, not of a second answer.
pub fn alternative_layout(testtype: TestType, expected: &str, actual: &str) -> bool {
    if testtype == TestType::Functional {
        match (json::parse(expected.trim()), json::parse(actual.trim())) {
            (Some(json::Value::Array(e)), Some(json::Value::Array(a))) => {
                return e.len() >= 2 && e.len() == a.len();
            }
            (Some(json::Value::String(e)), Some(json::Value::String(a))) => {
                let n = e.chars().count();
                return n >= 2 && n == a.chars().count();
            }
            (Some(_), _) => return false,
            (None, _) => {}
        }
    }
    let shape = |s: &str| -> Vec<usize> {
        s.trim().lines().map(|l| l.split_whitespace().count()).filter(|&n| n > 0).collect()
    };
    let e = shape(expected);
    e.iter().sum::<usize>() >= 2 && e == shape(actual)
}

/// Does the program's output match the expected output of a stdin test?
pub fn outputs_match(expected: &str, actual: &str) -> bool {
    let (e, a) = (expected.trim(), actual.trim());
    if e == a {
        return true;
    }
    let (mut et, mut at) = (e.split_whitespace(), a.split_whitespace());
    loop {
        match (et.next(), at.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) if tokens_match(x, y) => {}
            _ => return false,
        }
    }
}

/// The absolute (or relative) tolerance for non-integer numbers.
const TOLERANCE: f64 = 1e-6;

/// One expected token against one actual token.
fn tokens_match(expected: &str, actual: &str) -> bool {
    if expected == actual {
        return true;
    }
    let (Some(e), Some(a)) = (Decimal::parse(expected), Decimal::parse(actual)) else {
        return false;
    };
    if e.same_value(&a) {
        return true;
    }
    if e.integer_literal {
        return false;
    }
    match (expected.parse::<f64>(), actual.parse::<f64>()) {
        (Ok(x), Ok(y)) if x.is_finite() && y.is_finite() => {
            (x - y).abs() <= TOLERANCE * x.abs().max(1.0)
        }
        _ => false,
    }
}

/// A decimal number in canonical form: sign, significant digits without leading or trailing
/// zeros, and the power of ten of the last digit. Zero has no digits and no sign.
#[derive(Debug)]
struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    exponent: i64,
    /// Written as an integer (no `.`, no exponent): compared exactly.
    integer_literal: bool,
}

impl Decimal {
    /// `[+-]digits[.digits][(e|E)[+-]digits]` (a digit on at least one side of the point);
    /// anything else (`inf`, `nan`, `0x1f`, `1,5`) is not a number.
    fn parse(s: &str) -> Option<Decimal> {
        let b = s.as_bytes();
        let mut i = 0;
        let negative = match b.first() {
            Some(b'-') => {
                i = 1;
                true
            }
            Some(b'+') => {
                i = 1;
                false
            }
            _ => false,
        };
        let mut mantissa: Vec<u8> = Vec::new();
        let mut fraction_digits: i64 = 0;
        let (mut seen_digit, mut seen_point) = (false, false);
        while i < b.len() {
            match b[i] {
                d @ b'0'..=b'9' => {
                    seen_digit = true;
                    if !(mantissa.is_empty() && d == b'0') {
                        mantissa.push(d - b'0');
                    }
                    if seen_point {
                        fraction_digits += 1;
                    }
                }
                b'.' if !seen_point => seen_point = true,
                _ => break,
            }
            i += 1;
        }
        if !seen_digit {
            return None;
        }
        let mut exponent: i64 = 0;
        let has_exponent = i < b.len();
        if has_exponent {
            if !matches!(b[i], b'e' | b'E') {
                return None;
            }
            let rest = &s[i + 1..];
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|c| c.is_ascii_digit())
            {
                return None;
            }
            exponent = rest.parse().ok()?;
        }
        // Leading zeros after the point shift nothing: `mantissa` skipped them but the point
        // position is counted by `fraction_digits`.
        exponent -= fraction_digits;
        while mantissa.last() == Some(&0) {
            mantissa.pop();
            exponent += 1;
        }
        let integer_literal = !seen_point && !has_exponent;
        if mantissa.is_empty() {
            return Some(Decimal {
                negative: false,
                digits: mantissa,
                exponent: 0,
                integer_literal,
            });
        }
        Some(Decimal { negative, digits: mantissa, exponent, integer_literal })
    }

    /// The same number (however it was written).
    fn same_value(&self, other: &Decimal) -> bool {
        self.negative == other.negative
            && self.digits == other.digits
            && self.exponent == other.exponent
    }
}

/// Functional (LeetCode) outputs: the text rule, else equal as JSON values.
pub fn functional_outputs_match(expected: &str, actual: &str) -> bool {
    if outputs_match(expected, actual) {
        return true;
    }
    match (json::parse(expected.trim()), json::parse(actual.trim())) {
        (Some(e), Some(a)) => json_match(&e, &a),
        _ => false,
    }
}

fn json_match(e: &json::Value, a: &json::Value) -> bool {
    use json::Value;
    match (e, a) {
        (Value::Number(x), Value::Number(y)) => tokens_match(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_match(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.iter().find(|(k2, _)| k2 == k).is_some_and(|(_, w)| json_match(v, w))
                })
        }
        _ => e == a,
    }
}

/// A JSON reader that keeps numbers as written (serde_json would turn integers past 2^64 into
/// f64 and lose exactly the digits a wrong answer differs in).
mod json {
    /// A JSON value; numbers as their text.
    #[derive(Debug, PartialEq)]
    pub(super) enum Value {
        Null,
        Bool(bool),
        Number(String),
        String(String),
        Array(Vec<Value>),
        Object(Vec<(String, Value)>),
    }

    /// Parse one complete JSON text (nothing but whitespace after it).
    pub(super) fn parse(text: &str) -> Option<Value> {
        let mut p = Parser { s: text.as_bytes(), i: 0, text };
        let v = p.value(0)?;
        p.ws();
        (p.i == p.s.len()).then_some(v)
    }

    struct Parser<'a> {
        s: &'a [u8],
        i: usize,
        text: &'a str,
    }

    impl Parser<'_> {
        fn ws(&mut self) {
            while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
                self.i += 1;
            }
        }

        fn eat(&mut self, lit: &str) -> bool {
            if self.s[self.i..].starts_with(lit.as_bytes()) {
                self.i += lit.len();
                true
            } else {
                false
            }
        }

        fn value(&mut self, depth: usize) -> Option<Value> {
            if depth > 512 {
                return None;
            }
            self.ws();
            match *self.s.get(self.i)? {
                b'n' if self.eat("null") => Some(Value::Null),
                b't' if self.eat("true") => Some(Value::Bool(true)),
                b'f' if self.eat("false") => Some(Value::Bool(false)),
                b'"' => self.string().map(Value::String),
                b'[' => {
                    self.i += 1;
                    let mut items = Vec::new();
                    self.ws();
                    if self.eat("]") {
                        return Some(Value::Array(items));
                    }
                    loop {
                        items.push(self.value(depth + 1)?);
                        self.ws();
                        if self.eat("]") {
                            return Some(Value::Array(items));
                        }
                        if !self.eat(",") {
                            return None;
                        }
                    }
                }
                b'{' => {
                    self.i += 1;
                    let mut fields = Vec::new();
                    self.ws();
                    if self.eat("}") {
                        return Some(Value::Object(fields));
                    }
                    loop {
                        self.ws();
                        let key = self.string()?;
                        self.ws();
                        if !self.eat(":") {
                            return None;
                        }
                        fields.push((key, self.value(depth + 1)?));
                        self.ws();
                        if self.eat("}") {
                            return Some(Value::Object(fields));
                        }
                        if !self.eat(",") {
                            return None;
                        }
                    }
                }
                b'-' | b'0'..=b'9' => {
                    let start = self.i;
                    while self.i < self.s.len()
                        && matches!(self.s[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                    {
                        self.i += 1;
                    }
                    let number = &self.text[start..self.i];
                    super::Decimal::parse(number).map(|_| Value::Number(number.to_owned()))
                }
                _ => None,
            }
        }

        /// A string literal, unescaped (serde_json decodes the escapes).
        fn string(&mut self) -> Option<String> {
            if self.s.get(self.i) != Some(&b'"') {
                return None;
            }
            let start = self.i;
            self.i += 1;
            while self.i < self.s.len() {
                match self.s[self.i] {
                    b'\\' => self.i += 2,
                    b'"' => {
                        self.i += 1;
                        return serde_json::from_str(self.text.get(start..self.i)?).ok();
                    }
                    _ => self.i += 1,
                }
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_whitespace_rules() {
        assert!(outputs_match("Yes\r\n", "Yes\n\n"));
        assert!(outputs_match("1 2\n3", "1   2 3"));
        assert!(outputs_match("1 2\r\n3\r\n", "1 2\n3"));
        assert!(!outputs_match("1 2", "1 2 3"));
        assert!(!outputs_match("Yes", "yes"));
        assert!(!outputs_match("inf", "nan"));
        assert!(!outputs_match("", "0"));
    }

    #[test]
    fn integers_compare_exactly_whatever_their_size() {
        // Issue #12: through f64 these two are the same number.
        assert!(!outputs_match("123456789987197523861", "123456789987197523860"));
        assert!(!outputs_match("123456789987197523861", "123456789987197523860.0"));
        assert!(!outputs_match("9007199254740993", "9007199254740992"));
        assert!(!outputs_match("1000000", "1000000.5"));
        assert!(!outputs_match("2", "2.0000001"));
        assert!(outputs_match("123456789987197523861", "123456789987197523861"));
        // Equal as decimals: the same number written differently.
        assert!(outputs_match("5", "5.0"));
        assert!(outputs_match("007", "7"));
        assert!(outputs_match("-0", "0"));
        assert!(outputs_match("1000", "1e3"));
        assert!(outputs_match("12345678901234567890123", "1.2345678901234567890123E22"));
    }

    #[test]
    fn non_integers_allow_1e6() {
        assert!(outputs_match("0.3333333", "0.33333333"));
        assert!(outputs_match("1.5", "1.5000004"));
        assert!(!outputs_match("1.5", "1.500002"));
        assert!(!outputs_match("0.33", "0.34"));
        // Relative for large values.
        assert!(outputs_match("123456789.5", "123456789.50001"));
        assert!(!outputs_match("0.5", "nan"));
        assert!(!outputs_match("0.5", "inf"));
    }

    #[test]
    fn decimal_canonical_form() {
        let d = |s: &str| {
            Decimal::parse(s).map(|d| (d.negative, d.digits, d.exponent, d.integer_literal))
        };
        assert_eq!(d("120"), Some((false, vec![1, 2], 1, true)));
        assert_eq!(d("-0.0120"), Some((true, vec![1, 2], -3, false)));
        assert_eq!(d("+1.2e3"), Some((false, vec![1, 2], 2, false)));
        assert_eq!(d("0.000"), Some((false, vec![], 0, false)));
        assert_eq!(d(".5"), Some((false, vec![5], -1, false)));
        assert_eq!(d("5."), Some((false, vec![5], 0, false)));
        for bad in ["", "-", ".", "1e", "1e+", "e5", "0x10", "1,5", "1.2.3", "1e9999999999", "12a"]
        {
            assert_eq!(d(bad), None, "{bad}");
        }
        assert!(Decimal::parse("1.50").unwrap().same_value(&Decimal::parse("15e-1").unwrap()));
    }

    #[test]
    fn unordered_answers_compare_as_multisets() {
        use AnswerKind::{Exact, Unordered};
        use TestType::{Functional, Stdin};
        assert!(answers_match(Unordered, Functional, "[0, 1]", "[1,0]"));
        assert!(answers_match(Unordered, Functional, "[[1,2],[3]]", "[[3], [1, 2]]"));
        // Only the top level is unordered; the counts of equal elements must agree.
        assert!(!answers_match(Unordered, Functional, "[[1,2]]", "[[2,1]]"));
        assert!(!answers_match(Unordered, Functional, "[1,1,2]", "[1,2,2]"));
        assert!(!answers_match(Unordered, Functional, "[1,2]", "[1,2,3]"));
        assert!(!answers_match(Unordered, Functional, "[0, 1]", "[0, 2]"));
        assert!(answers_match(Unordered, Functional, "[\"a\",\"b\"]", "[\"b\", \"a\"]"));
        // Exact problems keep today's rule.
        assert!(!answers_match(Exact, Functional, "[0, 1]", "[1,0]"));
        assert!(answers_match(Exact, Functional, "[0, 1]", "[0,1]"));
        // stdin: lines in any order, or one line's tokens.
        assert!(answers_match(Unordered, Stdin, "1 2\n3 4\n", "3 4\n1 2"));
        assert!(answers_match(Unordered, Stdin, "1 2 3", "3 1 2"));
        assert!(!answers_match(Unordered, Stdin, "1 2\n3 4", "2 1\n3 4"));
        assert!(!answers_match(Unordered, Stdin, "1 2 3", "3 1 1"));
        assert!(!answers_match(Exact, Stdin, "1 2 3", "3 1 2"));
        assert!(answers_match(Unordered, Stdin, "0.5 2", "2 0.5000001"));
    }

    #[test]
    fn any_case_answers_ignore_letter_case() {
        use AnswerKind::{AnyCase, Exact};
        use TestType::{Functional, Stdin};
        assert!(answers_match(AnyCase, Stdin, "Yes\n", "yes"));
        assert!(answers_match(AnyCase, Stdin, "Fennec", "fEnNeC\n"));
        assert!(answers_match(AnyCase, Stdin, "Yes\n1 2", "YES\n1 2.0"));
        assert!(!answers_match(AnyCase, Stdin, "Yes", "No"));
        assert!(!answers_match(AnyCase, Stdin, "Yes\n1 2", "yes\n1 3"));
        assert!(!answers_match(Exact, Stdin, "Yes", "yes"));
        assert!(answers_match(AnyCase, Functional, "\"Yes\"", "\"yEs\""));
        assert_eq!(canonical(AnyCase, Stdin, "YES 1"), canonical(AnyCase, Stdin, "yes 1"));
    }

    #[test]
    fn canonical_forms_are_equal_for_outputs_that_match() {
        use AnswerKind::{Exact, Unordered};
        use TestType::{Functional, Stdin};
        let same = |a, t, x, y| canonical(a, t, x) == canonical(a, t, y);
        assert!(same(Exact, Stdin, "1 2\r\n3\n", "  1   2\n3"));
        assert!(same(Exact, Stdin, "5.0 x", "5 x"));
        assert!(same(Exact, Stdin, "-0", "0"));
        assert!(!same(Exact, Stdin, "1 2", "2 1"));
        assert!(same(Exact, Stdin, "1 2\n3", "1\n2 3"));
        assert!(!same(Exact, Stdin, "Yes", "yes"));
        assert!(same(Exact, Functional, "[1, 2.50]", "[1,2.5]\n"));
        assert!(same(Exact, Functional, "{\"a\": 1, \"b\": 2}", "{\"b\":2,\"a\":1}"));
        assert!(same(Exact, Functional, "\"A\"", "\"\\u0041\""));
        assert!(!same(Exact, Functional, "[1, 2]", "[2, 1]"));
        assert!(same(Unordered, Functional, "[1, 2]", "[2, 1]"));
        assert!(same(Unordered, Stdin, "1 2\n3 4", "3 4\n1 2"));
        assert!(same(Unordered, Stdin, "1 2 3", "3 1 2"));
        assert!(!same(Unordered, Stdin, "1 2\n3 4", "2 1\n3 4"));
        // Large integers keep every digit.
        assert!(!same(Exact, Stdin, "123456789987197523861", "123456789987197523860"));
    }

    #[test]
    fn alternative_layouts() {
        use TestType::{Functional, Stdin};
        assert!(alternative_layout(Stdin, "1 3 2\n", "2 1 3"));
        assert!(alternative_layout(Stdin, "Yes\n1 2", "Yes\n2 1\n"));
        assert!(!alternative_layout(Stdin, "Yes\n1 2", "No"));
        assert!(!alternative_layout(Stdin, "1 2 3", "1 2"));
        assert!(!alternative_layout(Stdin, "1 2\n3", "1\n2 3"));
        // One item: a count, a sum, Yes/No.
        assert!(!alternative_layout(Stdin, "42", "41"));
        assert!(!alternative_layout(Stdin, "Yes", "No"));
        assert!(alternative_layout(Functional, "[0, 1]", "[1,2]"));
        assert!(!alternative_layout(Functional, "[0, 1]", "[1]"));
        assert!(!alternative_layout(Functional, "[0]", "[1]"));
        assert!(alternative_layout(Functional, "\"abc\"", "\"bca\""));
        assert!(!alternative_layout(Functional, "\"abc\"", "\"bc\""));
        assert!(!alternative_layout(Functional, "7", "8"));
        assert!(!alternative_layout(Functional, "true", "false"));
    }

    #[test]
    fn functional_outputs_as_json() {
        assert!(functional_outputs_match("[-3,-1,1,3,5]", "[-3, -1, 1, 3, 5]\n"));
        assert!(functional_outputs_match("1.5", "1.5000001"));
        assert!(!functional_outputs_match("[1,2]", "[2,1]"));
        assert!(functional_outputs_match("\"abc\"", "\"abc\""));
        assert!(functional_outputs_match("\"A\"", "\"\\u0041\""));
        assert!(functional_outputs_match(
            "{\"a\": 1, \"b\": [true, null]}",
            "{\"b\":[true,null],\"a\":1}"
        ));
        assert!(!functional_outputs_match("[123456789987197523861]", "[123456789987197523860]"));
        assert!(!functional_outputs_match("[1]", "[1] x"));
        assert!(!functional_outputs_match("[1]", "[1"));
        // Identical text matches, JSON or not.
        assert!(functional_outputs_match("[1", "[1"));
        assert!(!functional_outputs_match("true", "1"));
    }
}
