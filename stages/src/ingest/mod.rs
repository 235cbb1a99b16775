//! `ingest`: LiveCodeBench JSONL rows → typed [`Problem`]s.
//!
//! [`decode_row`] turns one line into a problem: every field checked, `public_test_cases`
//! decoded from JSON, `private_test_cases` from JSON or from base64 → zlib → pickle (read by
//! the strict [`pickle`] reader, which executes nothing), `metadata` parsed for `func_name`.
//! [`LineReader`] splits a stream into lines without ever holding more than one bounded line.
//! Reading files and writing the table is the engine's job.

pub mod pickle;
mod test_cases;

use std::io::Read;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use test_cases::RawTest;

use coreb_data::problem::{DateWindow, Platform, Problem, ProblemId, TestCase, TestType};

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
        IngestConfig {
            on_bad_row: BadRows::Error,
            max_line_bytes: 1 << 30,
            max_field_bytes: 1 << 30,
        }
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
struct RawMetadata {
    func_name: Option<String>,
}

/// Decode one JSONL line into a problem.
pub fn decode_row(line: &[u8], config: &IngestConfig) -> Result<Problem, RowError> {
    // A row whose private tests are plain base64 is parsed without them; any failure there
    // is decoded again whole, so that every error is the one the whole line gives.
    if let Some((rest, blob)) = split_private_tests(line)
        && let Ok(problem) = decode_parts(&rest, Some(blob), config)
    {
        return Ok(problem);
    }
    decode_parts(line, None, config)
}

/// Find the top-level `private_test_cases` value of a row when it is plain base64 (no escape,
/// no surrounding space); return the row with that value emptied, and the value.
///
/// LiveCodeBench's private tests are one base64 string of megabytes per row. A JSON parser
/// scans it byte by byte for quotes and escapes, then checks it is UTF-8, only to hand over
/// bytes that base64 decoding checks again (at 2 GB, 5 % of `ingest`'s CPU, issue #13). Here
/// a vectorised search finds the quote that ends it. `None` when the row does not have that
/// shape; it is then parsed whole.
fn split_private_tests(line: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    const KEY: &[u8] = b"private_test_cases";
    let skip_space = |at| skip_json_space(line, at);
    // Outside strings only brackets matter: they tell the object's own keys from nested ones.
    let mut depth = 0usize;
    let mut at = 0;
    while at < line.len() {
        match line[at] {
            b'"' => {
                let start = at + 1;
                let end = string_end(line, start)?;
                at = end + 1;
                if depth != 1 || &line[start..end] != KEY {
                    continue;
                }
                let colon = skip_space(at);
                if line.get(colon) != Some(&b':') {
                    continue; // a value that reads `private_test_cases`
                }
                let open = skip_space(colon + 1);
                if line.get(open) != Some(&b'"') {
                    return None;
                }
                let from = open + 1;
                let to = from + memchr::memchr2(b'"', b'\\', &line[from..])?;
                let value = &line[from..to];
                if line[to] != b'"'
                    || !value.first().is_some_and(is_base64_symbol)
                    || !value.last().is_some_and(|b| is_base64_symbol(b) || *b == b'=')
                {
                    return None;
                }
                let mut rest = Vec::with_capacity(line.len() - value.len());
                rest.extend_from_slice(&line[..from]);
                rest.extend_from_slice(&line[to..]);
                return Some((rest, value));
            }
            b'{' | b'[' => {
                depth += 1;
                at += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                at += 1;
            }
            _ => at += 1,
        }
    }
    None
}

/// The index of the first byte at or after `at` that is not JSON white space.
fn skip_json_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// Is `b` one of base64's 64 symbols (padding aside)?
fn is_base64_symbol(b: &u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/')
}

/// The index of the quote that ends the JSON string starting at `at`.
fn string_end(line: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let found = at + memchr::memchr2(b'"', b'\\', line.get(at..)?)?;
        if line[found] == b'"' {
            return Some(found);
        }
        at = found + 2;
    }
}

/// Decode a row; `blob`, when given, is its `private_test_cases` (base64), taken out of `line`.
fn decode_parts(
    line: &[u8],
    blob: Option<&[u8]>,
    config: &IngestConfig,
) -> Result<Problem, RowError> {
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
    if !coreb_data::problem::is_iso_day(raw.contest_date.get(..10).unwrap_or("")) {
        return Err(RowError::new(
            "contest_date",
            format!("`{}` is not an ISO date", raw.contest_date),
        ));
    }
    let public_tests = parse_tests(&raw.public_test_cases, "public_test_cases")?;
    let private_tests = match blob {
        Some(blob) => decode_blob(blob, config.max_field_bytes)?,
        None => decode_private_tests(&raw.private_test_cases, config.max_field_bytes)?,
    };
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
        answer: Default::default(),
    })
}

/// serde reports a missing field at the root (`.`); take its name from the message.
fn field_of(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    msg.split('`')
        .nth(1)
        .filter(|_| msg.starts_with("missing field"))
        .map_or_else(|| "(line)".to_owned(), str::to_owned)
}

fn parse_tests(json: &str, field: &str) -> Result<Vec<TestCase>, RowError> {
    let parsed = test_cases::parse(json).map_or_else(|| serde_json::from_str(json), Ok);
    let raw: Vec<RawTest> = match parsed {
        Ok(raw) => raw,
        Err(first) => {
            let mut de = serde_json::Deserializer::from_str(json);
            return Err(match serde_path_to_error::deserialize::<_, Vec<RawTest>>(&mut de) {
                Err(e) => RowError::new(
                    format!("{field}{}", bracket_path(&e.path().to_string())),
                    e.inner().to_string(),
                ),
                Ok(_) => RowError::new(field, first.to_string()),
            });
        }
    };
    raw.into_iter()
        .enumerate()
        .map(|(i, t)| {
            let testtype = TestType::parse(&t.testtype).ok_or_else(|| {
                RowError::new(
                    format!("{field}[{i}].testtype"),
                    format!("unknown testtype `{}`", t.testtype),
                )
            })?;
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
    decode_blob(value.trim().as_bytes(), max_bytes)
}

/// Decode private tests encoded as base64 → zlib → pickle of a JSON string.
fn decode_blob(base64: &[u8], max_bytes: u64) -> Result<Vec<TestCase>, RowError> {
    // A vectorised decoder: base64 was 4.5 % of `ingest`'s CPU at 2 GB with the scalar one,
    // which accepts exactly the same strings (padded, canonical; issue #13).
    let compressed = base64_simd::STANDARD.decode_to_vec(base64).map_err(|_| {
        RowError::new(FIELD, format!("not JSON and not base64: {}", base64_fault(base64)))
    })?;
    INFLATE.with_borrow_mut(|Inflate { decompressor, out }| {
        let n = inflate(decompressor, &compressed, max_bytes, out)?;
        let json = pickle::unpickle_str(&out[..n])
            .map_err(|e| RowError::new(FIELD, format!("bad pickle: {e}")))?;
        let tests = parse_tests(json, FIELD);
        if out.len() > KEEP_INFLATE_BYTES {
            *out = Vec::new();
        }
        tests
    })
}

/// What makes `text` not padded, canonical base64 (the decoder only says that it is not).
fn base64_fault(text: &[u8]) -> String {
    let body = text.strip_suffix(b"==").or_else(|| text.strip_suffix(b"=")).unwrap_or(text);
    if let Some(at) = body.iter().position(|b| !is_base64_symbol(b)) {
        return format!("byte `{}` at offset {at} is not a base64 symbol", body[at].escape_ascii());
    }
    if !text.len().is_multiple_of(4) {
        return format!("length {} is not a multiple of 4", text.len());
    }
    "its last symbol carries bits past the data".to_owned()
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
fn inflate(
    decompressor: &mut libdeflater::Decompressor,
    compressed: &[u8],
    max_bytes: u64,
    out: &mut Vec<u8>,
) -> Result<usize, RowError> {
    use libdeflater::DecompressionError;
    let max = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let mut room = compressed.len().saturating_mul(4).max(4 << 10).min(max);
    loop {
        if out.len() < room {
            out.resize(room, 0);
        }
        match decompressor.zlib_decompress(compressed, &mut out[..room]) {
            Ok(n) => return Ok(n),
            Err(DecompressionError::InsufficientSpace) if room < max => {
                room = room.saturating_mul(2).min(max)
            }
            Err(DecompressionError::InsufficientSpace) => {
                return Err(RowError::new(
                    FIELD,
                    format!("decompresses to more than {max_bytes} bytes (`max_field_bytes`)"),
                ));
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
pub fn ingest_row(
    line: &[u8],
    config: &IngestConfig,
    window: &DateWindow,
) -> Result<RowOutcome, RowError> {
    let problem = decode_row(line, config)?;
    Ok(if window.contains(problem.contest_day()) {
        RowOutcome::Keep(Box::new(problem))
    } else {
        RowOutcome::OutOfWindow
    })
}

/// What a source holds for a contest-date window: its rows, how many fall inside, and the
/// latest contest day among them. What `coreb plan` and a build check before decoding
/// anything: a window the sources have nothing in is a month with nothing new.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowScan {
    /// Non-blank lines.
    pub rows: u64,
    /// Rows whose contest day is inside the window.
    pub in_window: u64,
    /// The latest contest day (`YYYY-MM-DD`) of any row.
    pub latest: Option<String>,
}

impl WindowScan {
    /// Add another source's scan.
    pub fn add(&mut self, other: &WindowScan) {
        self.rows += other.rows;
        self.in_window += other.in_window;
        if other.latest > self.latest {
            self.latest.clone_from(&other.latest);
        }
    }
}

/// The contest day (`YYYY-MM-DD`) of a LiveCodeBench row, found without decoding the row: the
/// value of its `"contest_date"` key. `None` when the row has none (`ingest` rejects it).
pub fn contest_day(line: &[u8]) -> Option<&str> {
    // The key's quotes cannot be inside a string value, where a quote is escaped.
    let at = memchr::memmem::find(line, b"\"contest_date\"")? + 14;
    let at = skip_json_space(line, at);
    let at = skip_json_space(line, (line.get(at) == Some(&b':')).then_some(at + 1)?);
    let value = line.get(at..)?.strip_prefix(b"\"")?;
    let day = std::str::from_utf8(value.get(..10)?).ok()?;
    coreb_data::problem::is_iso_day(day).then_some(day)
}

/// Scan a source for a window: count its rows, those inside, and find its latest contest day
/// ([`WindowScan`]), reading each row's date only.
pub fn scan_window(
    reader: impl Read,
    window: &DateWindow,
    max_line_bytes: u64,
) -> std::io::Result<WindowScan> {
    let mut lines = LineReader::new(reader, max_line_bytes);
    let mut scan = WindowScan::default();
    while let Some(line) = lines.next_line()? {
        let Line::Text(_, text) = line else {
            scan.rows += 1;
            continue;
        };
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        scan.rows += 1;
        if let Some(day) = contest_day(&text) {
            if window.contains(day) {
                scan.in_window += 1;
            }
            if scan.latest.as_deref().is_none_or(|l| day > l) {
                scan.latest = Some(day.to_owned());
            }
        }
    }
    Ok(scan)
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

coreb_base::add_assign_fields!(IngestStats {
    rows_in,
    rows_out,
    out_of_window,
    rejected,
    bytes_in
});

/// One line of a stream.
#[derive(Debug)]
pub enum Line {
    /// A line (without its newline), 1-based number.
    Text(u64, Vec<u8>),
    /// A line longer than the limit; its bytes were skipped.
    TooLong(u64, u64),
}

/// Splits a byte stream into lines of at most `max` bytes, holding at most one line.
///
/// Reads go straight into the buffer of the line being read, sized from the longest line so
/// far, so a line of megabytes is copied once, by the read itself, and never again from a
/// read buffer into the line (at 2 GB, that second copy cost `ingest`'s reader as much as
/// hashing the input, issue #13). Only what the last read brought in past the newline is
/// copied, into the next line.
pub struct LineReader<R> {
    inner: R,
    max: u64,
    line_no: u64,
    /// Bytes consumed so far (for progress).
    pub bytes: u64,
    /// Bytes read past the end of the last line returned: the start of the next.
    carry: Vec<u8>,
    /// The longest line so far: the next line's buffer starts with room for it.
    longest: usize,
    eof: bool,
}

/// Bytes asked for by each read; at most this much is carried from one line to the next.
const READ_BYTES: usize = 256 << 10;

impl<R: Read> LineReader<R> {
    /// Wrap a reader (unbuffered is best: the reads are large and land in the lines).
    pub fn new(inner: R, max: u64) -> Self {
        LineReader { inner, max, line_no: 0, bytes: 0, carry: Vec::new(), longest: 0, eof: false }
    }

    /// The reader, which has read up to `READ_BYTES` past the last line returned (at the end
    /// of the stream once [`next_line`](Self::next_line) has returned `None`).
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The next line, or `None` at end of stream.
    pub fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        let mut buf = Vec::with_capacity(self.longest.max(self.carry.len()) + READ_BYTES);
        buf.extend_from_slice(&self.carry);
        self.carry.clear();
        let mut searched = 0;
        // Bytes of a line longer than `max`, dropped as they were read.
        let mut skipped: u64 = 0;
        loop {
            if let Some(i) = memchr::memchr(b'\n', &buf[searched..]) {
                let end = searched + i;
                self.carry.extend_from_slice(&buf[end + 1..]);
                buf.truncate(end);
                self.bytes += 1;
                return Ok(Some(self.finish_line(buf, skipped)));
            }
            if self.eof {
                if buf.is_empty() && skipped == 0 {
                    return Ok(None);
                }
                return Ok(Some(self.finish_line(buf, skipped)));
            }
            if skipped > 0 || buf.len() as u64 > self.max {
                skipped += buf.len() as u64;
                self.bytes += buf.len() as u64;
                buf.clear();
            }
            searched = buf.len();
            let n = self.read_more(&mut buf)?;
            self.eof = n == 0;
        }
    }

    /// Append up to [`READ_BYTES`] from the stream to `buf`; 0 at its end.
    fn read_more(&mut self, buf: &mut Vec<u8>) -> std::io::Result<usize> {
        let len = buf.len();
        buf.resize(len + READ_BYTES, 0);
        let n = loop {
            match self.inner.read(&mut buf[len..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    buf.truncate(len);
                    return Err(e);
                }
            }
        };
        buf.truncate(len + n);
        Ok(n)
    }

    /// A line's outcome, its bytes (without the newline) in `buf` after `skipped` dropped ones.
    fn finish_line(&mut self, mut buf: Vec<u8>, skipped: u64) -> Line {
        self.line_no += 1;
        self.bytes += buf.len() as u64;
        if skipped > 0 || buf.len() as u64 > self.max {
            return Line::TooLong(self.line_no, skipped + buf.len() as u64);
        }
        self.longest = self.longest.max(buf.len());
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        // A short line in a buffer sized for a long one gives the room back.
        if buf.capacity() > 2 * buf.len() + READ_BYTES {
            buf.shrink_to_fit();
        }
        Line::Text(self.line_no, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOB_1873_A: &str =
        include_str!("../../../tests/fixtures/ingest/private_tests_blob_1873_A.json");

    #[derive(Deserialize)]
    struct Blob {
        private_test_cases: String,
        decoded: Vec<TestCase>,
    }

    #[test]
    fn a_window_scan_reads_dates_only_and_finds_the_latest() {
        assert_eq!(
            contest_day(br#"{"question_content": "say \"contest_date\": 1999-01-01", "contest_date" : "2025-03-29T00:00:00"}"#),
            Some("2025-03-29")
        );
        assert_eq!(contest_day(br#"{"contest_date": 20250329}"#), None);
        assert_eq!(contest_day(b"{}"), None);
        let text = b"{\"contest_date\": \"2025-01-04T00:00:00\"}\n\n{\"contest_date\": \"2025-03-29T00:00:00\"}\n{\"x\": 1}\n";
        let march = DateWindow::new(Some("2025-03-01"), Some("2025-03-31")).unwrap();
        assert_eq!(
            scan_window(&text[..], &march, 1 << 20).unwrap(),
            WindowScan { rows: 3, in_window: 1, latest: Some("2025-03-29".into()) }
        );
        let april = DateWindow::new(Some("2025-04-01"), Some("2025-04-30")).unwrap();
        let scan = scan_window(&text[..], &april, 1 << 20).unwrap();
        assert_eq!((scan.in_window, scan.latest.as_deref()), (0, Some("2025-03-29")));
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

    /// The vectorised decoder accepts padded, canonical base64 only, as the scalar `base64`
    /// crate's STANDARD engine did; each refusal says what is wrong and where.
    #[test]
    fn base64_is_strict_and_its_faults_are_named() {
        let blob: Blob = serde_json::from_str(BLOB_1873_A).unwrap();
        let b64 = blob.private_test_cases.trim();
        // Every length modulo 3 of the decoded bytes round-trips, padding and all.
        for (text, bytes) in [
            ("", &b""[..]),
            ("eA==", b"x"),
            ("eHk=", b"xy"),
            ("eHl6", b"xyz"),
            ("eHl6dw==", b"xyzw"),
        ] {
            assert_eq!(base64_simd::STANDARD.decode_to_vec(text).unwrap(), bytes, "{text}");
        }
        assert_eq!(decode_blob(b64.as_bytes(), 1 << 20).unwrap(), blob.decoded);
        let fault = |text: &str| decode_blob(text.as_bytes(), 1 << 20).unwrap_err().reason;
        let cases = [
            ("eHl6@HcA", "byte `@` at offset 4 is not a base64 symbol"),
            ("eHl6\ndw==", "byte `\\n` at offset 4 is not a base64 symbol"),
            ("eHl-dw==", "byte `-` at offset 3 is not a base64 symbol"),
            ("eA=x", "byte `=` at offset 2 is not a base64 symbol"),
            ("eHl6dw", "length 6 is not a multiple of 4"),
            ("eHl6d", "length 5 is not a multiple of 4"),
            // `eB==` decodes to `x` too, but with bits set past its one byte.
            ("eB==", "its last symbol carries bits past the data"),
            ("eHp=", "its last symbol carries bits past the data"),
        ];
        for (text, why) in cases {
            assert_eq!(fault(text), format!("not JSON and not base64: {why}"), "{text:?}");
        }
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

    /// Rows whose private tests are taken out before parsing decode exactly as when the
    /// whole line is parsed, errors included; rows of any other shape are parsed whole.
    #[test]
    fn private_tests_taken_out_decode_as_the_whole_line_does() {
        let blob: Blob = serde_json::from_str(BLOB_1873_A).unwrap();
        let b64 = blob.private_test_cases.clone();
        let good = row(&[("private_test_cases", b64.clone().into())]);
        let (rest, value) = split_private_tests(&good).expect("a plain base64 value is taken out");
        assert_eq!(value, b64.as_bytes());
        assert!(String::from_utf8(rest).unwrap().contains("\"private_test_cases\":\"\""));
        assert_eq!(
            decode_row(&good, &IngestConfig::default()).unwrap().private_tests,
            blob.decoded
        );

        let text = String::from_utf8(good.clone()).unwrap();
        let key = "\"private_test_cases\":";
        let with_value = |v: &str| {
            text.replacen(&format!("{key}\"{b64}\""), &format!("{key}{v}"), 1).into_bytes()
        };
        let (head, tail) = b64.split_at(40);
        let variants: Vec<(&str, Vec<u8>, bool)> = vec![
            ("plain", good.clone(), true),
            ("an escaped slash", with_value(&format!("\"{head}\\/{tail}\"")), false),
            ("a leading space", with_value(&format!("\" {b64}\"")), false),
            ("a trailing newline, raw", with_value(&format!("\"{b64}\n\"")), false),
            ("a raw tab inside", with_value(&format!("\"{head}\t{tail}\"")), true),
            ("not base64", with_value("\"QUJD!!AA\""), true),
            ("bad zlib", with_value("\"QUJDRA==\""), true),
            ("a JSON list", with_value("\"[]\""), false),
            ("empty", with_value("\"\""), false),
            ("not a string", with_value("7"), false),
            (
                "a duplicate key",
                text.replacen("\"metadata\":", &format!("{key}\"QUJD\",\"metadata\":"), 1)
                    .into_bytes(),
                true,
            ),
            (
                "the key nested first",
                text.replacen("{", "{\"x\":{\"private_test_cases\":\"QUJD\"},", 1).into_bytes(),
                true,
            ),
            (
                "the key as a value first",
                text.replacen("{", "{\"x\":\"private_test_cases\",", 1).into_bytes(),
                true,
            ),
            ("cut short", good[..good.len() - 20].to_vec(), true),
            (
                "bad platform",
                row(&[("private_test_cases", b64.clone().into()), ("platform", "icpc".into())]),
                true,
            ),
        ];
        for (what, line, split) in variants {
            assert_eq!(split_private_tests(&line).is_some(), split, "{what}: taken out?");
            let config = IngestConfig::default();
            let (fast, whole) = (decode_row(&line, &config), decode_parts(&line, None, &config));
            match (&fast, &whole) {
                (Ok(a), Ok(b)) => assert!(a == b, "{what}: problems differ"),
                _ => assert_eq!(fast.as_ref().err(), whole.as_ref().err(), "{what}"),
            }
        }
        // The key nested in another object is not the row's: the row's own value is found.
        let nested =
            text.replacen("{", "{\"x\":{\"private_test_cases\":\"QUJD\"},", 1).into_bytes();
        assert_eq!(split_private_tests(&nested).unwrap().1, b64.as_bytes());
    }

    #[test]
    fn good_row() {
        let p = decode_row(
            &row(&[("metadata", "{\"func_name\": \"f\"}".into())]),
            &IngestConfig::default(),
        )
        .unwrap();
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
        assert_eq!(
            field(row(&[("private_test_cases", "!!!not base64".into())])),
            "private_test_cases"
        );
        assert_eq!(
            field(row(&[("private_test_cases", "eJzLSM3JyQcABiwCFQ==".into())])),
            "private_test_cases"
        );
        assert_eq!(field(row(&[("metadata", "[1,".into())])), "metadata");
        assert_eq!(
            field(row(&[(
                "public_test_cases",
                "[{\"input\": \"1\", \"output\": \"2\", \"testtype\": \"interactive\"}]".into()
            )])),
            "public_test_cases[0].testtype"
        );
        assert_eq!(
            field(row(&[(
                "public_test_cases",
                "[{\"input\": \"1\", \"testtype\": \"stdin\"}]".into()
            )])),
            "public_test_cases[0]"
        );
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
        assert_eq!(r.bytes, data.len() as u64);
    }

    /// Lines of every length across reads of [`READ_BYTES`]: each comes back whole, in order,
    /// whatever the reader hands over per call; too-long ones are counted, not held.
    #[test]
    fn long_lines_across_reads_come_back_whole() {
        /// A reader that hands over at most `step` bytes per call.
        struct Trickle<'a> {
            data: &'a [u8],
            step: usize,
        }
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = buf.len().min(self.step).min(self.data.len());
                buf[..n].copy_from_slice(&self.data[..n]);
                self.data = &self.data[n..];
                Ok(n)
            }
        }
        let lens = [
            0,
            1,
            READ_BYTES - 1,
            READ_BYTES,
            READ_BYTES + 1,
            3 * READ_BYTES + 17,
            5,
            2 * READ_BYTES,
            0,
            7,
        ];
        let lines: Vec<Vec<u8>> = lens
            .iter()
            .enumerate()
            .map(|(i, &n)| (0..n).map(|j| b'a' + ((i + j) % 26) as u8).collect())
            .collect();
        let mut data = lines.join(&b'\n');
        data.extend_from_slice(b"\ntail without a newline");
        let max = (3 * READ_BYTES) as u64;
        for step in [1 << 10, 100_003, READ_BYTES, usize::MAX] {
            let mut r = LineReader::new(Trickle { data: &data, step }, max);
            for (i, want) in lines.iter().enumerate() {
                match r.next_line().unwrap() {
                    Some(Line::Text(n, got)) => {
                        assert_eq!(n, i as u64 + 1);
                        assert!(
                            got == *want,
                            "step {step}: line {n} differs ({} bytes, want {})",
                            got.len(),
                            want.len()
                        );
                    }
                    Some(Line::TooLong(n, len)) => {
                        assert_eq!((n, len), (i as u64 + 1, want.len() as u64), "step {step}");
                        assert!(want.len() as u64 > max);
                    }
                    None => panic!("step {step}: ended before line {}", i + 1),
                }
            }
            assert!(
                matches!(r.next_line().unwrap(), Some(Line::Text(11, t)) if t == b"tail without a newline")
            );
            assert!(r.next_line().unwrap().is_none());
            assert_eq!(r.bytes, data.len() as u64);
        }
    }
}
