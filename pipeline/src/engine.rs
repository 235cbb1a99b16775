//! The stage graph: runs stages in order, skipping those whose inputs are unchanged.
