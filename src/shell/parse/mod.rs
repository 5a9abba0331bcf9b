//! One shell parser for every stage that reads commands (docs/parser.md): normalize's
//! `| head`/`| tail` lift, the interceptor's candidates and the guard's targets all
//! come from the same syntax tree, so they never disagree about where a command
//! starts or what its words are.
//!
//! - [`parser`] turns text into the [`ast`]: bash's grammar, with lists, pipelines,
//!   compound commands, functions, redirections, heredocs and words that keep their
//!   quoting and expansions.
//! - [`walk`] follows the tree as bash would run it and yields every simple command
//!   with its words resolved ([`expand`], in a [`scope`]) and its wrappers removed
//!   ([`wrappers`], read with [`options`]); [`render`] writes one back as the
//!   canonical line `deny` rules match.

pub mod ast;
pub mod expand;
pub mod glob;
pub mod options;
pub mod parser;
pub mod render;
pub mod scope;
pub mod walk;
pub mod wrappers;

pub use expand::Field;
pub use parser::{ErrorKind, MAX_DEPTH, ParseError, Parsed, parse, parse_lines};
pub use walk::{
    Context, Hidden, Origin, Redirection, Runner, SimpleCommand, Unparsed, Walk, program_name,
    walk, walk_after, walk_with,
};

#[cfg(test)]
mod tests;
