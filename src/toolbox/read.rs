//! `read`: one page of a file's lines, numbered as `cat -n` numbers them, with the
//! offset of the next page; an image as image content; any other binary file
//! described (type and size), never dumped.
//!
//! Memory and time stay bounded whatever the file: lines are streamed through a
//! small buffer, only the page's lines are kept (each cut at [`LINE_MAX_BYTES`] with a
//! marker, the page at [`PAGE_MAX_BYTES`]), and the reading stops one byte after the
//! page — so the first page of a 1 GB file costs what a page costs. Only a page far
//! into a file reads what comes before it (line numbers need the line breaks).

use super::files::{self, OpenError};
use super::{Answer, ToolError, policy::FilePolicy};
use crate::output::notice::format_size;
use serde::Serialize;
use std::io::{BufRead, BufReader, Read};

/// Bytes of one line shown; the rest is replaced by a marker saying how much.
pub const LINE_MAX_BYTES: usize = 2000;
/// Bytes of one page; the page ends early past this, with the next offset.
pub const PAGE_MAX_BYTES: usize = 256 * 1024;
/// Largest image returned as image content; a larger one is described.
pub const IMAGE_MAX_BYTES: u64 = 5 * 1024 * 1024;
/// Bytes looked at to tell text from binary (a NUL among them means binary, as git
/// and grep decide).
const SNIFF_BYTES: usize = 8192;

/// What `read` found.
#[derive(Debug, Clone, Serialize)]
pub struct ReadOutput {
    /// The path as given.
    pub path: String,
    /// `text`, `image` or `binary`.
    pub kind: &'static str,
    /// The file's size in bytes.
    pub size: u64,
    #[serde(flatten)]
    pub page: Option<Page>,
    #[serde(flatten)]
    pub blob: Option<Blob>,
}

/// A page of a text file.
#[derive(Debug, Clone, Serialize)]
pub struct Page {
    /// The 0-based index of the first line of the page (line `offset + 1` of `cat -n`).
    pub offset: usize,
    /// How many lines the page holds.
    pub lines: usize,
    /// Where the next page starts; `null` on the last page.
    pub next_offset: Option<usize>,
    /// The file's number of lines, when the page reached its end (`null` otherwise:
    /// counting would read the whole file).
    pub total_lines: Option<usize>,
    /// The page as `cat -n` prints it: each line's number right-aligned in 6
    /// columns, a tab, the line (a long line cut with a marker).
    pub content: String,
    /// Lines of the page cut at [`LINE_MAX_BYTES`].
    pub cut_lines: usize,
}

/// An image or another binary file.
#[derive(Debug, Clone, Serialize)]
pub struct Blob {
    /// `image/png`, … for an image shown as image content; `null` otherwise.
    pub mime_type: Option<&'static str>,
    /// What the file is, in words (`PNG image`, `ELF executable`, `binary data`).
    pub description: String,
}

/// An image, base64-encoded, for the MCP image content (or rpc's `image`).
#[derive(Debug, Clone, Serialize)]
pub struct Image {
    pub mime_type: &'static str,
    pub data: String,
}

pub fn read(policy: &FilePolicy, args: super::args::ReadArgs) -> Result<Answer, ToolError> {
    let limit = args.limit.unwrap_or(super::args::READ_PAGE_LINES);
    if limit == 0 {
        return Err(ToolError::Arguments {
            tool: "read",
            message: format!(
                "`limit` must be at least 1 (omit it for {} lines, one page)",
                super::args::READ_PAGE_LINES
            ),
        });
    }
    let clamped = (limit > super::args::READ_PAGE_LINES).then_some(limit);
    let limit = limit.min(super::args::READ_PAGE_LINES);
    let offset = args.offset.unwrap_or(0);
    let at = policy.locate(&args.path).map_err(ToolError::Path)?;
    policy.check_read("read", &at)?;
    let (file, meta) = files::open_read(&at.target).map_err(|e| match e {
        OpenError::NotAFile("a directory") => ToolError::Path(format!(
            "{} is a directory: use `glob` to list its files or `grep` to search them",
            at.describe()
        )),
        e => ToolError::Path(format!("{}: {e}", at.describe())),
    })?;
    let size = meta.len();
    let mut sniff = Vec::with_capacity(SNIFF_BYTES);
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    (&mut reader)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut sniff)
        .map_err(|e| ToolError::Path(format!("{}: {e}", at.describe())))?;
    if let Some((mime, name)) = image_type(&sniff) {
        if size <= IMAGE_MAX_BYTES {
            return image(&at, mime, name);
        }
        return Ok(binary(
            &at,
            size,
            format!(
                "{name}, too large to show as an image (at most {})",
                format_size(IMAGE_MAX_BYTES)
            ),
        ));
    }
    if sniff.contains(&0) {
        return Ok(binary(&at, size, binary_type(&sniff).into()));
    }
    // Back to the start: the sniffed bytes are part of the first lines.
    let mut reader = {
        use std::io::Seek;
        let mut file = reader.into_inner();
        file.seek(std::io::SeekFrom::Start(0))
            .map_err(|e| ToolError::Path(format!("{}: {e}", at.describe())))?;
        BufReader::with_capacity(64 * 1024, file)
    };
    let page = page(&mut reader, offset, limit)
        .map_err(|e| ToolError::Path(format!("{}: {e}", at.describe())))?;
    let text = page_text(&at.shown, &page, clamped);
    let output = ReadOutput {
        path: at.shown.clone(),
        kind: "text",
        size,
        page: Some(page),
        blob: None,
    };
    Answer::new(text, &output)
}

fn image(at: &super::policy::Located, mime: &'static str, name: &str) -> Result<Answer, ToolError> {
    use base64::Engine as _;
    let (bytes, _) = files::read_all(&at.target, IMAGE_MAX_BYTES)
        .map_err(|e| ToolError::Path(format!("{}: {e}", at.describe())))?;
    let size = bytes.len() as u64;
    let description = format!("{name}, {}", format_size(size));
    let output = ReadOutput {
        path: at.shown.clone(),
        kind: "image",
        size,
        page: None,
        blob: Some(Blob {
            mime_type: Some(mime),
            description: description.clone(),
        }),
    };
    let mut answer = Answer::new(format!("{}: {description}", at.shown), &output)?;
    answer.image = Some(Image {
        mime_type: mime,
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
    });
    Ok(answer)
}

fn binary(at: &super::policy::Located, size: u64, description: String) -> Answer {
    let text = format!(
        "{}: binary file ({description}, {}); not shown. Inspect it with a tool made for it through `bash` (`file`, `xxd | head`, `unzip -l`, …).",
        at.shown,
        format_size(size)
    );
    let output = ReadOutput {
        path: at.shown.clone(),
        kind: "binary",
        size,
        page: None,
        blob: Some(Blob {
            mime_type: None,
            description,
        }),
    };
    Answer::new(text, &output).unwrap_or_else(|_| Answer::text_only(String::new()))
}

/// The page of `limit` lines from line `offset` (0-based), a UTF-8 byte-order mark
/// left out of the first line.
pub fn page(reader: &mut impl BufRead, offset: usize, limit: usize) -> std::io::Result<Page> {
    if reader.fill_buf()?.starts_with(b"\xef\xbb\xbf") {
        reader.consume(3);
    }
    let mut index = 0usize;
    let mut kept = Vec::with_capacity(LINE_MAX_BYTES + 4);
    while index < offset {
        if next_line(reader, 0, &mut kept)?.is_none() {
            return Ok(Page {
                offset,
                lines: 0,
                next_offset: None,
                total_lines: Some(index),
                content: String::new(),
                cut_lines: 0,
            });
        }
        index += 1;
    }
    let mut content = String::new();
    let (mut lines, mut cut_lines) = (0, 0);
    let mut at_end = false;
    while lines < limit && content.len() < PAGE_MAX_BYTES {
        // A few bytes past the cap, to cut on a character boundary.
        let Some(mut length) = next_line(reader, LINE_MAX_BYTES + 4, &mut kept)? else {
            at_end = true;
            break;
        };
        if kept.len() as u64 == length && kept.last() == Some(&b'\r') {
            kept.pop();
            length -= 1;
        }
        let shown = char_boundary(&kept, LINE_MAX_BYTES);
        content.push_str(&format!("{:>6}\t", index + 1));
        content.push_str(&String::from_utf8_lossy(&kept[..shown]));
        if (shown as u64) < length {
            cut_lines += 1;
            content.push_str(&format!(
                "… [line cut: {} more]",
                format_size(length - shown as u64)
            ));
        }
        content.push('\n');
        index += 1;
        lines += 1;
    }
    if !at_end {
        at_end = reader.fill_buf()?.is_empty();
    }
    Ok(Page {
        offset,
        lines,
        next_offset: (!at_end).then_some(index),
        total_lines: at_end.then_some(index),
        content,
        cut_lines,
    })
}

/// Read the next line (without its `\n`) into `kept`, keeping at most `keep` bytes;
/// returns its whole length, or `None` at the end of the file.
fn next_line(
    reader: &mut impl BufRead,
    keep: usize,
    kept: &mut Vec<u8>,
) -> std::io::Result<Option<u64>> {
    kept.clear();
    let mut length = 0u64;
    let mut any = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(any.then_some(length));
        }
        any = true;
        let (chunk, used, done) = match memchr::memchr(b'\n', buf) {
            Some(at) => (&buf[..at], at + 1, true),
            None => (buf, buf.len(), false),
        };
        let room = keep.saturating_sub(kept.len()).min(chunk.len());
        kept.extend_from_slice(&chunk[..room]);
        length += chunk.len() as u64;
        reader.consume(used);
        if done {
            return Ok(Some(length));
        }
    }
}

/// The largest `n <= max` (at most `bytes.len()`) that does not cut a UTF-8
/// character of `bytes` in two.
fn char_boundary(bytes: &[u8], max: usize) -> usize {
    if bytes.len() <= max {
        return bytes.len();
    }
    let mut n = max;
    // At most three continuation bytes end a character early.
    while n > max.saturating_sub(3) && n > 0 && (bytes[n] & 0xC0) == 0x80 {
        n -= 1;
    }
    n
}

/// What the model reads: the page, then a line saying what is left.
fn page_text(path: &str, page: &Page, clamped: Option<usize>) -> String {
    // Not `size`: a file of /proc says 0 and has lines.
    if page.lines == 0 && page.offset == 0 {
        return format!("({path} is empty)");
    }
    if page.lines == 0 {
        return format!(
            "[{path} has {}; offset {} is past the end]",
            crate::output::notice::count(page.total_lines.unwrap_or(0) as u64, "line"),
            page.offset
        );
    }
    let mut text = page.content.clone();
    let (first, last) = (page.offset + 1, page.offset + page.lines);
    let mut notes = Vec::new();
    if let Some(asked) = clamped {
        notes.push(format!(
            "limit {asked} is more than a page: showing at most {} lines",
            super::args::READ_PAGE_LINES
        ));
    }
    if page.cut_lines > 0 {
        notes.push(format!(
            "{} cut at {} (marked \"line cut\")",
            crate::output::notice::count(page.cut_lines as u64, "long line"),
            format_size(LINE_MAX_BYTES as u64)
        ));
    }
    if let Some(next) = page.next_offset {
        let why = if text.len() >= PAGE_MAX_BYTES && page.lines < super::args::READ_PAGE_LINES {
            format!(
                " (the page stopped at {})",
                format_size(PAGE_MAX_BYTES as u64)
            )
        } else {
            String::new()
        };
        notes.push(format!(
            "Lines {first}-{last}{why}; more follow. Next: offset={next}"
        ));
    }
    if !notes.is_empty() {
        text.push_str(&format!("[{}]", notes.join(". ")));
    }
    text
}

/// An image format the MCP image content carries, by its magic bytes.
fn image_type(head: &[u8]) -> Option<(&'static str, &'static str)> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(("image/png", "PNG image"))
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some(("image/jpeg", "JPEG image"))
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some(("image/gif", "GIF image"))
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some(("image/webp", "WebP image"))
    } else {
        None
    }
}

/// What a binary file is, by its magic bytes.
fn binary_type(head: &[u8]) -> &'static str {
    const MAGIC: &[(usize, &[u8], &str)] = &[
        (0, b"\x7fELF", "ELF executable or library"),
        (0, b"%PDF-", "PDF document"),
        (
            0,
            b"PK\x03\x04",
            "ZIP archive (also jar, docx, xlsx, apk, whl)",
        ),
        (0, b"\x1f\x8b", "gzip compressed data"),
        (0, b"BZh", "bzip2 compressed data"),
        (0, b"\xfd7zXZ\x00", "xz compressed data"),
        (0, b"\x28\xb5\x2f\xfd", "zstd compressed data"),
        (0, b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
        (257, b"ustar", "tar archive"),
        (0, b"SQLite format 3\x00", "SQLite database"),
        (0, b"\x00asm", "WebAssembly module"),
        (
            0,
            b"\xca\xfe\xba\xbe",
            "Java class or Mach-O universal binary",
        ),
        (0, b"\xcf\xfa\xed\xfe", "Mach-O executable"),
        (0, b"MZ", "Windows executable (PE)"),
        (0, b"BM", "BMP image"),
        (0, b"\x00\x00\x01\x00", "ICO icon"),
        (0, b"II*\x00", "TIFF image"),
        (0, b"MM\x00*", "TIFF image"),
        (0, b"ID3", "MP3 audio"),
        (0, b"OggS", "Ogg media"),
        (0, b"fLaC", "FLAC audio"),
        (0, b"wOFF", "WOFF font"),
        (0, b"wOF2", "WOFF2 font"),
        (0, b"\x00\x01\x00\x00\x00", "TrueType font"),
        (0, b"OTTO", "OpenType font"),
        (0, b"\xff\xfe", "UTF-16 text (little-endian)"),
        (0, b"\xfe\xff", "UTF-16 text (big-endian)"),
    ];
    if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WAVE" {
        return "WAVE audio";
    }
    if head.len() >= 12 && &head[4..8] == b"ftyp" {
        return "MP4/QuickTime media";
    }
    MAGIC
        .iter()
        .find(|(at, magic, _)| head.get(*at..).is_some_and(|h| h.starts_with(magic)))
        .map_or("binary data", |(_, _, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page_of(text: &[u8], offset: usize, limit: usize) -> Page {
        page(&mut std::io::Cursor::new(text.to_vec()), offset, limit).expect("reads")
    }

    #[test]
    fn pages_are_numbered_from_one_and_say_what_follows() {
        let text = b"a\nb\nc\nd\n";
        let p = page_of(text, 0, 2);
        assert_eq!(p.content, "     1\ta\n     2\tb\n");
        assert_eq!((p.lines, p.next_offset, p.total_lines), (2, Some(2), None));
        let p = page_of(text, 2, 2);
        assert_eq!(p.content, "     3\tc\n     4\td\n");
        assert_eq!((p.next_offset, p.total_lines), (None, Some(4)));
        let p = page_of(text, 9, 2);
        assert_eq!((p.lines, p.total_lines), (0, Some(4)));
        // No final newline: the last line still counts.
        let p = page_of(b"x\r\ny", 0, 10);
        assert_eq!(p.content, "     1\tx\n     2\ty\n");
        assert_eq!(p.total_lines, Some(2));
        // A byte-order mark is not part of line 1.
        assert_eq!(page_of(b"\xef\xbb\xbfhi\n", 0, 1).content, "     1\thi\n");
    }

    #[test]
    fn long_lines_are_cut_on_a_character_with_a_marker() {
        let mut text = "é".repeat(LINE_MAX_BYTES).into_bytes();
        text.extend_from_slice(b"\nnext\n");
        let p = page_of(&text, 0, 5);
        assert_eq!(p.cut_lines, 1);
        let first = p.content.lines().next().unwrap_or_default();
        assert!(first.ends_with("… [line cut: 2.0KB more]"), "{first:.60}");
        assert!(!first.contains('\u{fffd}'), "a character cut in two");
        assert!(p.content.contains("     2\tnext\n"));
    }

    #[test]
    fn images_and_binaries_are_told_by_their_magic() {
        assert_eq!(
            image_type(b"\x89PNG\r\n\x1a\nrest").map(|t| t.0),
            Some("image/png")
        );
        assert_eq!(
            image_type(b"RIFF\0\0\0\0WEBPVP8 ").map(|t| t.0),
            Some("image/webp")
        );
        assert_eq!(image_type(b"hello"), None);
        assert_eq!(binary_type(b"\x7fELF\x02\x01"), "ELF executable or library");
        assert_eq!(binary_type(b"\0\0\0\x01"), "binary data");
    }
}
