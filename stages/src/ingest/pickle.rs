//! A strict reader of the pickles LiveCodeBench stores its private tests in.
//!
//! LiveCodeBench writes `base64(zlib(pickle.dumps(json_string)))`. The pickle of one Python
//! `str` uses only a handful of opcodes; this reader accepts exactly those and returns the
//! string. It executes nothing: any other opcode (`GLOBAL`, `REDUCE`, containers, ints …) is
//! an error, whatever it would have built.
//!
//! Accepted: `PROTO` (2–5), `FRAME`, `SHORT_BINUNICODE`, `BINUNICODE`, `BINUNICODE8`,
//! `UNICODE` (protocol 0 text form is not accepted), `MEMOIZE`, `BINPUT`, `LONG_BINPUT`, `STOP`.

use thiserror::Error;

/// Why a pickle could not be read as one string.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PickleError {
    /// The data ended before `STOP`.
    #[error("pickle truncated at byte {offset}")]
    Truncated {
        /// Where more data was needed.
        offset: usize,
    },
    /// An opcode a string pickle does not use.
    #[error(
        "pickle opcode 0x{opcode:02x} at byte {offset} is not allowed (only a single str is accepted)"
    )]
    ForbiddenOpcode {
        /// The opcode byte.
        opcode: u8,
        /// Its position.
        offset: usize,
    },
    /// A protocol this reader does not know.
    #[error("pickle protocol {0} is not supported (2–5 are)")]
    Protocol(u8),
    /// The string bytes are not UTF-8.
    #[error("pickle string at byte {offset} is not valid UTF-8")]
    Utf8 {
        /// Where the string starts.
        offset: usize,
    },
    /// `STOP` with no string, or a second string pushed.
    #[error("pickle does not hold exactly one str (stack has {0} items at STOP)")]
    NotOneString(usize),
    /// Bytes after `STOP`.
    #[error("{0} bytes after the pickle's STOP")]
    TrailingBytes(usize),
}

const PROTO: u8 = 0x80;
const FRAME: u8 = 0x95;
const SHORT_BINUNICODE: u8 = 0x8c;
const BINUNICODE: u8 = b'X';
const BINUNICODE8: u8 = 0x8d;
const MEMOIZE: u8 = 0x94;
const BINPUT: u8 = b'q';
const LONG_BINPUT: u8 = b'r';
const STOP: u8 = b'.';

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PickleError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.data.len())
            .ok_or(PickleError::Truncated { offset: self.data.len() })?;
        let slice = &self.data[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn u8(&mut self) -> Result<u8, PickleError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, PickleError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, PickleError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn string(&mut self, len: u64) -> Result<&'a str, PickleError> {
        let start = self.pos;
        let len = usize::try_from(len).map_err(|_| PickleError::Truncated { offset: start })?;
        let bytes = self.take(len)?;
        // Vectorised: a month's tests are checked here, megabytes per row (std's check was 2 %
        // of `ingest`'s CPU at 2 GB, issue #13); it accepts exactly what std accepts.
        simdutf8::basic::from_utf8(bytes).map_err(|_| PickleError::Utf8 { offset: start })
    }
}

/// Read a pickle that holds exactly one `str` and return it, borrowed from `data`.
pub fn unpickle_str(data: &[u8]) -> Result<&str, PickleError> {
    let mut cur = Cursor { data, pos: 0 };
    let mut stack: Vec<&str> = Vec::new();
    loop {
        let offset = cur.pos;
        let opcode = cur.u8()?;
        match opcode {
            PROTO => {
                let version = cur.u8()?;
                if !(2..=5).contains(&version) {
                    return Err(PickleError::Protocol(version));
                }
            }
            // A frame only tells how much to buffer; its content is read as ordinary opcodes.
            FRAME => {
                let len = cur.u64()?;
                if len > (data.len() - cur.pos) as u64 {
                    return Err(PickleError::Truncated { offset: data.len() });
                }
            }
            SHORT_BINUNICODE => {
                let len = cur.u8()?;
                stack.push(cur.string(u64::from(len))?);
            }
            BINUNICODE => {
                let len = cur.u32()?;
                stack.push(cur.string(u64::from(len))?);
            }
            BINUNICODE8 => {
                let len = cur.u64()?;
                stack.push(cur.string(len)?);
            }
            MEMOIZE => {}
            BINPUT => {
                cur.u8()?;
            }
            LONG_BINPUT => {
                cur.u32()?;
            }
            STOP => {
                if stack.len() != 1 {
                    return Err(PickleError::NotOneString(stack.len()));
                }
                let rest = data.len() - cur.pos;
                if rest != 0 {
                    return Err(PickleError::TrailingBytes(rest));
                }
                return Ok(stack.pop().unwrap_or_default());
            }
            other => {
                return Err(PickleError::ForbiddenOpcode { opcode: other, offset });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // pickle.dumps("hi", protocol=4)
    const HI: &[u8] = b"\x80\x04\x95\x06\x00\x00\x00\x00\x00\x00\x00\x8c\x02hi\x94.";

    #[test]
    fn reads_short_string() {
        assert_eq!(unpickle_str(HI).unwrap(), "hi");
    }

    #[test]
    fn reads_binunicode_and_binunicode8() {
        let mut p = b"\x80\x04X\x03\x00\x00\x00abc\x94.".to_vec();
        assert_eq!(unpickle_str(&p).unwrap(), "abc");
        p = b"\x80\x04\x8d\x02\x00\x00\x00\x00\x00\x00\x00\xc3\xa9\x94.".to_vec();
        assert_eq!(unpickle_str(&p).unwrap(), "é");
    }

    #[test]
    fn refuses_global_and_reduce() {
        // pickle of os.system('x'): starts with PROTO then a GLOBAL/STACK_GLOBAL.
        let evil = b"\x80\x04\x95\x1c\x00\x00\x00\x00\x00\x00\x00\x8c\x05posix\x94\x8c\x06system\x94\x93\x94\x8c\x01x\x94\x85\x94R\x94.";
        let err = unpickle_str(evil).unwrap_err();
        assert_eq!(err, PickleError::ForbiddenOpcode { opcode: 0x93, offset: 28 });
    }

    #[test]
    fn truncated_and_trailing() {
        assert!(matches!(unpickle_str(&HI[..HI.len() - 3]), Err(PickleError::Truncated { .. })));
        let mut long = HI.to_vec();
        long.push(0);
        assert_eq!(unpickle_str(&long), Err(PickleError::TrailingBytes(1)));
        assert_eq!(unpickle_str(b"\x80\x04."), Err(PickleError::NotOneString(0)));
        assert_eq!(unpickle_str(b"\x80\x09."), Err(PickleError::Protocol(9)));
        let bad_utf8 = b"\x80\x04\x8c\x01\xff\x94.";
        assert_eq!(unpickle_str(bad_utf8), Err(PickleError::Utf8 { offset: 4 }));
        // Long strings take the vectorised check: exactly std's verdict, wherever the fault.
        let long_str = |body: &[u8]| {
            let mut p = b"\x80\x04\x8d".to_vec();
            p.extend_from_slice(&(body.len() as u64).to_le_bytes());
            p.extend_from_slice(body);
            p.extend_from_slice(b"\x94.");
            p
        };
        let text = "1 2 3\n".repeat(100) + "é中𝄞" + &"x".repeat(100);
        assert_eq!(unpickle_str(&long_str(text.as_bytes())), Ok(text.as_str()));
        // A surrogate as Python's `surrogatepass` writes it, an overlong `/`, a cut-off character.
        for bad in [&b"\xed\xa0\x80"[..], b"\xc0\xaf", b"\xe4\xb8"] {
            for at in [0, 63, 64, 333, text.len()] {
                let mut body = text.as_bytes().to_vec();
                body.splice(at..at, bad.iter().copied());
                assert!(std::str::from_utf8(&body).is_err());
                assert_eq!(
                    unpickle_str(&long_str(&body)),
                    Err(PickleError::Utf8 { offset: 11 }),
                    "{bad:?} at {at}"
                );
            }
        }
        // A length that overflows the data must not allocate or panic.
        let huge = b"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f";
        assert!(matches!(unpickle_str(huge), Err(PickleError::Truncated { .. })));
    }
}
