//! Step 2, the natural-language filter on a pair's text: long enough, no URL, no HTML, and not
//! reliably another language than the wanted one (whatlang, run last: it costs most).
//! [`check_text`] checks one text; [`filter_language`] a batch. Reads and writes nothing.

use serde::{Deserialize, Serialize};

use crate::pairs::{DropReason, Dropped, Pair, StepOutput};
use crate::text::is_space;
use coreb_base::minhash::normalise;

/// `[language]`: the natural-language filter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LanguageConfig {
    /// Wanted language, ISO 639-3.
    pub language: String,
    /// Minimum text length in characters (normalised).
    pub min_chars: usize,
}

impl Default for LanguageConfig {
    fn default() -> Self {
        LanguageConfig { language: "eng".into(), min_chars: 10 }
    }
}

impl LanguageConfig {
    /// Check the language code.
    pub fn validate(&self) -> Result<(), String> {
        if whatlang::Lang::from_code(&self.language).is_none() {
            return Err(format!("`language`: unknown ISO 639-3 code `{}`", self.language));
        }
        Ok(())
    }
}

pub(crate) fn has_url(text: &str) -> bool {
    if text.is_ascii() {
        // Lower-casing ASCII only changes ASCII letters: compare without building a copy.
        let has = |needle: &[u8]| {
            text.as_bytes().windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
        };
        return (text.contains(':') && (has(b"http://") || has(b"https://"))) || has(b"www.");
    }
    let lower = text.to_lowercase();
    lower.contains("http://") || lower.contains("https://") || lower.contains("www.")
}

fn has_html(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.windows(2).enumerate().any(|(i, w)| {
        w[0] == b'<'
            && (w[1].is_ascii_alphabetic() || w[1] == b'/' || w[1] == b'!')
            && bytes[i + 1..].iter().take(64).position(|&b| b == b'>').is_some_and(|end| {
                let inner = &bytes[i + 1..i + 1 + end];
                let name: Vec<u8> = inner
                    .iter()
                    .copied()
                    .skip_while(|&b| b == b'/' || b == b'!')
                    .take_while(u8::is_ascii_alphanumeric)
                    .collect();
                !name.is_empty()
                    && HTML_TAGS.contains(&String::from_utf8_lossy(&name).to_lowercase().as_str())
            })
    }) || text.contains("&nbsp;")
        || text.contains("&lt;")
        || text.contains("&gt;")
}

const HTML_TAGS: &[&str] = &[
    "a", "b", "i", "p", "br", "hr", "div", "span", "img", "ul", "ol", "li", "table", "tr", "td",
    "th", "html", "body", "head", "script", "style", "pre", "code", "em", "strong", "h1", "h2",
    "h3", "h4", "doctype", "sup", "sub",
];

/// Characters of `normalise(text)`, without building it for ASCII text.
pub(crate) fn normalised_chars(text: &str) -> usize {
    if !text.is_ascii() {
        return normalise(text).chars().count();
    }
    let (mut n, mut pending) = (0, false);
    for &b in text.as_bytes() {
        if is_space(b) {
            pending = n > 0;
        } else {
            n += 1 + usize::from(pending);
            pending = false;
        }
    }
    n
}

/// Check one text against the language filter. The cheap checks run first, so whatlang only
/// sees texts that pass them.
pub fn check_text(config: &LanguageConfig, text: &str) -> Result<(), DropReason> {
    let chars = normalised_chars(text);
    if chars < config.min_chars {
        return Err(DropReason::TooShort { chars });
    }
    if has_url(text) {
        return Err(DropReason::Url);
    }
    if has_html(text) {
        return Err(DropReason::Html);
    }
    // Short web queries confuse whatlang; only a reliable verdict for another language drops.
    // whatlang-fast is whatlang with a faster trigram scorer and the same results (tested).
    if let Some(info) = whatlang_fast::detect(text) {
        let code = info.lang().code();
        if code != config.language && info.is_reliable() {
            return Err(DropReason::Language { detected: code.to_owned() });
        }
    }
    Ok(())
}

/// Step 2: the natural-language filter on the text side.
pub fn filter_language(config: &LanguageConfig, pairs: Vec<Pair>) -> StepOutput {
    let mut out = StepOutput::default();
    for p in pairs {
        match check_text(config, &p.text) {
            Ok(()) => out.kept.push(p),
            Err(reason) => out.dropped.push(Dropped { id: p.id, reason }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::tests::TEXTS;

    #[test]
    fn normalised_chars_and_has_url_agree_with_the_definitions() {
        for t in TEXTS {
            assert_eq!(normalised_chars(t), normalise(t).chars().count(), "{t:?}");
            let lower = t.to_lowercase();
            assert_eq!(
                has_url(t),
                lower.contains("http://") || lower.contains("https://") || lower.contains("www."),
                "{t:?}"
            );
        }
    }

    #[test]
    fn whatlang_fast_detects_exactly_like_whatlang() {
        // Texts in every script whatlang scores by trigrams, and mixtures of them.
        const WORDS: &[&str] = &[
            "how",
            "to",
            "read",
            "a",
            "file",
            "in",
            "python",
            "sort",
            "the",
            "list",
            "by",
            "value",
            "Wie",
            "kann",
            "ich",
            "eine",
            "Datei",
            "lesen",
            "und",
            "Größe",
            "ändern",
            "comment",
            "lire",
            "un",
            "fichier",
            "avec",
            "les",
            "données",
            "cómo",
            "leer",
            "archivo",
            "con",
            "año",
            "niño",
            "как",
            "прочитать",
            "файл",
            "в",
            "питоне",
            "список",
            "كيف",
            "أقرأ",
            "ملف",
            "في",
            "बाइथन",
            "फ़ाइल",
            "कैसे",
            "पढ़ें",
            "איך",
            "לקרוא",
            "קובץ",
            "בפייתון",
            "obj12",
            "x[0]",
            "=",
            "->",
            "ŁÓDŹ",
            "Ærø",
            "日本語",
            "1234",
        ];
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut texts: Vec<String> = TEXTS.iter().map(|t| t.to_string()).collect();
        for _ in 0..1500 {
            let n = 1 + (state % 24) as usize;
            let mut t = String::new();
            for _ in 0..n {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                t.push_str(WORDS[(state % WORDS.len() as u64) as usize]);
                t.push(' ');
            }
            texts.push(t);
        }
        for t in &texts {
            let (a, b) = (whatlang::detect(t), whatlang_fast::detect(t));
            assert_eq!(
                a.map(|i| (i.lang().code(), format!("{:?}", i.script()), i.confidence().to_bits())),
                b.map(|i| (i.lang().code(), format!("{:?}", i.script()), i.confidence().to_bits())),
                "{t:?}"
            );
        }
    }

    #[test]
    fn language_filter_reasons() {
        let cfg = LanguageConfig::default();
        assert_eq!(check_text(&cfg, "sort"), Err(DropReason::TooShort { chars: 4 }));
        assert_eq!(
            check_text(&cfg, "see https://example.org for the answer"),
            Err(DropReason::Url)
        );
        assert_eq!(check_text(&cfg, "how to parse <div class=x> tags"), Err(DropReason::Html));
        assert!(matches!(
            check_text(
                &cfg,
                "Wie kann ich eine Datei in Python lesen und den Inhalt ausgeben, ohne dass die Zeilen verloren gehen?"
            ),
            Err(DropReason::Language { .. })
        ));
        assert_eq!(check_text(&cfg, "python check if a file is readonly"), Ok(()));
        assert_eq!(check_text(&cfg, "compare a < b and c > d in python"), Ok(()));
    }
}
