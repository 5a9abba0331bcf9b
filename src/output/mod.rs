//! Output: sanitizing, retention, redaction, artifacts and notices .

pub mod artifact;
pub mod notice;
pub mod redact;
pub mod sanitize;
pub mod sink;
