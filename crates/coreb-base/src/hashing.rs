//! sha256 helpers: hex digests of bytes, files and canonical JSON.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Hex sha256 of a byte slice.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Hex sha256 of a file, streamed in 1 MiB blocks.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut reader = HashingReader::new(fs_err::File::open(path)?);
    let mut buf = vec![0u8; 1 << 20];
    while reader.read(&mut buf)? > 0 {}
    Ok(reader.finish().0)
}

/// A reader that hashes every byte read through it: a file is hashed by whoever reads it,
/// without a second pass.
pub struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R: Read> HashingReader<R> {
    /// Wrap `inner`.
    pub fn new(inner: R) -> Self {
        HashingReader { inner, hasher: Sha256::new(), bytes: 0 }
    }

    /// The hex sha256 and length of what was read so far (the whole input once it is at its end).
    pub fn finish(self) -> (String, u64) {
        (hex::encode(self.hasher.finalize()), self.bytes)
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Is `s` a 64-digit lowercase or uppercase hex sha256?
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hashing_reader_gives_the_file_hash_of_what_it_read() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut reader = HashingReader::new(std::io::BufReader::with_capacity(4096, &data[..]));
        let mut out = Vec::new();
        // Small, uneven reads: the digest must not depend on how the bytes were asked for.
        let mut buf = [0u8; 1000];
        loop {
            let n = reader.read(&mut buf[..777]).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        assert_eq!(out, data);
        assert_eq!(reader.finish(), (sha256_hex(&data), data.len() as u64));
        let mut half = HashingReader::new(&data[..]);
        let mut first = vec![0u8; 100];
        half.read_exact(&mut first).unwrap();
        assert_eq!(half.finish(), (sha256_hex(&data[..100]), 100));
    }

    #[test]
    fn known_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(is_sha256_hex(&sha256_hex(b"")));
        assert!(!is_sha256_hex("abc"));
    }
}
