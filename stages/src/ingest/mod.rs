//! `ingest`: LiveCodeBench JSONL rows → typed [`Problem`]s.
//!
//! [`decode_row`] turns one line into a problem: every field checked, `public_test_cases`
//! decoded from JSON, `private_test_cases` from JSON or from base64 → zlib → pickle (read by
//! the strict [`pickle`] reader, which executes nothing), `metadata` parsed for `func_name`.
//! [`LineReader`] splits a stream into lines without ever holding more than one bounded line.
//! Reading files and writing the table is the engine's job.

pub mod pickle;

use std::io::BufRead;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::problem::{DateWindow, Platform, Problem, ProblemId, TestCase, TestType};

/// What to do with a row that cannot be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BadRows {
    /// Stop with an error naming file, line and field (default).
    #[default]
    Error,
    /// Skip the row and list it, with the reason, in the rejections report.
    Skip,
}

/// `[stages.ingest]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IngestConfig {
    /// What to do with a bad row.
    pub on_bad_row: BadRows,
    /// Longest accepted line in bytes.
    pub max_line_bytes: u64,
    /// Longest accepted decoded field in bytes (a decompressed test blob, say).
    pub max_field_bytes: u64,
}

impl Default for IngestConfig {
    fn default() -> Self {
        IngestConfig { on_bad_row: BadRows::Error, max_line_bytes: 1 << 30, max_field_bytes: 1 << 30 }
    }
}

/// Why a row could not be decoded; names the field.
#[derive(Debug, Clone, Error, PartialEq, Eq, Serialize)]
#[error("field `{field}`: {reason}")]
pub struct RowError {
    /// The field (`private_test_cases`, `public_test_cases[2].testtype`, or `(line)`).
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

impl RowError {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        RowError { field: field.into(), reason: reason.into() }
    }
}

#[derive(Deserialize)]
struct RawRow<'a> {
    #[serde(borrow)]
    question_title: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    question_content: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    platform: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    question_id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    contest_id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    contest_date: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    starter_code: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    difficulty: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    public_test_cases: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    private_test_cases: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    metadata: std::borrow::Cow<'a, str>,
}

#[derive(Deserialize)]
struct RawTest {
    input: String,
    output: String,
    testtype: String,
}

#[derive(Deserialize)]
struct RawMetadata {
    func_name: Option<String>,
}

/// Decode one JSONL line into a problem.
pub fn decode_row(line: &[u8], config: &IngestConfig) -> Result<Problem, RowError> {
    // The fast path parses without tracking paths; only a failure is parsed again to name
    // the field.
    let raw: RawRow = match serde_json::from_slice(line) {
        Ok(raw) => raw,
        Err(first) => {
            let mut de = serde_json::Deserializer::from_slice(line);
            return Err(match serde_path_to_error::deserialize::<_, RawRow>(&mut de) {
                Err(e) => {
                    let path = e.path().to_string();
                    let field = if path == "." || path == "?" { field_of(e.inner()) } else { path };
                    RowError::new(field, e.inner().to_string())
                }
                Ok(_) => RowError::new("(line)", first.to_string()),
            });
        }
    };

    let platform = Platform::parse(&raw.platform)
        .ok_or_else(|| RowError::new("platform", format!("unknown platform `{}`", raw.platform)))?;
    if raw.question_id.trim().is_empty() {
        return Err(RowError::new("question_id", "empty"));
    }
    if !crate::problem::is_iso_day(raw.contest_date.get(..10).unwrap_or("")) {
        return Err(RowError::new("contest_date", format!("`{}` is not an ISO date", raw.contest_date)));
    }
    let public_tests = parse_tests(&raw.public_test_cases, "public_test_cases")?;
    let private_tests = decode_private_tests(&raw.private_test_cases, config.max_field_bytes)?;
    let func_name = if raw.metadata.trim().is_empty() {
        None
    } else {
        serde_json::from_str::<RawMetadata>(&raw.metadata)
            .map_err(|e| RowError::new("metadata", format!("not a JSON object: {e}")))?
            .func_name
    };
    Ok(Problem {
        id: ProblemId::from_question_id(&raw.question_id),
        question_title: raw.question_title.into_owned(),
        question_content: raw.question_content.into_owned(),
        platform,
        question_id: raw.question_id.into_owned(),
        contest_id: raw.contest_id.into_owned(),
        contest_date: raw.contest_date.into_owned(),
        starter_code: raw.starter_code.into_owned(),
        difficulty: raw.difficulty.into_owned(),
        public_tests,
        private_tests,
        func_name,
        metadata: raw.metadata.into_owned(),
    })
}

/// serde reports a missing field at the root (`.`); take its name from the message.
fn field_of(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    msg.split('`').nth(1).filter(|_| msg.starts_with("missing field")).map_or_else(|| "(line)".to_owned(), str::to_owned)
}

fn parse_tests(json: &str, field: &str) -> Result<Vec<TestCase>, RowError> {
    let raw: Vec<RawTest> = match serde_json::from_str(json) {
        Ok(raw) => raw,
        Err(first) => {
            let mut de = serde_json::Deserializer::from_str(json);
            return Err(match serde_path_to_error::deserialize::<_, Vec<RawTest>>(&mut de) {
                Err(e) => RowError::new(format!("{field}{}", bracket_path(&e.path().to_string())), e.inner().to_string()),
                Ok(_) => RowError::new(field, first.to_string()),
            });
        }
    };
    raw.into_iter()
        .enumerate()
        .map(|(i, t)| {
            let testtype = TestType::parse(&t.testtype)
                .ok_or_else(|| RowError::new(format!("{field}[{i}].testtype"), format!("unknown testtype `{}`", t.testtype)))?;
            Ok(TestCase { input: t.input, output: t.output, testtype })
        })
        .collect()
}

fn bracket_path(path: &str) -> String {
    if path == "." { String::new() } else { path.to_owned() }
}

/// The field whose decoding errors [`decode_private_tests`] and [`inflate`] report.
const FIELD: &str = "private_test_cases";

/// Decode `private_test_cases`: JSON, or base64 → zlib → pickle of a JSON string.
pub fn decode_private_tests(value: &str, max_bytes: u64) -> Result<Vec<TestCase>, RowError> {
    let trimmed = value.trim_start();
    if trimmed.starts_with('[') {
        return parse_tests(trimmed, FIELD);
    }
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    let compressed = base64::engine::general_purpose::STANDARD
        .decode(value.trim())
        .map_err(|e| RowError::new(FIELD, format!("not JSON and not base64: {e}")))?;
    INFLATE.with_borrow_mut(|Inflate { decompressor, out }| {
        let n = inflate(decompressor, &compressed, max_bytes, out)?;
        let json = pickle::unpickle_str(&out[..n]).map_err(|e| RowError::new(FIELD, format!("bad pickle: {e}")))?;
        let tests = parse_tests(json, FIELD);
        if out.len() > KEEP_INFLATE_BYTES {
            *out = Vec::new();
        }
        tests
    })
}

/// A decoder thread's inflate state and output buffer, kept from row to row: a month's rows
/// inflate to megabytes each, and a fresh buffer would have its pages faulted in and zeroed
/// every time.
struct Inflate {
    decompressor: libdeflater::Decompressor,
    out: Vec<u8>,
}

thread_local! {
    static INFLATE: std::cell::RefCell<Inflate> =
        std::cell::RefCell::new(Inflate { decompressor: libdeflater::Decompressor::new(), out: Vec::new() });
}

/// An output buffer larger than this is freed after its row rather than kept for the next.
const KEEP_INFLATE_BYTES: usize = 256 << 20;

/// Inflate the zlib stream `compressed` into `out` (grown as needed, never past `max_bytes`);
/// returns the number of bytes inflated.
///
/// libdeflate inflates a whole buffer at once, about 1.8× as fast as a streaming inflater on
/// LiveCodeBench's rows (issue #13), but needs room for the whole output up front. Real rows
/// inflate about 2×: the first try allows 4×, and each try that runs out of room doubles it.
fn inflate(decompressor: &mut libdeflater::Decompressor, compressed: &[u8], max_bytes: u64, out: &mut Vec<u8>) -> Result<usize, RowError> {
    use libdeflater::DecompressionError;
    let max = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let mut room = compressed.len().saturating_mul(4).max(4 << 10).min(max);
    loop {
        if out.len() < room {
            out.resize(room, 0);
        }
        match decompressor.zlib_decompress(compressed, &mut out[..room]) {
            Ok(n) => return Ok(n),
            Err(DecompressionError::InsufficientSpace) if room < max => room = room.saturating_mul(2).min(max),
            Err(DecompressionError::InsufficientSpace) => {
                return Err(RowError::new(FIELD, format!("decompresses to more than {max_bytes} bytes (`max_field_bytes`)")));
            }
            Err(DecompressionError::BadData) => return Err(RowError::new(FIELD, "bad zlib data")),
        }
    }
}

/// Where an ingested row went.
#[derive(Debug)]
pub enum RowOutcome {
    /// Decoded and inside the window.
    Keep(Box<Problem>),
    /// Decoded, but its contest date is outside the window.
    OutOfWindow,
}

/// Decode a row and apply the window.
pub fn ingest_row(line: &[u8], config: &IngestConfig, window: &DateWindow) -> Result<RowOutcome, RowError> {
    let problem = decode_row(line, config)?;
    Ok(if window.contains(problem.contest_day()) { RowOutcome::Keep(Box::new(problem)) } else { RowOutcome::OutOfWindow })
}

/// Counts of one ingest run; summed over files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngestStats {
    /// Non-blank lines read.
    pub rows_in: u64,
    /// Problems written.
    pub rows_out: u64,
    /// Rows outside the contest-date window.
    pub out_of_window: u64,
    /// Bad rows skipped (with `on_bad_row = "skip"`).
    pub rejected: u64,
    /// Bytes read.
    pub bytes_in: u64,
}

impl std::ops::AddAssign for IngestStats {
    fn add_assign(&mut self, o: Self) {
        self.rows_in += o.rows_in;
        self.rows_out += o.rows_out;
        self.out_of_window += o.out_of_window;
        self.rejected += o.rejected;
        self.bytes_in += o.bytes_in;
    }
}

/// One line of a stream.
#[derive(Debug)]
pub enum Line {
    /// A line (without its newline), 1-based number.
    Text(u64, Vec<u8>),
    /// A line longer than the limit; its bytes were skipped.
    TooLong(u64, u64),
}

/// Splits a byte stream into lines of at most `max` bytes, holding at most one line.
pub struct LineReader<R> {
    inner: R,
    max: u64,
    line_no: u64,
    /// Bytes consumed so far (for progress).
    pub bytes: u64,
}

impl<R: BufRead> LineReader<R> {
    /// Wrap a buffered reader.
    pub fn new(inner: R, max: u64) -> Self {
        LineReader { inner, max, line_no: 0, bytes: 0 }
    }

    /// The next line, or `None` at end of stream.
    pub fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        let mut buf = Vec::new();
        let mut skipped: u64 = 0;
        let mut any = false;
        loop {
            let chunk = self.inner.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            any = true;
            let (take, done) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            let body = if done { &chunk[..take - 1] } else { &chunk[..take] };
            if skipped > 0 || buf.len() as u64 + body.len() as u64 > self.max {
                skipped += buf.len() as u64 + body.len() as u64;
                buf = Vec::new();
            } else {
                buf.extend_from_slice(body);
            }
            self.inner.consume(take);
            self.bytes += take as u64;
            if done {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.line_no += 1;
        if skipped > 0 {
            return Ok(Some(Line::TooLong(self.line_no, skipped)));
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Ok(Some(Line::Text(self.line_no, buf)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOB_1873_A: &str = include_str!("../../../tests/fixtures/ingest/private_tests_blob_1873_A.json");

    #[derive(Deserialize)]
    struct Blob {
        private_test_cases: String,
        decoded: Vec<TestCase>,
    }

    #[test]
    fn real_blob_decodes_exactly() {
        let blob: Blob = serde_json::from_str(BLOB_1873_A).unwrap();
        let tests = decode_private_tests(&blob.private_test_cases, 1 << 20).unwrap();
        assert_eq!(tests, blob.decoded);
        assert_eq!(tests.len(), 4);
    }

    #[test]
    fn blob_bigger_than_limit_is_refused() {
        let blob: Blob = serde_json::from_str(BLOB_1873_A).unwrap();
        let err = decode_private_tests(&blob.private_test_cases, 50).unwrap_err();
        assert_eq!(err.field, "private_test_cases");
        assert!(err.reason.contains("max_field_bytes"), "{err}");
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut c = libdeflater::Compressor::new(libdeflater::CompressionLvl::default());
        let mut out = vec![0; c.zlib_compress_bound(data.len())];
        let n = c.zlib_compress(data, &mut out).unwrap();
        out.truncate(n);
        out
    }

    #[test]
    fn inflate_grows_its_room_to_any_ratio_and_stops_at_the_limit() {
        let mut d = libdeflater::Decompressor::new();
        let mut out = Vec::new();
        // 3 MB of one byte compress about 1000:1, far past the first try's 4×.
        let zeros = vec![b'7'; 3 << 20];
        let n = inflate(&mut d, &zlib(&zeros), 1 << 30, &mut out).unwrap();
        assert_eq!(&out[..n], &zeros[..]);
        // The buffer is kept; a smaller row after it gets exactly its own bytes.
        let small = b"[{\"input\": \"1\"}]".repeat(3);
        let n = inflate(&mut d, &zlib(&small), 1 << 30, &mut out).unwrap();
        assert_eq!(&out[..n], &small[..]);
        // A limit of exactly the output passes; one byte less is refused, naming the setting.
        let z = zlib(&zeros);
        assert_eq!(inflate(&mut d, &z, zeros.len() as u64, &mut Vec::new()).unwrap(), zeros.len());
        let err = inflate(&mut d, &z, zeros.len() as u64 - 1, &mut Vec::new()).unwrap_err();
        assert!(err.reason.contains("max_field_bytes"), "{err}");
        // A truncated or corrupt stream is bad data, not a panic or a short result.
        let err = inflate(&mut d, &z[..z.len() / 2], 1 << 30, &mut Vec::new()).unwrap_err();
        assert_eq!(err.reason, "bad zlib data");
        let err = inflate(&mut d, b"not zlib at all", 1 << 30, &mut Vec::new()).unwrap_err();
        assert_eq!(err.reason, "bad zlib data");
    }

    fn row(overrides: &[(&str, serde_json::Value)]) -> Vec<u8> {
        let mut v = serde_json::json!({
            "question_title": "t", "question_content": "c", "platform": "atcoder",
            "question_id": "abc100_a", "contest_id": "abc100", "contest_date": "2025-01-04T00:00:00",
            "starter_code": "", "difficulty": "easy",
            "public_test_cases": "[{\"input\": \"1\\n\", \"output\": \"2\\n\", \"testtype\": \"stdin\"}]",
            "private_test_cases": "[]", "metadata": "{}"
        });
        for (k, val) in overrides {
            if val.is_null() {
                v.as_object_mut().unwrap().remove(*k);
            } else {
                v[*k] = val.clone();
            }
        }
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn good_row() {
        let p = decode_row(&row(&[("metadata", "{\"func_name\": \"f\"}".into())]), &IngestConfig::default()).unwrap();
        assert_eq!(p.id.as_str(), "lcb_abc100_a");
        assert_eq!(p.public_tests.len(), 1);
        assert_eq!(p.func_name.as_deref(), Some("f"));
    }

    #[test]
    fn bad_rows_name_their_field() {
        let cfg = IngestConfig::default();
        let field = |r: Vec<u8>| decode_row(&r, &cfg).unwrap_err().field;
        assert_eq!(field(row(&[("difficulty", serde_json::Value::Null)])), "difficulty");
        assert_eq!(field(row(&[("question_id", 5.into())])), "question_id");
        assert_eq!(field(row(&[("platform", "topcoder".into())])), "platform");
        assert_eq!(field(row(&[("contest_date", "yesterday".into())])), "contest_date");
        assert_eq!(field(row(&[("private_test_cases", "!!!not base64".into())])), "private_test_cases");
        assert_eq!(field(row(&[("private_test_cases", "eJzLSM3JyQcABiwCFQ==".into())])), "private_test_cases");
        assert_eq!(field(row(&[("metadata", "[1,".into())])), "metadata");
        assert_eq!(
            field(row(&[("public_test_cases", "[{\"input\": \"1\", \"output\": \"2\", \"testtype\": \"interactive\"}]".into())])),
            "public_test_cases[0].testtype"
        );
        assert_eq!(field(row(&[("public_test_cases", "[{\"input\": \"1\", \"testtype\": \"stdin\"}]".into())])), "public_test_cases[0]");
        assert_eq!(field(b"{\"question_title\": \"t\", ".to_vec()), "(line)");
        assert_eq!(field(b"not json".to_vec()), "(line)");
    }

    #[test]
    fn lines_are_bounded() {
        let data = b"a\r\nbbbbbbbbbb\n\nccc";
        let mut r = LineReader::new(&data[..], 5);
        let mut got = vec![];
        while let Some(l) = r.next_line().unwrap() {
            got.push(match l {
                Line::Text(n, b) => format!("{n}:{}", String::from_utf8(b).unwrap()),
                Line::TooLong(n, len) => format!("{n}:too long {len}"),
            });
        }
        assert_eq!(got, ["1:a", "2:too long 10", "3:", "4:ccc"]);
    }
}
