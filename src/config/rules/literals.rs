//! The literals a rule's regex cannot match without: the needles that let a whole
//! pack be skipped for text containing none of them. Apart from the pack loading in
//! the parent module.

use super::*;
use regex_syntax::hir::{Class, HirKind};

/// The most needles one rule contributes; a larger set is a poor filter anyway.
pub(super) const MAX_NEEDLES: usize = 64;
/// A class with at most this many characters is expanded into literals (`[dx]`, and
/// the case-folded letters of `(?i)cat`).
pub(super) const MAX_CLASS_CHARS: usize = 4;

/// Strings one of which every match of `hir` contains, or `None` when no such set is
/// found (a pattern made of classes and repetitions only). Only a filter: a candidate
/// containing one still has to match the regex.
pub(super) fn required_literals(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    if let Some(exact) = exact_literals(hir) {
        return usable(exact);
    }
    match hir.kind() {
        HirKind::Capture(capture) => required_literals(&capture.sub),
        HirKind::Repetition(rep) if rep.min >= 1 => required_literals(&rep.sub),
        HirKind::Alternation(branches) => {
            let mut all = Vec::new();
            for branch in branches {
                all.extend(required_literals(branch)?);
            }
            all.sort_unstable();
            all.dedup();
            (all.len() <= MAX_NEEDLES).then_some(all)
        }
        HirKind::Concat(parts) => {
            // Runs of consecutive exact parts are joined (`e` then `[dx]` is `ed|ex`);
            // of the sets found, the most selective wins.
            let mut best = None;
            let mut run: Option<Vec<Vec<u8>>> = None;
            for part in parts {
                if let Some(exact) = exact_literals(part) {
                    run = match run.take() {
                        None => Some(exact),
                        Some(prefix) => match cross(&prefix, &exact) {
                            Some(joined) => Some(joined),
                            None => {
                                best = more_selective(best, usable(prefix));
                                Some(exact)
                            }
                        },
                    };
                    continue;
                }
                if let Some(prefix) = run.take() {
                    best = more_selective(best, usable(prefix));
                }
                best = more_selective(best, required_literals(part));
            }
            if let Some(prefix) = run {
                best = more_selective(best, usable(prefix));
            }
            best
        }
        _ => None,
    }
}

/// The finite set of strings `hir` matches exactly, when it is small.
pub(super) fn exact_literals(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    match hir.kind() {
        // An assertion matches no text: for what a match contains it is the empty string.
        HirKind::Empty | HirKind::Look(_) => Some(vec![Vec::new()]),
        HirKind::Literal(literal) => Some(vec![literal.0.to_vec()]),
        HirKind::Class(Class::Unicode(class)) => {
            let count: usize = class
                .ranges()
                .iter()
                .map(|r| r.end() as usize - r.start() as usize + 1)
                .sum();
            (count <= MAX_CLASS_CHARS).then(|| {
                class
                    .ranges()
                    .iter()
                    .flat_map(|r| r.start()..=r.end())
                    .map(|c| c.to_string().into_bytes())
                    .collect()
            })
        }
        HirKind::Class(Class::Bytes(class)) => {
            let count: usize = class
                .ranges()
                .iter()
                .map(|r| usize::from(r.end()) - usize::from(r.start()) + 1)
                .sum();
            (count <= MAX_CLASS_CHARS).then(|| {
                class
                    .ranges()
                    .iter()
                    .flat_map(|r| r.start()..=r.end())
                    .map(|b| vec![b])
                    .collect()
            })
        }
        HirKind::Capture(capture) => exact_literals(&capture.sub),
        HirKind::Repetition(rep) => match (rep.min, rep.max) {
            (1, Some(1)) => exact_literals(&rep.sub),
            (0, Some(1)) => {
                let mut set = exact_literals(&rep.sub)?;
                set.push(Vec::new());
                Some(set)
            }
            _ => None,
        },
        HirKind::Alternation(branches) => {
            let mut all = Vec::new();
            for branch in branches {
                all.extend(exact_literals(branch)?);
                if all.len() > MAX_NEEDLES {
                    return None;
                }
            }
            all.sort_unstable();
            all.dedup();
            Some(all)
        }
        HirKind::Concat(parts) => parts
            .iter()
            .try_fold(vec![Vec::new()], |acc: Vec<Vec<u8>>, part| {
                cross(&acc, &exact_literals(part)?)
            }),
    }
}

/// Every `a` followed by every `b`, when that is at most [`MAX_NEEDLES`] strings.
pub(super) fn cross(a: &[Vec<u8>], b: &[Vec<u8>]) -> Option<Vec<Vec<u8>>> {
    if a.len().saturating_mul(b.len()) > MAX_NEEDLES {
        return None;
    }
    let mut out: Vec<Vec<u8>> = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| [x.as_slice(), y.as_slice()].concat()))
        .collect();
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// A set filters nothing when it contains the empty string.
pub(super) fn usable(set: Vec<Vec<u8>>) -> Option<Vec<Vec<u8>>> {
    (!set.is_empty() && set.iter().all(|s| !s.is_empty())).then_some(set)
}

/// The set whose shortest string is longer (fewer strings on a tie).
pub(super) fn more_selective(
    a: Option<Vec<Vec<u8>>>,
    b: Option<Vec<Vec<u8>>>,
) -> Option<Vec<Vec<u8>>> {
    let score = |set: &Vec<Vec<u8>>| {
        (
            set.iter().map(Vec::len).min().unwrap_or(0),
            std::cmp::Reverse(set.len()),
        )
    };
    match (a, b) {
        (Some(a), Some(b)) => Some(if score(&b) > score(&a) { b } else { a }),
        (a, b) => a.or(b),
    }
}
