//! The word-level diff of two texts: the longest common subsequence of their tokens (runs of
//! letters and digits, runs of white space, any other character alone), as segments kept,
//! removed (only in the first) and added (only in the second).
//!
//! The common prefix and suffix are cut first; when what is left would need more than
//! [`MAX_CELLS`] table cells, the middle is reported as one removal and one addition.

use serde::Serialize;

/// Largest LCS table (tokens × tokens) computed.
const MAX_CELLS: usize = 16_000_000;

/// A run of tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Segment {
    /// `=` in both, `-` only in the first text, `+` only in the second.
    pub(crate) op: char,
    /// The text.
    pub(crate) text: String,
}

/// Split into tokens.
pub(crate) fn tokens(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let class = |c: char| {
        if c.is_alphanumeric() || c == '_' {
            0
        } else if c.is_whitespace() {
            1
        } else {
            2
        }
    };
    let mut prev: Option<u8> = None;
    for (i, c) in s.char_indices() {
        let k = class(c);
        if prev.is_some_and(|p| p != k || k == 2) {
            out.push(&s[start..i]);
            start = i;
        }
        prev = Some(k);
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// The segments turning `a` into `b`, adjacent runs of one kind merged.
pub(crate) fn word_diff(a: &str, b: &str) -> Vec<Segment> {
    let (ta, tb) = (tokens(a), tokens(b));
    let prefix = ta.iter().zip(&tb).take_while(|(x, y)| x == y).count();
    let suffix = ta[prefix..]
        .iter()
        .rev()
        .zip(tb[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&ta[prefix..ta.len() - suffix], &tb[prefix..tb.len() - suffix]);
    let mut out: Vec<Segment> = Vec::new();
    let mut push = |op: char, t: &str| match out.last_mut() {
        Some(last) if last.op == op => last.text.push_str(t),
        _ => out.push(Segment { op, text: t.to_owned() }),
    };
    ta[..prefix].iter().for_each(|t| push('=', t));
    if ma.len().saturating_mul(mb.len()) > MAX_CELLS {
        ma.iter().for_each(|t| push('-', t));
        mb.iter().for_each(|t| push('+', t));
    } else {
        // lcs[i][j]: the LCS of ma[i..] and mb[j..].
        let w = mb.len() + 1;
        let mut lcs = vec![0u32; (ma.len() + 1) * w];
        for i in (0..ma.len()).rev() {
            for j in (0..mb.len()).rev() {
                lcs[i * w + j] = if ma[i] == mb[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < ma.len() || j < mb.len() {
            if i < ma.len() && j < mb.len() && ma[i] == mb[j] {
                push('=', ma[i]);
                (i, j) = (i + 1, j + 1);
            } else if i < ma.len() && (j == mb.len() || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])
            {
                push('-', ma[i]);
                i += 1;
            } else {
                push('+', mb[j]);
                j += 1;
            }
        }
    }
    ta[ta.len() - suffix..].iter().for_each(|t| push('=', t));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(segments: &[Segment]) -> String {
        segments
            .iter()
            .map(|s| if s.op == '=' { s.text.clone() } else { format!("[{}{}]", s.op, s.text) })
            .collect()
    }

    #[test]
    fn tokens_split_words_spaces_and_signs() {
        assert_eq!(
            tokens("Print N+1  apples."),
            ["Print", " ", "N", "+", "1", "  ", "apples", "."]
        );
        assert_eq!(tokens(""), Vec::<&str>::new());
    }

    #[test]
    fn changed_words_are_marked_and_both_texts_come_back() {
        let (a, b) = ("Alice buys N apples and eats one.", "Bob buys N pears and eats one.");
        let d = word_diff(a, b);
        assert_eq!(render(&d), "[-Alice][+Bob] buys N [-apples][+pears] and eats one.");
        let side = |keep: char| {
            d.iter()
                .filter(|s| s.op == '=' || s.op == keep)
                .map(|s| s.text.as_str())
                .collect::<String>()
        };
        assert_eq!((side('-'), side('+')), (a.to_owned(), b.to_owned()));
        assert_eq!(word_diff(a, a), [Segment { op: '=', text: a.into() }]);
        assert_eq!(render(&word_diff("", "new")), "[+new]");
    }
}
