//! `fragment` messages: splitting a frame too large for the receiver, and joining the pieces a
//! computer sends. Pure code, so the rules are unit-tested without sockets.

use std::collections::HashMap;

use super::protocol::{Message, wire};

/// Room left in each fragment frame for its envelope (`{"type":"fragment","mid":…}`).
const ENVELOPE: usize = 128;

/// Splits an encoded (ASCII) frame into `fragment` frames of at most `limit` bytes each.
/// Returns the frame itself when it already fits.
pub fn split(frame: String, mid: &str, limit: usize) -> Vec<String> {
    if frame.len() <= limit {
        return vec![frame];
    }
    // JSON escaping at most doubles an ASCII byte (`"` → `\"`), so half the room is safe.
    let chunk = (limit.saturating_sub(ENVELOPE + mid.len()) / 2).max(16);
    let bytes = frame.as_bytes();
    let count = bytes.len().div_ceil(chunk);
    bytes
        .chunks(chunk)
        .enumerate()
        .map(|(seq, piece)| {
            Message::Fragment {
                mid: mid.to_owned(),
                seq: seq as u64,
                last: seq + 1 == count,
                // The frame is ASCII (wire::encode guarantees it), so any cut is a char boundary.
                data: String::from_utf8_lossy(piece).into_owned(),
            }
            .encode()
        })
        .collect()
}

/// Why a fragment was refused. The partial message is dropped; the connection stays.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FragmentError {
    #[error("fragment {mid:?} seq {got} out of order (expected {expected})")]
    OutOfOrder {
        mid: String,
        expected: u64,
        got: u64,
    },
    #[error("fragmented message {mid:?} exceeds {limit} bytes")]
    TooLarge { mid: String, limit: usize },
    #[error("too many fragmented messages in progress (limit {0})")]
    TooMany(usize),
}

/// Reassembles fragmented messages of one connection.
#[derive(Debug)]
pub struct Reassembler {
    partial: HashMap<String, (u64, String)>,
    /// Bytes held across every partial message, bounded by `max_total` as a whole so that
    /// many half-sent messages cannot add up to more than one large one.
    held: usize,
    max_total: usize,
}

/// Messages being reassembled at once on one connection.
const MAX_PARTIAL: usize = 16;

impl Reassembler {
    pub fn new(max_total: usize) -> Self {
        Reassembler {
            partial: HashMap::new(),
            held: 0,
            max_total,
        }
    }

    /// Adds a piece; returns the whole frame text once `last` arrives.
    ///
    /// # Errors
    /// Out-of-order pieces, a message over the size limit, or too many messages in progress;
    /// the offending message is discarded.
    pub fn push(
        &mut self,
        mid: &str,
        seq: u64,
        last: bool,
        data: &str,
    ) -> Result<Option<String>, FragmentError> {
        if !self.partial.contains_key(mid) && self.partial.len() >= MAX_PARTIAL {
            return Err(FragmentError::TooMany(MAX_PARTIAL));
        }
        let (expected, buf) = self
            .partial
            .entry(mid.to_owned())
            .or_insert_with(|| (0, String::new()));
        if seq != *expected {
            let expected = *expected;
            self.drop_partial(mid);
            return Err(FragmentError::OutOfOrder {
                mid: mid.to_owned(),
                expected,
                got: seq,
            });
        }
        // The data was decoded as text; bring it back to the wire form it was cut from.
        let piece = wire::text_to_bytes(data);
        if self.held + piece.len() > self.max_total {
            self.drop_partial(mid);
            return Err(FragmentError::TooLarge {
                mid: mid.to_owned(),
                limit: self.max_total,
            });
        }
        buf.push_str(&piece);
        *expected += 1;
        self.held += piece.len();
        if last {
            Ok(self.drop_partial(mid))
        } else {
            Ok(None)
        }
    }

    /// Removes a partial message, returning its text.
    fn drop_partial(&mut self, mid: &str) -> Option<String> {
        let (_, text) = self.partial.remove(mid)?;
        self.held -= text.len();
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_then_join_gives_the_frame_back() {
        let big = Message::Output {
            id: "h-1".into(),
            stream: "out".into(),
            text: "\"quoted\" \\ é ".repeat(500),
        }
        .encode();
        let parts = split(big.clone(), "g-1", 1024);
        assert!(parts.len() > 1);
        assert!(parts.iter().all(|p| p.len() <= 1024));
        let mut r = Reassembler::new(1 << 20);
        let mut joined = None;
        for p in &parts {
            let Ok(Message::Fragment {
                mid,
                seq,
                last,
                data,
            }) = Message::decode(p)
            else {
                unreachable!("not a fragment: {p}")
            };
            joined = r.push(&mid, seq, last, &data).ok().flatten().or(joined);
        }
        assert_eq!(joined, Some(big));
    }

    #[test]
    fn small_frames_are_not_split() {
        assert_eq!(split("{}".into(), "g", 100), vec!["{}".to_owned()]);
    }

    #[test]
    fn the_limit_holds_across_messages_in_progress() {
        let mut r = Reassembler::new(10);
        assert_eq!(r.push("a", 0, false, "123456"), Ok(None));
        assert!(matches!(
            r.push("b", 0, false, "123456"),
            Err(FragmentError::TooLarge { .. })
        ));
        assert_eq!(r.push("a", 1, true, "78"), Ok(Some("12345678".into())));
        assert_eq!(
            r.push("c", 0, true, "1234567890"),
            Ok(Some("1234567890".into()))
        );
    }

    #[test]
    fn out_of_order_and_oversize_are_refused() {
        let mut r = Reassembler::new(10);
        assert!(matches!(
            r.push("a", 1, false, "x"),
            Err(FragmentError::OutOfOrder { .. })
        ));
        assert_eq!(r.push("b", 0, false, "12345"), Ok(None));
        assert!(matches!(
            r.push("b", 1, true, "678901"),
            Err(FragmentError::TooLarge { .. })
        ));
    }
}
