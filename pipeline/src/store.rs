//! The artifact store: stage outputs keyed by the hash of their inputs.
