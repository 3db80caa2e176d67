//! What a request printed so far, as the host saw it arrive live: the head and the tail of it
//! (the end is what a reader most needs after a failure), and the true totals.
//!
//! A request that fails without an answer (timeout, disconnect, cancel before the computer
//! answered, shutdown) has no Result from the computer to carry its output, so the host hands
//! this to the requester instead.

/// Bytes kept of the head and of the tail each.
const KEEP: usize = 32 * 1024;

/// Live output of one request: head and tail kept, everything counted.
#[derive(Debug, Default, Clone)]
pub struct Captured {
    head: String,
    tail: String,
    /// Bytes received in all.
    bytes: usize,
    /// Newlines received in all.
    newlines: usize,
    /// Whether the last byte received was a newline (an open last line counts as a line).
    ends_open: bool,
}

impl Captured {
    pub fn push(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.bytes += text.len();
        self.newlines += text.bytes().filter(|b| *b == b'\n').count();
        self.ends_open = !text.ends_with('\n');
        let room = KEEP.saturating_sub(self.head.len());
        let (into_head, rest) = split_at_most(text, room);
        self.head.push_str(into_head);
        if rest.is_empty() {
            return;
        }
        self.tail.push_str(rest);
        if self.tail.len() > 2 * KEEP {
            let mut start = self.tail.len() - KEEP;
            while !self.tail.is_char_boundary(start) {
                start += 1;
            }
            self.tail.drain(..start);
        }
    }

    /// Bytes received.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Lines received (an unfinished last line counts).
    pub fn lines(&self) -> usize {
        self.newlines + usize::from(self.bytes > 0 && self.ends_open)
    }

    /// Nothing was received.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The text: all of it when it fit, else head, a marker saying how many bytes are left
    /// out, and tail.
    pub fn text(&self) -> String {
        let tail = if self.tail.len() > KEEP {
            let mut start = self.tail.len() - KEEP;
            while !self.tail.is_char_boundary(start) {
                start += 1;
            }
            &self.tail[start..]
        } else {
            self.tail.as_str()
        };
        let cut = self.bytes - self.head.len() - tail.len();
        if cut == 0 {
            return format!("{}{tail}", self.head);
        }
        format!("{}{}{tail}", self.head, cut_marker(cut))
    }

    /// Bytes of the text that are output (the marker excluded).
    pub fn kept(&self) -> usize {
        self.head.len() + self.tail.len().min(KEEP)
    }
}

/// The marker put where output was left out; the MCP endpoint replaces it with one that says
/// how to read the rest (see `mcp::results`). The same words as the Lua client's marker.
pub fn cut_marker(cut: usize) -> String {
    format!("\n[… trapdesk cut {cut} bytes of output here …]\n")
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary, and
/// the rest.
fn split_at_most(text: &str, max: usize) -> (&str, &str) {
    if text.len() <= max {
        return (text, "");
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.split_at(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole_and_counted() {
        let mut c = Captured::default();
        c.push("start\n");
        c.push("mid");
        assert_eq!(c.text(), "start\nmid");
        assert_eq!((c.bytes(), c.lines()), (9, 2));
    }

    #[test]
    fn large_output_keeps_head_and_tail_with_true_totals() {
        let mut c = Captured::default();
        for i in 1..=10_000 {
            c.push(&format!("line {i}\n"));
        }
        let text = c.text();
        assert!(text.starts_with("line 1\nline 2\n"));
        assert!(text.ends_with("line 9999\nline 10000\n"));
        assert_eq!(c.lines(), 10_000);
        let total: usize = (1..=10_000).map(|i| format!("line {i}\n").len()).sum();
        assert_eq!(c.bytes(), total);
        let cut = total - c.kept();
        assert!(text.contains(&cut_marker(cut)), "{cut}");
        assert_eq!(text.len(), c.kept() + cut_marker(cut).len());
    }
}
