//! Progress notifications: the newest output of a running call, bounded, buffered on
//! the blocking thread and forwarded to the client while the command runs.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::Notify;

use super::PROGRESS_MESSAGE_MAX_BYTES;

/// Output waiting to be sent as progress, filled on the blocking thread and emptied by
/// [`forward_progress`]. Bounded: only the newest output is kept between sends.
#[derive(Default)]
pub(super) struct ProgressBuffer {
    state: Mutex<ProgressState>,
    wake: Notify,
}

#[derive(Default)]
pub(super) struct ProgressState {
    pending: String,
    /// Bytes of output seen so far: the progress value (it only grows).
    total_bytes: u64,
    finished: bool,
}

impl ProgressBuffer {
    pub(super) fn push(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.pending.push_str(text);
            state.total_bytes = state.total_bytes.saturating_add(text.len() as u64);
            keep_tail(&mut state.pending, PROGRESS_MESSAGE_MAX_BYTES);
        }
        self.wake.notify_one();
    }

    pub(super) fn finish(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finished = true;
        self.wake.notify_one();
    }

    pub(super) fn take(&self) -> (String, u64, bool) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        (
            std::mem::take(&mut state.pending),
            state.total_bytes,
            state.finished,
        )
    }
}

/// Drop the front of `text` so that it is at most about `max` bytes, on a char boundary,
/// marking the cut.
pub(super) fn keep_tail(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut cut = text.len() - max;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    text.replace_range(..cut, "…");
}

pub(super) async fn forward_progress(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    buffer: Arc<ProgressBuffer>,
) {
    loop {
        buffer.wake.notified().await;
        let (message, total_bytes, finished) = buffer.take();
        if !message.is_empty() {
            // Precision loss past 2^53 bytes is harmless: the value only has to grow.
            let progress = total_bytes as f64;
            let notification =
                ProgressNotificationParam::new(token.clone(), progress).with_message(message);
            if let Err(error) = peer.notify_progress(notification).await {
                eprintln!("agentbash mcp: cannot send progress: {error}");
                return;
            }
        }
        if finished {
            return;
        }
    }
}
