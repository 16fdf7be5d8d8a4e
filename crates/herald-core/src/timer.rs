//! The timer: Herald's unit of work, and its state machine.

use serde::{Deserialize, Serialize};

/// Store-assigned identifier of a timer.
pub type TimerId = i64;

/// Higher fires first among timers due at the same moment. 0..=9, default 5.
pub type Priority = u8;
pub const MAX_PRIORITY: Priority = 9;
pub const DEFAULT_PRIORITY: Priority = 5;

/// How a timer is routed when it fires, beyond its channel and recipient;
/// stored with the timer as JSON (absent for a plain timer).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Routing {
    /// The recipient is a user id: send to that subscriber's address of this
    /// channel type, read from the directory when the timer fires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<crate::reminder::ChannelType>,
    /// What the message is about, for subscribers' topic opt-outs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// Sent even in quiet hours (never past an opt-out).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub critical: bool,
    /// Held back and sent with the other timers of its digest (same
    /// recipient, channel and key) as one message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<crate::digest::Digest>,
    /// Rendered from this template when it fires; the stored message is the
    /// template's data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<crate::template::TemplateRef>,
    /// Counted against the tenant's `[[rate_limits]]` under this key (a shop
    /// id, say): over a limit, the send waits for its window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_key: Option<String>,
    /// A fallback route (the timer's channel and `to` are its current
    /// step's); empty for a timer of one channel.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub route: Vec<crate::route::Step>,
    /// The route's step the timer is at (0 for the first).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub step: u32,
    /// The step was taken because the one before was delivered and may go
    /// unread: it is sent only if no `read` receipt came for that one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub check_read: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Routing {
    /// Whether it changes anything: a plain timer stores no routing.
    pub fn is_plain(&self) -> bool {
        *self == Routing::default()
    }

    /// The text to store (`None` for a plain timer).
    pub fn stored(&self) -> Option<String> {
        if self.is_plain() {
            return None;
        }
        serde_json::to_string(self).ok()
    }

    /// The routing of the route's step `next`, and that step's channel:
    /// what a timer whose current step led there is stored with.
    pub fn at_step(&self, next: crate::route::Next) -> Option<(Routing, String)> {
        let step = self.route.get(usize::try_from(next.step).ok()?)?;
        let channel = step.channel.clone();
        let routing = Routing {
            to: Some(step.channel_type),
            step: next.step,
            check_read: next.check_read,
            ..self.clone()
        };
        Some((routing, channel))
    }

    /// The stored routing of a timer (`None` and unreadable text are plain).
    pub fn parse(stored: Option<&str>) -> Self {
        stored
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default()
    }
}

/// What created a timer; reminders and rule executions are timers too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerKind {
    /// A one-shot timer created through `POST /v1/timers`.
    Timer,
    /// One set bit of a reminder subscription: "remind user U, N minutes
    /// before subject S starts, on channel type T".
    Reminder,
    /// One recipient of a mass send (a job). Not stored as a timer: it names
    /// the kind of delivery a channel sees.
    Job,
}

impl TimerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TimerKind::Timer => "timer",
            TimerKind::Reminder => "reminder",
            TimerKind::Job => "job",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "timer" => Some(TimerKind::Timer),
            "reminder" => Some(TimerKind::Reminder),
            "job" => Some(TimerKind::Job),
            _ => None,
        }
    }
}

/// Lifecycle of a timer.
///
/// `Firing` is the state between dispatch and the written outcome. For most
/// channels it is in memory only (firing costs no store write); a channel
/// configured `in_doubt = "skip"` stores it before the send leaves, so that a
/// node that dies mid-send leaves a trace. Whoever takes the shard next ends
/// such a timer `InDoubt` (never sent again) or puts it back to `Pending`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerState {
    Pending,
    Firing,
    /// The channel acknowledged delivery.
    Done,
    /// The channel refused it permanently (e.g. a 4xx from a webhook).
    Failed,
    Cancelled,
    /// Retryable failures used up every attempt.
    Dead,
    /// Its node died while sending it on an `in_doubt = "skip"` channel: it
    /// may or may not have reached the provider, and it is not sent again.
    InDoubt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("illegal timer transition {from:?} -> {to:?}")]
pub struct TransitionError {
    pub from: TimerState,
    pub to: TimerState,
}

impl TimerState {
    pub const ALL: [TimerState; 7] = [
        TimerState::Pending,
        TimerState::Firing,
        TimerState::Done,
        TimerState::Failed,
        TimerState::Cancelled,
        TimerState::Dead,
        TimerState::InDoubt,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TimerState::Pending => "pending",
            TimerState::Firing => "firing",
            TimerState::Done => "done",
            TimerState::Failed => "failed",
            TimerState::Cancelled => "cancelled",
            TimerState::Dead => "dead",
            TimerState::InDoubt => "in_doubt",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Compact code used by stores.
    pub fn code(self) -> i64 {
        match self {
            TimerState::Pending => 0,
            TimerState::Firing => 1,
            TimerState::Done => 2,
            TimerState::Failed => 3,
            TimerState::Cancelled => 4,
            TimerState::Dead => 5,
            TimerState::InDoubt => 6,
        }
    }

    pub fn from_code(c: i64) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.code() == c)
    }

    /// No transition leaves a final state.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            TimerState::Done
                | TimerState::Failed
                | TimerState::Cancelled
                | TimerState::Dead
                | TimerState::InDoubt
        )
    }

    /// The legal moves: `pending → firing | cancelled`, `firing → done | failed | dead`,
    /// `firing → pending` when a retryable failure is scheduled again (or an
    /// in-doubt send is resolved to be sent again), and `firing → in_doubt`.
    pub fn can_become(self, to: TimerState) -> bool {
        use TimerState::*;
        matches!(
            (self, to),
            (Pending, Firing)
                | (Pending, Cancelled)
                | (Firing, Done)
                | (Firing, Failed)
                | (Firing, Dead)
                | (Firing, Pending)
                | (Firing, InDoubt)
        )
    }

    pub fn transition(self, to: TimerState) -> Result<TimerState, TransitionError> {
        if self.can_become(to) {
            Ok(to)
        } else {
            Err(TransitionError { from: self, to })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_round_trip() {
        for s in TimerState::ALL {
            assert_eq!(TimerState::from_code(s.code()), Some(s));
            assert_eq!(TimerState::parse(s.as_str()), Some(s));
        }
        assert_eq!(TimerState::from_code(99), None);
        assert_eq!(TimerKind::parse("timer"), Some(TimerKind::Timer));
    }

    #[test]
    fn only_legal_transitions() {
        use TimerState::*;
        let legal = [
            (Pending, Firing),
            (Pending, Cancelled),
            (Firing, Done),
            (Firing, Failed),
            (Firing, Dead),
            (Firing, Pending),
            (Firing, InDoubt),
        ];
        for from in TimerState::ALL {
            for to in TimerState::ALL {
                let ok = legal.contains(&(from, to));
                assert_eq!(from.can_become(to), ok, "{from:?} -> {to:?}");
                assert_eq!(from.transition(to).is_ok(), ok);
            }
        }
        for s in TimerState::ALL.into_iter().filter(|s| s.is_final()) {
            assert!(TimerState::ALL.iter().all(|&to| !s.can_become(to)));
        }
    }
}
