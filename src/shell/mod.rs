//! The shell: which one runs a command and with what argv (`resolve`), its hardened
//! environment (`env`), the rc snapshot, sessions and the state stage that joins them
//! (`snapshot`, `session`, `state`, with the shared `store` and the `dump` parser).

pub mod dump;
pub mod env;
pub mod parse;
pub mod resolve;
pub mod session;
pub mod snapshot;
pub mod state;
pub mod store;
