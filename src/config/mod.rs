//! Configuration: profiles (lookup, layering, schema and validation), rule packs, and
//! which project directories are trusted to supply them.

pub mod approval;
pub mod kill_key;
pub mod profile;
pub mod rules;
pub mod schema;
pub mod trust;
