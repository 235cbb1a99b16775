//! Rendering errors for reports: one line with every cause, for places that keep an error as
//! text (a retry reason, an invalid store entry) rather than as a value.

/// An error in how a command was called (exit 2): a wrong argument, a manifest that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// Return early with a [`Usage`] error (exit 2): `usage!("`--k`: must be positive")` in a
/// function returning `anyhow::Result`, for a value checked after the command line parsed.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => {
        return ::core::result::Result::Err($crate::errors::Usage(format!($($arg)*)).into())
    };
}

/// `e` and its chain of sources, joined with `: `.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(inner) = cur {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        cur = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn joins_causes() {
        #[derive(Debug, thiserror::Error)]
        #[error("reading `x`")]
        struct Wrap(#[source] std::io::Error);
        #[derive(Debug, thiserror::Error)]
        #[error("stage `ingest`")]
        struct Outer(#[source] Wrap);
        assert_eq!(super::chain(&std::io::Error::other("gone")), "gone");
        assert_eq!(
            super::chain(&Outer(Wrap(std::io::Error::other("gone")))),
            "stage `ingest`: reading `x`: gone"
        );
    }
}
